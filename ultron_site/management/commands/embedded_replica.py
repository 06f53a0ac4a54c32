from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from core.spaces import HubWideCommand
from ultron_site import embedded_db, embedded_replica
from ultron_site.startup import data_dir


class Command(HubWideCommand, BaseCommand):
    help = (
        "Make (or stop, or remove) a streaming read replica of the embedded PostgreSQL in DIR, to try "
        "read replicas on one machine: prints the DATABASE_REPLICA_URL to start the hub with. Only for "
        "the embedded server; a production database's replicas are its operator's (docs/deployment.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("dir", type=Path, help="the replica's directory (new or empty; a short path)")
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--start", action="store_true", help="start a replica made before")
        action.add_argument("--stop", action="store_true", help="stop the replica")
        action.add_argument("--remove", action="store_true", help="stop the replica and delete its directory")

    def handle(self, *args, dir: Path, start: bool, stop: bool, remove: bool, **options):
        hub = data_dir()
        host = str(connection.get_connection_params().get("host") or "")
        if not host or Path(host) != embedded_db.pgdata_path(hub):
            raise CommandError("the hub's database is not the embedded server (DATABASE_URL names another): "
                               "make its replicas with that server's own tools")
        try:
            if stop or remove:
                (embedded_replica.replica_remove if remove else embedded_replica.replica_stop)(hub, dir)
                self.stdout.write(f"replica in {dir} {'removed' if remove else 'stopped'}")
                return
            if start:
                embedded_replica.replica_start(hub, dir)
                uri = embedded_replica.replica_uri(dir, "ultron")
            else:
                uri = embedded_replica.replica_create(hub, dir)
        except (RuntimeError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"replica running in {dir}; start the hub with\n  DATABASE_REPLICA_URL={uri}")
