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
        # The dashboard reads each step's latest run (pipeline.step_runs_last).
        indexes = [models.Index(fields=["step", "-started_at"], name="steprun_step_time")]
        permissions = [("run_pipeline", "Can run the pipeline now")]

    def __str__(self) -> str:
        return f"{self.step} at {self.started_at:%Y-%m-%d %H:%M}"


class FirstPassword(models.Model):
    """A password ``create_user``, ``ensure_admin`` or ``reset_password`` printed: good for one
    login only. While the user's password hash is still this one, every admin page sends them to
    change it, and once it has opened a session (``used_at``) it opens no other."""

    user = models.OneToOneField("auth.User", on_delete=models.CASCADE, related_name="first_password")
    password_hash = models.CharField(max_length=128)
    created_at = models.DateTimeField(auto_now_add=True)
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"first password of {self.user_id}"


class RateWindow(models.Model):
    """The API rate limit's counter for one token in the current fixed window. Kept in the
    database (one row per token, updated in place) so every web process on every host counts
    against the same limit."""

    # Unique: the throttle's upsert (ON CONFLICT (key)) needs it.
    key = models.CharField(max_length=64, unique=True)
    window = models.BigIntegerField()  # the window's number: epoch seconds // window length
    count = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.key}: {self.count} in window {self.window}"
