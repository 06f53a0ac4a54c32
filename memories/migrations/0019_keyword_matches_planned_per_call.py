"""The keyword matches are read by a statement planned for each call's own words and spaces.

Migrations 0014–0017 wrote ``memories_keyword_matches`` in SQL: PostgreSQL plans a SQL function's
statement without its arguments' values, so the plan could not tell a rare word from a common one
nor one space of ten from all of them (the same query took 50–250 ms through the function and
5–30 ms written out, 1M memories in ten spaces). In PL/pgSQL with ``EXECUTE … USING`` the statement
is planned on every call with the values in hand. The spaces are checked as ``space_id + 0``: with
the values known, the planner would otherwise AND the word matches with the ``space_id`` index's
entries for the whole scope (a hundred thousand per space) before reading a row.

The read policy's condition is still applied from the session's scope, never from an argument;
``spaces`` only narrows it.
"""

from importlib import import_module

from django.db import migrations

FUNCTION = """
DROP FUNCTION IF EXISTS memories_keyword_matches(tsquery, tsquery, integer, bigint[], text, text, varchar[], boolean);

CREATE FUNCTION memories_keyword_matches(
    query tsquery, exclude tsquery, cap integer, spaces bigint[], kind text, level text, wanted varchar[],
    by_space boolean
) RETURNS TABLE (
    id uuid, search_vector tsvector, embedding vector, tier varchar, last_hit_at timestamptz, created_at timestamptz
) LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    readable bigint[] := string_to_array(current_setting('ultron.read_spaces', true), ',')::bigint[];
    ids bigint[];
BEGIN
    ids := ARRAY(SELECT unnest(readable) INTERSECT SELECT unnest(COALESCE(spaces, readable)));
    RETURN QUERY EXECUTE
        'SELECT m.id, m.search_vector, m.embedding, m.tier, m.last_hit_at, m.created_at
         FROM memories_memory m
         WHERE m.status = ''active''
           AND (m.search_vector || memories_space_lexeme(m.space_id)) @@ $1
           AND m.space_id + 0 = ANY ($2)
           AND ($3 IS NULL OR NOT m.search_vector @@ $3)
           AND ($4 IS NULL OR m.memory_type = $4)
           AND ($5 IS NULL OR m.tier = $5)
           AND ($6 IS NULL OR m.tags @> $6)
         LIMIT $7'
    USING CASE WHEN by_space THEN query && memories_spaces_query(ids) ELSE query END,
          ids, exclude, kind, level, wanted, cap;
END
$$;
"""

# Going back: the SQL function of migration 0017.
BACKWARD = import_module("memories.migrations.0017_keyword_matches_by_space_choice").FUNCTION


class Migration(migrations.Migration):
    dependencies = [("memories", "0018_active_total")]

    operations = [migrations.RunSQL(FUNCTION, BACKWARD)]
