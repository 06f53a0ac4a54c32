"""Read-only admin views of memories. Edits go through the curation pages, which call the
service functions (redaction, re-embedding, dedup); the admin must not bypass them."""

from __future__ import annotations

from django.contrib import admin

from agents.admin_tools import ReadOnlyAdmin, ReadOnlyTabularInline
from memories.models import EmbeddingSpace, Memory, MemoryContribution


class ContributionInline(ReadOnlyTabularInline):
    model = MemoryContribution
    fields = ("created_at", "agent", "match_reason", "similarity", "content", "merged_at")


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
