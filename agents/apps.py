from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Agents, their API tokens and token authentication: the bottom layer every app may use."""

    name = "agents"
    verbose_name = "Agents and access"
    default_auto_field = "django.db.models.BigAutoField"
