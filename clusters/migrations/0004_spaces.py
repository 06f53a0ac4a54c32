"""Clusters, their members and skills get their space (existing rows: ``shared``) and row-level
security (``core/spaces.py``); a skill's slug is unique within its space."""

from django.db import migrations, models

from agents.migration_ops import space_field


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0003_spaces'),
        ('clusters', '0003_centroid_direction'),
    ]

    operations = [
        space_field('clustermember', 'clusters_clustermember'),
        space_field('knowledgecluster', 'clusters_knowledgecluster'),
        space_field('skill', 'clusters_skill'),
        space_field('skillversion', 'clusters_skillversion'),
        migrations.AlterField(
            model_name='skill',
            name='slug',
            field=models.CharField(max_length=50),
        ),
        migrations.AddConstraint(
            model_name='skill',
            constraint=models.UniqueConstraint(fields=('space', 'slug'), name='skill_space_slug'),
        ),
    ]
