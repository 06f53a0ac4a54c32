from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memory service"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Reports of wrong or outdated memories (docs/api.md#feedback) are a kind of the review queue.
        from memories import admin_feedback
        from memories.admin_queue import queue_decide_register, queue_item_register
        from memories.selectors.review import review_queue_kind_register

        review_queue_kind_register(admin_feedback.KIND, admin_feedback.open_reports)
        queue_item_register(admin_feedback.KIND, admin_feedback.NAME, admin_feedback.report_item)
        queue_decide_register("report", admin_feedback.reports_in_spaces, admin_feedback.report_bulk)
