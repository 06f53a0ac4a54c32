"""How many active memories the whole hub holds, for the keyword side's choices.

The keyword side compares a word's count in the searched spaces with the hub's size (the index's
posting lists are the hub's). Migration 0015 read that size from the full-text index's
statistics, but a GIN index counts its entries, not its rows (2.7 entries a memory at 1M), so a
hub of one space looked three times its size and searched its one space as if it were a third
of the hub. ``memories_active_total`` sums the keyword counts' per-space totals (the rows with
the empty lexeme) past the spaces' policies: one number, never a row of any space.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION memories_active_total() RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT COALESCE(sum(memories), 0)::bigint FROM memories_lexemecount WHERE lexeme = ''
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0017_keyword_matches_by_space_choice")]

    operations = [migrations.RunSQL(FUNCTION, "DROP FUNCTION IF EXISTS memories_active_total();")]
