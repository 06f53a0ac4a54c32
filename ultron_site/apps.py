from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class UltronSiteConfig(AppConfig):
    name = "ultron_site"
    verbose_name = "Agents and access"
    default_auto_field = "django.db.models.BigAutoField"
    default = True

    def ready(self) -> None:
        from ultron_site import checks  # noqa: F401  (registers the database checks)


class HubAdminConfig(admin_apps.AdminConfig):
    """Django's admin with the hub's own site (dashboard, work pages) as ``admin.site``."""

    default = False
    default_site = "ultron_site.admin_site.HubAdminSite"
