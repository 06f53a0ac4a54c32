"""Admin pages of merge candidates (merge or dismiss, through the same services the pipeline
uses) and of the embedding space."""

from __future__ import annotations

from django.contrib import admin, messages

from agents.admin_spaces import SpaceScopedAdmin
from core.admin_tools import ReadOnlyAdmin, ReadOnlyTabularInline
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

    list_display = ("memory", "duplicate_of", "similarity", "conflict_list", "status", "llm_said", "created_at")
    list_filter = ("status", "llm_verdict")
    list_select_related = ("memory", "duplicate_of")
    actions = ["merge_pairs", "dismiss_pairs"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("memory__embedding", "duplicate_of__embedding")

    @admin.display(description="what differs")
    def conflict_list(self, candidate: MergeCandidate) -> str:
        return _differences(candidate)

    @admin.display(description="the LLM said")
    def llm_said(self, candidate: MergeCandidate) -> str:
        return _llm_said(candidate)

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




def _differences(candidate: MergeCandidate) -> str:
    from memories.admin_queue import (
        plain_differences,  # the queue's wording (imported late: it imports this app's pages)
    )

    return plain_differences(candidate.conflicts) or "—"


def _llm_said(candidate: MergeCandidate) -> str:
    return {True: "one memory", False: "two memories", None: "not asked"}[candidate.llm_verdict]


class CandidateInline(ReadOnlyTabularInline):
    """On a memory's page: the memories it may duplicate (decided in the review queue), what differs
    between the two in plain words, and what the LLM said."""

    model = MergeCandidate
    fk_name = "memory"
    fields = ("duplicate_of", "similarity", "what_differs", "status", "llm_said", "decided_by", "decided_at")
    verbose_name_plural = "may duplicate (merge candidates)"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("duplicate_of").defer("duplicate_of__embedding")

    @admin.display(description="what differs")
    def what_differs(self, candidate: MergeCandidate) -> str:
        return _differences(candidate)

    @admin.display(description="the LLM said")
    def llm_said(self, candidate: MergeCandidate) -> str:
        return _llm_said(candidate)
