"""The full-text index knows each memory's space, so the keyword side of a search in a few
spaces reads only their matches.

The GIN index was on ``search_vector`` alone: a search in one space of ten fetched every match
of the whole hub and then dropped nine in ten (ten times the work at 100k memories over ten
spaces). It is now on ``search_vector || memories_space_lexeme(space_id)``: each memory's words
plus one lexeme naming its space (``§<id>``; the text parser never makes a lexeme with ``§``,
so none of a memory's words can be taken for it). A query for words *and* spaces,
``words && memories_spaces_query(spaces)``, is then one intersection inside the index.
Nothing else reads the extra lexeme: the keyword counts and the ranking read ``search_vector``.

``memories_keyword_matches`` (migration 0014) asks the index so, for the spaces the session
reads; the hub's upkeep, which reads every space, asks it for the words alone.
"""

from importlib import import_module

from django.db import migrations

# The function as migration 0014 made it, for going back.
_FUNCTION_0014 = import_module("memories.migrations.0014_keyword_matches").FUNCTION

FUNCTION = """
CREATE OR REPLACE FUNCTION memories_keyword_matches(
    query tsquery, exclude tsquery, cap integer, spaces bigint[], kind text, level text, wanted varchar[]
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
      AND (m.search_vector || memories_space_lexeme(m.space_id)) @@ (query && memories_spaces_query(r.ids))
      AND m.space_id = ANY (r.ids)
      AND (exclude IS NULL OR NOT m.search_vector @@ exclude)
      AND (kind IS NULL OR m.memory_type = kind)
      AND (level IS NULL OR m.tier = level)
      AND (wanted IS NULL OR m.tags @> wanted)
    LIMIT cap
$$;
"""

FORWARD = """
CREATE OR REPLACE FUNCTION memories_space_lexeme(space bigint) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT array_to_tsvector(ARRAY['§' || space::text]) $$;

CREATE OR REPLACE FUNCTION memories_spaces_query(spaces bigint[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(string_agg(quote_literal('§' || s::text), ' | '), '''§none''')::tsquery FROM unnest(spaces) s
$$;

DROP INDEX IF EXISTS memory_fts_active;
CREATE INDEX memory_fts_space_active ON memories_memory
    USING gin ((search_vector || memories_space_lexeme(space_id))) WITH (fastupdate = off)
    WHERE status = 'active';

""" + FUNCTION

BACKWARD = _FUNCTION_0014 + """
DROP INDEX IF EXISTS memory_fts_space_active;
CREATE INDEX memory_fts_active ON memories_memory USING gin (search_vector) WITH (fastupdate = off)
    WHERE status = 'active';
DROP FUNCTION IF EXISTS memories_spaces_query(bigint[]);
DROP FUNCTION IF EXISTS memories_space_lexeme(bigint);
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0014_keyword_matches")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, BACKWARD)],
            # The index is on an expression of a function this migration makes: it lives here,
            # not in the model's Meta.
            state_operations=[migrations.RemoveIndex(model_name="memory", name="memory_fts_active")],
        ),
    ]
