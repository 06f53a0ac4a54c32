"""Spaces and memberships. Every hub gets the space ``shared``, which holds everything stored
before spaces existed (the data apps' own migrations move their rows into it); every existing
agent writes there by default, as before. People's memberships follow their groups
(``ultron_site.0009_space_memberships``)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def shared_space(apps, schema_editor):
    space_model = apps.get_model("agents", "Space")
    membership_model = apps.get_model("agents", "Membership")
    agent_model = apps.get_model("agents", "Agent")
    shared, _ = space_model.objects.get_or_create(
        slug="shared", defaults={"name": "Shared", "description": "Everything the hub knew before it had spaces."})
    for agent in agent_model.objects.all():
        membership_model.objects.get_or_create(space=shared, user_id=agent.user_id, defaults={"role": "writer"})
        if agent.default_space_id is None:
            agent.default_space = shared
            agent.save(update_fields=["default_space"])


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0002_token_expiry'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Space',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.SlugField(unique=True)),
                ('name', models.CharField(max_length=100)),
                ('description', models.TextField(blank=True, default='')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['slug'],
            },
        ),
        migrations.AddField(
            model_name='agent',
            name='default_space',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents.space'),
        ),
        migrations.CreateModel(
            name='Membership',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('reader', 'Reader'), ('writer', 'Writer'), ('curator', 'Curator'), ('admin', 'Admin')], max_length=10)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='space_memberships', to=settings.AUTH_USER_MODEL)),
                ('space', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='agents.space')),
            ],
            options={
                'ordering': ['space__slug', 'user__username'],
                'constraints': [models.UniqueConstraint(fields=('space', 'user'), name='membership_one_role_per_space'), models.CheckConstraint(condition=models.Q(('role__in', ['reader', 'writer', 'curator', 'admin'])), name='membership_role_valid')],
            },
        ),
        migrations.RunPython(shared_space, migrations.RunPython.noop),
    ]
