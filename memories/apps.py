from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memory service"
    default_auto_field = "django.db.models.BigAutoField"
