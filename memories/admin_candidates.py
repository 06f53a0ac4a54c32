"""Admin pages of merge candidates (merge or dismiss, through the same services the pipeline
uses) and of the embedding space."""

from __future__ import annotations

from django.contrib import admin, messages

from agents.admin_spaces import SpaceScopedAdmin
from core.admin_tools import ReadOnlyAdmin
from memories.models import CandidateStatus, EmbeddingSpace, MergeCandidate
from memories.services import MemoryInputError
from memories.services.candidates import merge_candidate_accept, merge_candidate_dismiss


@admin.register(EmbeddingSpace)
class EmbeddingSpaceAdmin(ReadOnlyAdmin):
    list_display = ("provider", "model", "dimensions", "updated_at")


@admin.register(MergeCandidate)
class MergeCandidateAdmin(SpaceScopedAdmin, ReadOnlyAdmin):
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


