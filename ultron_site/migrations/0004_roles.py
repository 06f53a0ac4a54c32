"""The Curators and Admins groups with their permissions (see ultron_site/roles.py)."""

from django.db import migrations


def create_roles(apps, schema_editor):
    from ultron_site.roles import groups_sync

    groups_sync(apps)


def remove_roles(apps, schema_editor):
    from ultron_site.roles import ROLE_PERMISSIONS

    apps.get_model("auth", "Group").objects.filter(name__in=list(ROLE_PERMISSIONS)).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("ultron_site", "0003_step_runs"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("agents", "0001_initial"),
        ("memories", "0007_history_and_tier_snapshots"),
        ("clusters", "0002_permissions"),
        ("ingestion", "0004_permissions"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
