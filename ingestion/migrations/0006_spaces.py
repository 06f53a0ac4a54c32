"""Sessions, segments, raw archives and ingest jobs get their space (existing rows: ``shared``)
and row-level security (``core/spaces.py``); one session per space, agent and name."""

from django.db import migrations, models

from agents.migration_ops import space_field


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0003_spaces'),
        ('ingestion', '0005_segment_notes'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='sessionrecord',
            name='session_agent_identity',
        ),
        space_field('ingestjob', 'ingestion_ingestjob'),
        space_field('rawupload', 'ingestion_rawupload'),
        space_field('segmentmemory', 'ingestion_segmentmemory'),
        space_field('sessionrecord', 'ingestion_sessionrecord'),
        space_field('tasksegment', 'ingestion_tasksegment'),
        migrations.AddConstraint(
            model_name='sessionrecord',
            constraint=models.UniqueConstraint(fields=('space', 'agent', 'identity'), name='session_space_agent_identity'),
        ),
    ]
