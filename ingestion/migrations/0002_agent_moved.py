"""The Agent model moved to the ``agents`` app (same table): point the foreign keys' state there."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0001_initial"),
        ("ingestion", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="ingestjob",
                    name="agent",
                    field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL,
                                            related_name="ingest_jobs", to="agents.agent"),
                ),
                migrations.AlterField(
                    model_name="rawupload",
                    name="agent",
                    field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL,
                                            related_name="raw_uploads", to="agents.agent"),
                ),
                migrations.AlterField(
                    model_name="sessionrecord",
                    name="agent",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="sessions",
                                            to="agents.agent"),
                ),
            ],
            database_operations=[],
        ),
    ]
