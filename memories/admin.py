"""Admin views of memories (read-only) and of merge candidates (merge or dismiss). Edits go through the curation pages, which call the
service functions (redaction, re-embedding, dedup); the admin must not bypass them."""

from __future__ import annotations

from django.contrib import admin, messages

from agents.admin_tools import ReadOnlyAdmin, ReadOnlyTabularInline
from memories.models import (
    CandidateStatus,
    EmbeddingSpace,
    Memory,
    MemoryContribution,
    MergeCandidate,
)
from memories.services.candidates import merge_candidate_accept, merge_candidate_dismiss
from memories.services.inputs import MemoryInputError


class ContributionInline(ReadOnlyTabularInline):
    model = MemoryContribution
    fields = ("created_at", "agent", "match_reason", "similarity", "content", "merged_at")


class CandidateInline(ReadOnlyTabularInline):
    """Memories this one may duplicate (decided in Merge candidates)."""

    model = MergeCandidate
    fk_name = "memory"
    fields = ("duplicate_of", "similarity", "conflicts", "status", "llm_verdict", "decided_by", "decided_at")
    verbose_name_plural = "may duplicate (merge candidates)"


@admin.register(Memory)
class MemoryAdmin(ReadOnlyAdmin):
    list_display = ("summary_l0", "memory_type", "tier", "status", "hit_count", "merge_pending", "agent", "created_at")
    list_filter = ("memory_type", "tier", "status", "merge_pending", "source")
    search_fields = ("content", "context", "resolution", "summary_l0")
    list_select_related = ("agent",)
    exclude = ("embedding",)
    inlines = [ContributionInline, CandidateInline]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("embedding")


@admin.register(EmbeddingSpace)
class EmbeddingSpaceAdmin(ReadOnlyAdmin):
    list_display = ("provider", "model", "dimensions", "updated_at")


@admin.register(MergeCandidate)
class MergeCandidateAdmin(ReadOnlyAdmin):
    """Pairs that may be one memory, waiting for a curator: merge or dismiss, through the
    same services the pipeline uses (a dismissed pair is never proposed again)."""

    list_display = ("memory", "duplicate_of", "similarity", "conflict_list", "status", "llm_verdict", "created_at")
    list_filter = ("status", "llm_verdict")
    list_select_related = ("memory", "duplicate_of")
    actions = ["merge_pairs", "dismiss_pairs"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("memory__embedding", "duplicate_of__embedding")

    @admin.display(description="details that differ")
    def conflict_list(self, candidate: MergeCandidate) -> str:
        return "; ".join(candidate.conflicts) or "—"

    def has_review_permission(self, request) -> bool:
        return request.user.has_perm("memories.change_mergecandidate")

    def _decide(self, request, queryset, decide, done: str) -> None:
        decided = 0
        for candidate in queryset.filter(status=CandidateStatus.OPEN):
            try:
                decide(candidate_id=candidate.pk, decided_by=request.user.get_username())
                decided += 1
            except MemoryInputError as exc:
                self.message_user(request, f"{candidate}: {exc.message}", messages.WARNING)
        self.message_user(request, f"{decided} pair(s) {done}.", messages.SUCCESS)

    @admin.action(description="Merge the selected pairs (the newer into the older)", permissions=["review"])
    def merge_pairs(self, request, queryset) -> None:
        self._decide(request, queryset, merge_candidate_accept, "merged")

    @admin.action(description="Dismiss the selected pairs (different memories)", permissions=["review"])
    def dismiss_pairs(self, request, queryset) -> None:
        self._decide(request, queryset, merge_candidate_dismiss, "dismissed")
