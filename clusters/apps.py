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

        # The review queue (a page of the memory service) shows the repair's cluster changes and
        # the merge suggestions, with their actions.
        from clusters import admin_changes, selectors
        from memories.admin_queue import queue_decide_register, queue_item_register
        from memories.selectors.review import review_queue_kind_register

        review_queue_kind_register(admin_changes.CHANGE_KIND, selectors.cluster_changes_standing_by_repair)
        review_queue_kind_register(admin_changes.SUGGESTION_KIND, lambda since: selectors.cluster_suggestions_open())
        queue_item_register(admin_changes.CHANGE_KIND, "Cluster changes", admin_changes.change_item)
        queue_item_register(admin_changes.SUGGESTION_KIND, "Cluster merge suggestions", admin_changes.suggestion_item)
        queue_decide_register(admin_changes.CHANGE_TOKEN, admin_changes.change_in_spaces, admin_changes.change_decide)
        queue_decide_register(admin_changes.SUGGESTION_TOKEN, admin_changes.suggestion_in_spaces,
                              admin_changes.suggestion_decide)

        # A memory's page lists the cluster changes that moved it, with Undo.
        from memories.admin_panels import memory_page_panel_register

        memory_page_panel_register("memory-cluster-changes", "Cluster changes", admin_changes.memory_panel)
