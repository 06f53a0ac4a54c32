"""Agents and API tokens now belong to the ``agents`` app, which adopted their tables
(``agents.0001_initial``); the project package forgets them. State only: no table is dropped."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("ultron_site", "0001_initial"),
        ("agents", "0001_initial"),
        ("memories", "0005_agent_moved"),
        ("ingestion", "0002_agent_moved"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ApiToken"),
                migrations.DeleteModel(name="Agent"),
            ],
            database_operations=[],
        ),
    ]
