"""Every memory table gets its space (existing rows: ``shared``) and row-level security
(``core/spaces.py``). The keyword counts and the rank table are kept per space by their
triggers, which now run as the tables' owner (SECURITY DEFINER): they write bookkeeping rows
derived from a memory row the caller was allowed to change, whatever the caller's own rights
on those tables (a reader's search records hits, and the rank row follows)."""

from django.db import migrations, models

from agents.migration_ops import space_field

_DEFINER = "SECURITY DEFINER SET search_path = public, pg_temp"

_PIECES = """
    INSERT INTO memories_lexemecount (space_id, lexeme, memories)
    SELECT space_id, lexeme, {sign} count(*) FROM (
        SELECT space_id, unnest(tsvector_to_array(search_vector)) AS lexeme FROM {rows} WHERE status = 'active'
        UNION ALL SELECT space_id, '' FROM {rows} WHERE status = 'active'
    ) pieces GROUP BY space_id, lexeme;
"""

TRIGGERS = f"""
CREATE OR REPLACE FUNCTION memories_lexemes_inserted() RETURNS trigger LANGUAGE plpgsql {_DEFINER} AS $$
BEGIN
{_PIECES.format(sign="", rows="added")}
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_lexemes_deleted() RETURNS trigger LANGUAGE plpgsql {_DEFINER} AS $$
BEGIN
{_PIECES.format(sign="-", rows="removed")}
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_lexemes_updated() RETURNS trigger LANGUAGE plpgsql {_DEFINER} AS $$
BEGIN
    INSERT INTO memories_lexemecount (space_id, lexeme, memories)
    SELECT space_id, lexeme, sum(delta) FROM (
        SELECT OLD.space_id AS space_id, unnest(tsvector_to_array(OLD.search_vector)) AS lexeme, -1 AS delta
            WHERE OLD.status = 'active'
        UNION ALL SELECT OLD.space_id, '', -1 WHERE OLD.status = 'active'
        UNION ALL SELECT NEW.space_id, unnest(tsvector_to_array(NEW.search_vector)), 1 WHERE NEW.status = 'active'
        UNION ALL SELECT NEW.space_id, '', 1 WHERE NEW.status = 'active'
    ) pieces GROUP BY space_id, lexeme HAVING sum(delta) <> 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_lexemes_truncated() RETURNS trigger LANGUAGE plpgsql {_DEFINER} AS $$
BEGIN
    DELETE FROM memories_lexemecount;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_ranks_inserted() RETURNS trigger LANGUAGE plpgsql {_DEFINER} AS $$
BEGIN
    INSERT INTO memories_memoryrank (memory_id, space_id, hit_count, seen, created_at, tier)
    SELECT id, space_id, hit_count, COALESCE(last_hit_at, created_at), created_at, tier
    FROM added WHERE status = 'active';
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_ranks_updated() RETURNS trigger LANGUAGE plpgsql {_DEFINER} AS $$
BEGIN
    IF NEW.status = 'active' THEN
        INSERT INTO memories_memoryrank (memory_id, space_id, hit_count, seen, created_at, tier)
        VALUES (NEW.id, NEW.space_id, NEW.hit_count, COALESCE(NEW.last_hit_at, NEW.created_at), NEW.created_at, NEW.tier)
        ON CONFLICT (memory_id) DO UPDATE SET
            space_id = EXCLUDED.space_id, hit_count = EXCLUDED.hit_count, seen = EXCLUDED.seen,
            created_at = EXCLUDED.created_at, tier = EXCLUDED.tier;
    ELSIF OLD.status = 'active' THEN
        DELETE FROM memories_memoryrank WHERE memory_id = NEW.id;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_ranks_deleted() RETURNS trigger LANGUAGE plpgsql {_DEFINER} AS $$
BEGIN
    DELETE FROM memories_memoryrank r USING removed WHERE r.memory_id = removed.id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_ranks_truncated() RETURNS trigger LANGUAGE plpgsql {_DEFINER} AS $$
BEGIN
    DELETE FROM memories_memoryrank;
    RETURN NULL;
END $$;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0003_spaces'),
        ('memories', '0012_embedding_calibration'),
    ]

    operations = [
        space_field('lexemecount', 'memories_lexemecount', constraint=False),
        space_field('memory', 'memories_memory'),
        space_field('memorycontribution', 'memories_memorycontribution'),
        space_field('memoryedit', 'memories_memoryedit'),
        space_field('memoryrank', 'memories_memoryrank', constraint=False),
        space_field('mergecandidate', 'memories_mergecandidate'),
        space_field('tiersnapshot', 'memories_tiersnapshot'),
        migrations.AlterField(
            model_name='tiersnapshot',
            name='day',
            field=models.DateField(),
        ),
        migrations.AddConstraint(
            model_name='tiersnapshot',
            constraint=models.UniqueConstraint(fields=('space', 'day'), name='tier_snapshot_space_day'),
        ),
        # The previous functions (migrations 0008 and 0010) are left for a reverse migration to
        # the column-less tables: it drops the column, and the next forward run replaces them again.
        migrations.RunSQL(TRIGGERS, migrations.RunSQL.noop),
    ]
