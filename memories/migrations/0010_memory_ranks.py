"""The rank columns of active memories in a narrow table of their own (memories.models.MemoryRank),
kept by triggers on the memories table: a statement trigger for inserts (a bulk load is copied
in one statement), a row trigger for the updates that change a rank column or the status (the
WHEN clause skips edits of the text without calling anything; the tier rebalance, which writes
both tables itself, sets ``ultron.ranks_written`` for its transaction), a statement trigger for
deletes, a truncate trigger, and the ranks of the memories already stored. Idempotent
(functions replaced, triggers dropped first), as migration 0008 is."""

import django.db.models.deletion
from django.db import migrations, models

FORWARD = """
CREATE OR REPLACE FUNCTION memories_ranks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memories_memoryrank (memory_id, hit_count, seen, created_at, tier)
    SELECT id, hit_count, COALESCE(last_hit_at, created_at), created_at, tier
    FROM added WHERE status = 'active';
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_ranks_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'active' THEN
        INSERT INTO memories_memoryrank (memory_id, hit_count, seen, created_at, tier)
        VALUES (NEW.id, NEW.hit_count, COALESCE(NEW.last_hit_at, NEW.created_at), NEW.created_at, NEW.tier)
        ON CONFLICT (memory_id) DO UPDATE SET
            hit_count = EXCLUDED.hit_count, seen = EXCLUDED.seen,
            created_at = EXCLUDED.created_at, tier = EXCLUDED.tier;
    ELSIF OLD.status = 'active' THEN
        DELETE FROM memories_memoryrank WHERE memory_id = NEW.id;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_ranks_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memories_memoryrank r USING removed WHERE r.memory_id = removed.id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_ranks_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memories_memoryrank;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS memories_ranks_insert ON memories_memory;
CREATE TRIGGER memories_ranks_insert AFTER INSERT ON memories_memory
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memories_ranks_inserted();
DROP TRIGGER IF EXISTS memories_ranks_update ON memories_memory;
CREATE TRIGGER memories_ranks_update AFTER UPDATE ON memories_memory FOR EACH ROW
    WHEN ((OLD.hit_count IS DISTINCT FROM NEW.hit_count OR OLD.last_hit_at IS DISTINCT FROM NEW.last_hit_at
           OR OLD.tier IS DISTINCT FROM NEW.tier OR OLD.status IS DISTINCT FROM NEW.status
           OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.id IS DISTINCT FROM NEW.id)
          AND current_setting('ultron.ranks_written', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION memories_ranks_updated();
DROP TRIGGER IF EXISTS memories_ranks_delete ON memories_memory;
CREATE TRIGGER memories_ranks_delete AFTER DELETE ON memories_memory
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memories_ranks_deleted();
DROP TRIGGER IF EXISTS memories_ranks_truncate ON memories_memory;
CREATE TRIGGER memories_ranks_truncate AFTER TRUNCATE ON memories_memory
    FOR EACH STATEMENT EXECUTE FUNCTION memories_ranks_truncated();

INSERT INTO memories_memoryrank (memory_id, hit_count, seen, created_at, tier)
SELECT id, hit_count, COALESCE(last_hit_at, created_at), created_at, tier
FROM memories_memory WHERE status = 'active'
ON CONFLICT (memory_id) DO NOTHING;
"""

BACKWARD = """
DROP TRIGGER IF EXISTS memories_ranks_insert ON memories_memory;
DROP TRIGGER IF EXISTS memories_ranks_update ON memories_memory;
DROP TRIGGER IF EXISTS memories_ranks_delete ON memories_memory;
DROP TRIGGER IF EXISTS memories_ranks_truncate ON memories_memory;
DROP FUNCTION IF EXISTS memories_ranks_inserted();
DROP FUNCTION IF EXISTS memories_ranks_updated();
DROP FUNCTION IF EXISTS memories_ranks_deleted();
DROP FUNCTION IF EXISTS memories_ranks_truncated();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0009_gin_without_pending_list'),
    ]

    operations = [
        migrations.CreateModel(
            name='MemoryRank',
            fields=[
                ('memory', models.OneToOneField(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, primary_key=True, related_name='+', serialize=False, to='memories.memory')),
                ('hit_count', models.IntegerField()),
                ('seen', models.DateTimeField(help_text='The last hit, or the creation if never hit.')),
                ('created_at', models.DateTimeField()),
                ('tier', models.CharField(choices=[('hot', 'Hot'), ('warm', 'Warm'), ('cold', 'Cold')], max_length=8)),
            ],
            options={
                'verbose_name': 'memory rank',
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
