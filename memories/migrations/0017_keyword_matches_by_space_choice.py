"""The keyword side asks the index for the searched spaces only when they are a small part of
the hub (``by_space``, decided by the caller from the keyword counts).

Migration 0015 always intersected the words with the spaces' lexemes inside the index. For a
search in one space of ten that reads a tenth of the matches; for a search in every space (a
caller reading all ten) the spaces' lexemes are as long as the table, and intersecting with them
cost more than the whole search (1M memories: API hybrid p95 177 ms instead of ~45). Without
``by_space`` the matches are read by their words alone and the spaces checked on each.
"""

from importlib import import_module

from django.db import migrations

FUNCTION = """
DROP FUNCTION IF EXISTS memories_keyword_matches(tsquery, tsquery, integer, bigint[], text, text, varchar[]);

CREATE OR REPLACE FUNCTION memories_keyword_matches(
    query tsquery, exclude tsquery, cap integer, spaces bigint[], kind text, level text, wanted varchar[],
    by_space boolean
) RETURNS TABLE (
    id uuid, search_vector tsvector, embedding vector, tier varchar, last_hit_at timestamptz, created_at timestamptz
) LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH readable AS (
        SELECT ARRAY(
            SELECT unnest(string_to_array(current_setting('ultron.read_spaces', true), ',')::bigint[])
            INTERSECT SELECT unnest(COALESCE(spaces, string_to_array(current_setting('ultron.read_spaces', true), ',')::bigint[]))
        ) AS ids
    )
    SELECT m.id, m.search_vector, m.embedding, m.tier, m.last_hit_at, m.created_at
    FROM memories_memory m, readable r
    WHERE m.status = 'active'
      AND (m.search_vector || memories_space_lexeme(m.space_id))
          @@ CASE WHEN by_space THEN query && memories_spaces_query(r.ids) ELSE query END
      AND m.space_id = ANY (r.ids)
      AND (exclude IS NULL OR NOT m.search_vector @@ exclude)
      AND (kind IS NULL OR m.memory_type = kind)
      AND (level IS NULL OR m.tier = level)
      AND (wanted IS NULL OR m.tags @> wanted)
    LIMIT cap
$$;
"""

# Going back: the function as migration 0015 made it.
BACKWARD = ("DROP FUNCTION IF EXISTS memories_keyword_matches(tsquery, tsquery, integer, bigint[], text, text, "
            "varchar[], boolean);" + import_module("memories.migrations.0015_keyword_index_by_space").FUNCTION)


class Migration(migrations.Migration):
    dependencies = [("memories", "0016_supersession")]

    operations = [migrations.RunSQL(FUNCTION, BACKWARD)]
