"""Keyword counts kept by the database (memories.models.LexemeCount): statement triggers for
inserts and deletes (a bulk load is counted per statement, not per row), a row trigger for the
updates that change what counts (status or words: the WHEN clause skips hit counters and tier
moves without calling anything; a statement that counts its own changes, the tier rebalance
archiving thousands of rows at once, sets ``ultron.lexemes_counted`` for its transaction), a
truncate trigger, and the counts of the memories already
stored. Idempotent (functions replaced, triggers dropped first): a restore of a backup older than
this migration leaves the functions of the database it replaced behind."""

from django.db import migrations, models

_PIECES = """
    INSERT INTO memories_lexemecount (lexeme, memories)
    SELECT lexeme, {sign} count(*) FROM (
        SELECT unnest(tsvector_to_array(search_vector)) AS lexeme FROM {rows} WHERE status = 'active'
        UNION ALL SELECT '' FROM {rows} WHERE status = 'active'
    ) pieces GROUP BY lexeme;
"""

FORWARD = f"""
CREATE OR REPLACE FUNCTION memories_lexemes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{_PIECES.format(sign="", rows="added")}
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_lexemes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{_PIECES.format(sign="-", rows="removed")}
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_lexemes_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memories_lexemecount (lexeme, memories)
    SELECT lexeme, sum(delta) FROM (
        SELECT unnest(tsvector_to_array(OLD.search_vector)) AS lexeme, -1 AS delta WHERE OLD.status = 'active'
        UNION ALL SELECT '', -1 WHERE OLD.status = 'active'
        UNION ALL SELECT unnest(tsvector_to_array(NEW.search_vector)), 1 WHERE NEW.status = 'active'
        UNION ALL SELECT '', 1 WHERE NEW.status = 'active'
    ) pieces GROUP BY lexeme HAVING sum(delta) <> 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memories_lexemes_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memories_lexemecount;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS memories_lexemes_insert ON memories_memory;
CREATE TRIGGER memories_lexemes_insert AFTER INSERT ON memories_memory
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memories_lexemes_inserted();
DROP TRIGGER IF EXISTS memories_lexemes_delete ON memories_memory;
CREATE TRIGGER memories_lexemes_delete AFTER DELETE ON memories_memory
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memories_lexemes_deleted();
DROP TRIGGER IF EXISTS memories_lexemes_update ON memories_memory;
CREATE TRIGGER memories_lexemes_update AFTER UPDATE ON memories_memory FOR EACH ROW
    WHEN ((OLD.status IS DISTINCT FROM NEW.status OR OLD.search_vector IS DISTINCT FROM NEW.search_vector)
          AND current_setting('ultron.lexemes_counted', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION memories_lexemes_updated();
DROP TRIGGER IF EXISTS memories_lexemes_truncate ON memories_memory;
CREATE TRIGGER memories_lexemes_truncate AFTER TRUNCATE ON memories_memory
    FOR EACH STATEMENT EXECUTE FUNCTION memories_lexemes_truncated();

INSERT INTO memories_lexemecount (lexeme, memories)
SELECT word, ndoc FROM ts_stat('SELECT search_vector FROM memories_memory WHERE status = ''active''')
UNION ALL SELECT '', count(*) FROM memories_memory WHERE status = 'active' HAVING count(*) > 0;
"""

BACKWARD = """
DROP TRIGGER IF EXISTS memories_lexemes_insert ON memories_memory;
DROP TRIGGER IF EXISTS memories_lexemes_delete ON memories_memory;
DROP TRIGGER IF EXISTS memories_lexemes_update ON memories_memory;
DROP TRIGGER IF EXISTS memories_lexemes_truncate ON memories_memory;
DROP FUNCTION IF EXISTS memories_lexemes_inserted();
DROP FUNCTION IF EXISTS memories_lexemes_deleted();
DROP FUNCTION IF EXISTS memories_lexemes_updated();
DROP FUNCTION IF EXISTS memories_lexemes_truncated();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0007_history_and_tier_snapshots'),
    ]

    operations = [
        migrations.CreateModel(
            name='LexemeCount',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('lexeme', models.TextField(db_index=True)),
                ('memories', models.IntegerField()),
            ],
            options={
                'verbose_name': 'lexeme count',
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
