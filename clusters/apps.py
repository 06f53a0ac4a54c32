from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Clusters follow what happens to memories through the memory service's signals.
        from clusters import receivers  # noqa: F401
