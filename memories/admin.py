"""Read-only admin views of memories. Edits go through the curation pages, which call the
service functions (redaction, re-embedding, dedup); the admin must not bypass them."""

from __future__ import annotations

from django.contrib import admin

from memories.models import EmbeddingSpace, Memory, MemoryContribution


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ContributionInline(admin.TabularInline):
    model = MemoryContribution
    fields = ("created_at", "agent", "match_reason", "similarity", "content", "merged_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Memory)
class MemoryAdmin(ReadOnlyAdmin):
    list_display = ("summary_l0", "memory_type", "tier", "status", "hit_count", "merge_pending", "agent", "created_at")
    list_filter = ("memory_type", "tier", "status", "merge_pending", "source")
    search_fields = ("content", "context", "resolution", "summary_l0")
    list_select_related = ("agent",)
    exclude = ("embedding",)
    inlines = [ContributionInline]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("embedding")


@admin.register(EmbeddingSpace)
class EmbeddingSpaceAdmin(ReadOnlyAdmin):
    list_display = ("provider", "model", "dimensions", "updated_at")
