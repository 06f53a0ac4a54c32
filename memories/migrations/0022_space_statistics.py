"""Statistics on ``space_id`` for every table that holds a space's rows.

Migration 0013 added ``space_id`` with a default to tables that were already full. Adding a column
is not a change autovacuum counts, so an upgraded hub kept no statistics on it until enough rows
were written afterwards — for a large hub, indefinitely. Without them the planner guessed that a
read policy's ``space_id = ANY(<the session's spaces>)`` matches half a percent of the table and
read a whole space through the ``space_id`` index instead of walking the vector index: 3 s per
semantic search at 1M memories in one space (4 ms with the statistics). With them it knows, from
the session's own setting, what part of the table the searched spaces hold.

``ANALYZE … (space_id)`` samples one column (about half a second at 1M rows); a new hub's empty
tables are analyzed by autovacuum as they fill.
"""

from django.db import migrations

ANALYZE = """
DO $$
DECLARE t regclass;
BEGIN
    FOR t IN SELECT a.attrelid::regclass FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
             WHERE a.attname = 'space_id' AND NOT a.attisdropped AND c.relkind IN ('r', 'p')
               AND c.relnamespace = current_schema()::regnamespace
    LOOP
        EXECUTE format('ANALYZE %s (space_id)', t);
    END LOOP;
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0021_type_review")]

    operations = [migrations.RunSQL(ANALYZE, migrations.RunSQL.noop)]
