"""The keyword matches take one of two paths: across the caller's whole scope a statement planned
once and kept (as migrations 0014–0017 did), for some spaces of many a statement planned on each
call with its values (0019).

Measured at 1M memories after 0019 (a hub of one space; 200 new queries, the service under the
policies): planning every call cost the common case 0.5–1 ms at p50 and ~4 ms at p95 against the
kept plan, which serves it well — every row is in scope, so the words alone select. Intersecting
words and spaces (``by_space``) needs the values: a kept plan cannot tell one space of ten from
nine, and read one space's matches in 50–250 ms instead of 5–20.
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
    IF by_space THEN
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
        USING query && memories_spaces_query(ids), ids, exclude, kind, level, wanted, cap;
    ELSE
        RETURN QUERY
            SELECT m.id, m.search_vector, m.embedding, m.tier, m.last_hit_at, m.created_at
            FROM memories_memory m
            WHERE m.status = 'active'
              AND (m.search_vector || memories_space_lexeme(m.space_id)) @@ query
              AND m.space_id + 0 = ANY (ids)
              AND (exclude IS NULL OR NOT m.search_vector @@ exclude)
              AND (kind IS NULL OR m.memory_type = kind)
              AND (level IS NULL OR m.tier = level)
              AND (wanted IS NULL OR m.tags @> wanted)
            LIMIT cap;
    END IF;
END
$$;
"""

# Going back: the function of migration 0019.
BACKWARD = import_module("memories.migrations.0019_keyword_matches_planned_per_call").FUNCTION


class Migration(migrations.Migration):
    dependencies = [("memories", "0022_space_statistics")]

    operations = [migrations.RunSQL(FUNCTION, BACKWARD)]
