from django.apps import AppConfig


class IngestionConfig(AppConfig):
    name = "ingestion"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # manage.py calibrate asks each app for the thresholds whose rule lives there.
        from ingestion import receivers  # noqa: F401
