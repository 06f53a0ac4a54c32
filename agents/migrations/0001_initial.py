"""Agents and API tokens move from the project package (``ultron_site``) into this app.

The tables keep their names (``Meta.db_table``), so this migration only tells Django's
migration state that the models now belong here; nothing in the database changes except the
content types, which are relabelled so that existing permissions and admin history follow.
On a fresh database ``ultron_site.0001_initial`` still creates the tables first.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MOVED = ["agent", "apitoken"]


def relabel_content_types(apps, schema_editor, source="ultron_site", target="agents"):
    content_type = apps.get_model("contenttypes", "ContentType")
    content_type.objects.using(schema_editor.connection.alias).filter(
        app_label=source, model__in=MOVED
    ).update(app_label=target)


def restore_content_types(apps, schema_editor):
    relabel_content_types(apps, schema_editor, source="agents", target="ultron_site")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("ultron_site", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Agent",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(max_length=100, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="agent",
                                                      to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "ultron_site_agent", "ordering": ["name"]},
                ),
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("prefix", models.CharField(max_length=16, unique=True)),
                        ("key_hash", models.CharField(max_length=64)),
                        ("label", models.CharField(blank=True, max_length=100)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        ("agent", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="tokens",
                                                    to="agents.agent")),
                    ],
                    options={"db_table": "ultron_site_apitoken", "ordering": ["-created_at"]},
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(relabel_content_types, restore_content_types),
    ]
