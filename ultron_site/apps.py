from django.apps import AppConfig


class UltronSiteConfig(AppConfig):
    name = "ultron_site"
    verbose_name = "Agents and access"
    default_auto_field = "django.db.models.BigAutoField"
