"""The roles' permissions as ultron_site/roles.py now has them: curators read ingest jobs (the
dashboard lists recent jobs, and a memory's provenance leads through its session to the job)."""

from django.db import migrations


def roles_sync(apps, schema_editor):
    from ultron_site.roles import groups_sync

    groups_sync(apps)


class Migration(migrations.Migration):

    dependencies = [
        ("ultron_site", "0007_first_password_used"),
        ("ingestion", "0005_segment_notes"),
    ]

    operations = [migrations.RunPython(roles_sync, migrations.RunPython.noop)]
