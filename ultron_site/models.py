"""What the site itself keeps: a record of each pipeline step run (for the dashboard)."""

from __future__ import annotations

from django.db import models


class StepRun(models.Model):
    """One run of one pipeline step: when, how long, what it did or why it failed."""

    step = models.CharField(max_length=40)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-pk"]
        indexes = [models.Index(fields=["step", "-started_at"], name="steprun_step_time")]
        permissions = [("run_pipeline", "Can run the pipeline now")]

    def __str__(self) -> str:
        return f"{self.step} at {self.started_at:%Y-%m-%d %H:%M}"
