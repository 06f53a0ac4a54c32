from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Clusters follow what happens to memories through the memory service's signals.
        from clusters import receivers  # noqa: F401
        from clusters.services.membership import UPLOAD_LOCKS
        from memories.services import upload_lock_register

        # An upload takes the placement lock with its own: placing the new memory is then one statement.
        for label, expression in UPLOAD_LOCKS.items():
            upload_lock_register(label, expression)
