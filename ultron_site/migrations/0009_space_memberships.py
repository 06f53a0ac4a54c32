"""People's roles in the space ``shared`` (``agents.0003_spaces``), from the hub-wide groups
they were in before spaces existed: a curator curates ``shared``, an admin administers it.
Superusers are admins of every space without a membership."""

from django.db import migrations

from ultron_site.roles import ADMINS, CURATORS


def memberships(apps, schema_editor):
    space_model = apps.get_model("agents", "Space")
    membership_model = apps.get_model("agents", "Membership")
    user_model = apps.get_model("auth", "User")
    shared = space_model.objects.filter(slug="shared").first()
    if shared is None:
        return
    for group, role in ((CURATORS, "curator"), (ADMINS, "admin")):
        for user in user_model.objects.filter(groups__name=group, agent__isnull=True):
            membership, created = membership_model.objects.get_or_create(
                space=shared, user=user, defaults={"role": role})
            if not created and role == "admin" and membership.role != "admin":
                membership.role = "admin"
                membership.save(update_fields=["role"])


class Migration(migrations.Migration):
    dependencies = [
        ("ultron_site", "0008_roles_resynced"),
        ("agents", "0003_spaces"),
    ]

    operations = [migrations.RunPython(memberships, migrations.RunPython.noop)]
