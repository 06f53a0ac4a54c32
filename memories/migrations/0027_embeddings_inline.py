"""Keep each memory's vector in its row (storage MAIN) instead of out of line (pgvector's default,
EXTERNAL).

An exact nearest-neighbour scan — the duplicate check and searches in a space small enough that
the planner sorts its rows rather than walking the HNSW graph, and every query that reads a
candidate's distance — fetched each vector from the TOAST table: three buffers a row. Inline it is
one, and the exact scan of 2,000 memories took 3.8 ms instead of 11.1 (bench/README.md, issue 48).
Longer fields (content, the word vector) go out of line first; a vector leaves the row only if the
row still does not fit in a page.

Only a catalogue change: rows stored before keep their vectors out of line until rewritten
(``manage.py reembed``, or ``VACUUM FULL memories_memory`` at a quiet time: docs/operations.md).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0026_feedback")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories_memory ALTER COLUMN embedding SET STORAGE MAIN",
            "ALTER TABLE memories_memory ALTER COLUMN embedding SET STORAGE EXTERNAL",
        ),
    ]
