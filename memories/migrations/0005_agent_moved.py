"""The Agent model moved to the ``agents`` app (same table): point the foreign keys' state there."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0001_initial"),
        ("memories", "0004_hot_updates"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="memory",
                    name="agent",
                    field=models.ForeignKey(blank=True, help_text="The agent that first contributed this memory.",
                                            null=True, on_delete=django.db.models.deletion.SET_NULL,
                                            related_name="memories", to="agents.agent"),
                ),
                migrations.AlterField(
                    model_name="memorycontribution",
                    name="agent",
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                            related_name="contributions", to="agents.agent"),
                ),
            ],
            database_operations=[],
        ),
    ]
