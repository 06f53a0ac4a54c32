"""The keyword side of search as a function that reads the GIN index under the spaces' policies.

Row-level security's policies are security-barrier conditions: a query's own condition may be
checked before them only when its function is LEAKPROOF, and full text's ``@@`` (like the tags'
``@>``) is not. So for the hub's role the planner could not let the GIN index on ``search_vector``
pick the keyword matches, and tested ``@@`` on every readable row (ten times slower at 100k).

``memories_keyword_matches`` runs as the tables' owner (SECURITY DEFINER), where the index
serves, and applies the read policy's own condition itself: the active memories of the spaces
the session reads (``ultron.read_spaces``, the setting the policies read) that match ``query``
and not ``exclude``, within the filters, at most ``cap`` of them. The caller cannot widen it: the
spaces come from the session, never from an argument (``spaces`` only narrows). The search
statement joins what it ranks back to the table under the policies, so the database still
checks every row it returns.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION memories_keyword_matches(
    query tsquery, exclude tsquery, cap integer, spaces bigint[], kind text, level text, wanted varchar[]
) RETURNS TABLE (
    id uuid, search_vector tsvector, embedding vector, tier varchar, last_hit_at timestamptz, created_at timestamptz
) LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT m.id, m.search_vector, m.embedding, m.tier, m.last_hit_at, m.created_at
    FROM memories_memory m
    WHERE m.status = 'active'
      AND m.search_vector @@ query
      AND m.space_id = ANY (string_to_array(current_setting('ultron.read_spaces', true), ',')::bigint[])
      AND (exclude IS NULL OR NOT m.search_vector @@ exclude)
      AND (spaces IS NULL OR m.space_id = ANY (spaces))
      AND (kind IS NULL OR m.memory_type = kind)
      AND (level IS NULL OR m.tier = level)
      AND (wanted IS NULL OR m.tags @> wanted)
    LIMIT cap
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0013_spaces")]

    operations = [
        migrations.RunSQL(
            FUNCTION,
            "DROP FUNCTION IF EXISTS memories_keyword_matches(tsquery, tsquery, integer, bigint[], text, text, varchar[]);",
        ),
    ]
