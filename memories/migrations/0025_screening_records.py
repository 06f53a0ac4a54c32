"""The poisoning screen's records (docs/flow.md#screening): ``MemoryHold`` (why a memory waits
and what a curator decided) and ``MemoryRead`` (one agent's use of a memory a day), behind
row-level security like every table of a space. (Apart from migration 0024, which changes the
memories table: rolled back alone, this one drops no column of a memory.)"""

import django.db.models.deletion
from django.db import migrations, models

import agents.models
from core.spaces import _READABLE, rls_disable_sql, rls_enable_sql

READS_INSERT = f"""
DROP POLICY IF EXISTS space_insert ON memories_memoryread;
CREATE POLICY space_insert ON memories_memoryread FOR INSERT WITH CHECK ({_READABLE});
"""


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0004_trust'),
        ('memories', '0024_screening'),
    ]

    operations = [
        migrations.CreateModel(
            name='MemoryHold',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('origin', models.CharField(choices=[('screen', 'Flagged by the screen'), ('writer', 'Writer is reviewed'), ('recall', "Writer's memories taken back"), ('error', 'Screen failed')], max_length=8)),
                ('reasons', models.JSONField(blank=True, default=list)),
                ('state', models.CharField(choices=[('open', 'Waiting for a curator'), ('done', 'Decided'), ('undone', 'Undone')], default='open', max_length=8)),
                ('decision', models.CharField(blank=True, choices=[('approved', 'Approved'), ('rejected', 'Rejected')], max_length=8)),
                ('prior_status', models.CharField(blank=True, choices=[('active', 'Active'), ('archived', 'Archived'), ('superseded', 'Superseded'), ('held', 'Held for review'), ('rejected', 'Rejected')], max_length=10)),
                ('batch', models.UUIDField(blank=True, null=True)),
                ('held_by', models.CharField(blank=True, help_text="'hub' or the admin who took the writer's memories back.", max_length=150)),
                ('decided_by', models.CharField(blank=True, max_length=150)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('undone_by', models.CharField(blank=True, max_length=150)),
                ('undone_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='MemoryRead',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('day', models.DateField()),
                ('calls', models.PositiveIntegerField(default=1)),
                ('last_at', models.DateTimeField()),
            ],
        ),
        migrations.AddField(
            model_name='memoryhold',
            name='memory',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='holds', to='memories.memory'),
        ),
        migrations.AddField(
            model_name='memoryhold',
            name='space',
            field=models.ForeignKey(default=agents.models.shared_space_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='agents.space'),
        ),
        migrations.AddField(
            model_name='memoryread',
            name='memory',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='reads', to='memories.memory'),
        ),
        migrations.AddField(
            model_name='memoryread',
            name='reader',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agents.agent'),
        ),
        migrations.AddField(
            model_name='memoryread',
            name='space',
            field=models.ForeignKey(default=agents.models.shared_space_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='agents.space'),
        ),
        migrations.AddIndex(
            model_name='memoryhold',
            index=models.Index(condition=models.Q(('state', 'open')), fields=['state', '-created_at'], name='memory_hold_open'),
        ),
        migrations.AddIndex(
            model_name='memoryhold',
            index=models.Index(condition=models.Q(('batch__isnull', False)), fields=['batch'], name='memory_hold_batch'),
        ),
        migrations.AddConstraint(
            model_name='memoryhold',
            constraint=models.UniqueConstraint(condition=models.Q(('state', 'open')), fields=('memory',), name='memory_hold_one_open'),
        ),
        migrations.AddConstraint(
            model_name='memoryhold',
            constraint=models.CheckConstraint(condition=models.Q(('state__in', ['open', 'done', 'undone'])), name='memory_hold_state'),
        ),
        migrations.AddConstraint(
            model_name='memoryhold',
            constraint=models.CheckConstraint(condition=models.Q(('origin__in', ['screen', 'writer', 'recall', 'error'])), name='memory_hold_origin'),
        ),
        migrations.AddIndex(
            model_name='memoryread',
            index=models.Index(fields=['space', '-day'], name='memory_read_space_day'),
        ),
        migrations.AddConstraint(
            model_name='memoryread',
            constraint=models.UniqueConstraint(fields=('memory', 'reader', 'day'), name='memory_read_once_a_day'),
        ),
            # A space's holds and reads are behind row-level security like its memories (core/spaces.py).
        migrations.RunSQL(rls_enable_sql('memories_memoryhold'), rls_disable_sql('memories_memoryhold')),
        # A read is recorded by a reader, who may write nothing in the space: its rows may be
        # inserted where they may be read (the other policies as everywhere).
        migrations.RunSQL(rls_enable_sql('memories_memoryread') + READS_INSERT, rls_disable_sql('memories_memoryread')),
    ]
