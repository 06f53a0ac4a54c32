from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from ultron_site.models import FirstPassword


class Command(BaseCommand):
    help = "Make sure a superuser exists; on first creation print how to log in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username: str, **options):
        users = get_user_model()
        # Any superuser will do: make run calls this at every start, and only the first start creates one.
        if users.objects.filter(is_superuser=True).exists():
            return
        password = secrets.token_urlsafe(16)
        user = users.objects.create_superuser(username=username, email="", password=password)
        FirstPassword.objects.create(user=user, password_hash=user.password)  # good for one login
        path = settings.ULTRON_DATA_DIR / "admin-password.txt"
        path.write_text(f"{username}\n{password}\n")
        # The password in clear: its owner's only; the middleware deletes the file once it has been changed.
        path.chmod(0o600)
        self.stdout.write(
            "\n"
            f"  First run: created the admin account '{username}' with password {password}\n"
            f"  (also saved in {path}). It is good for one login: log in at /admin/, where the\n"
            "  first page asks for a password of your own (lost it? manage.py reset_password NAME).\n"
        )
