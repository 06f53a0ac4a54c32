"""The segment stage once called "labeling" (and "metrics") is "scoring" everywhere."""

from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):

    dependencies = [
        ("ingestion", "0002_agent_moved"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="tasksegment", name="segment_labeling"),
        migrations.RemoveIndex(model_name="tasksegment", name="segment_extraction"),
        migrations.RenameField(model_name="tasksegment", old_name="labeling", new_name="scoring"),
        migrations.AddIndex(
            model_name="tasksegment",
            index=models.Index(fields=["scoring", "next_attempt_at"], name="segment_scoring"),
        ),
        migrations.AddIndex(
            model_name="tasksegment",
            index=models.Index(condition=Q(scoring="done"), fields=["extraction", "next_attempt_at"],
                               name="segment_extraction_ready"),
        ),
    ]
