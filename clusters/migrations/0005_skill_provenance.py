"""A skill records where a promoted copy came from (``clusters.services.skill_promote``)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('clusters', '0004_spaces'),
    ]

    operations = [
        migrations.AddField(
            model_name='skill',
            name='provenance',
            field=models.JSONField(blank=True, default=dict,
                                   help_text='where a promoted copy came from: promoted_from {space, skill, version, by, at}'),
        ),
    ]
