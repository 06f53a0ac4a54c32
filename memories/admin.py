"""The curators' memory pages: the list (ranked by the hub's own search when searched), the
memory page (edits go through ``memory_edit``: redaction, re-embedding, summaries, cluster,
history) and merge candidates (merge or dismiss through the same services the pipeline uses)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from agents.admin_spaces import SpaceScopedAdmin
from core.admin_tools import HtmxHttpRequest, HubAdmin, ReadOnlyTabularInline
from memories import (
    admin_candidates,  # also registers the merge-candidate pages
    admin_feedback,
    admin_history,
    admin_holds,
    admin_writer,  # its import registers the agent page's "hold everything it wrote"
)
from memories.admin_filters import (
    AgentFilter,
    ClusterFilter,
    GroupedCountFilter,
    TagFilter,
    UncountedBooleanFilter,
    UncountedChoicesFilter,
)
from memories.admin_search import RankedSearchMixin
from memories.models import (
    Memory,
    MemoryContribution,
    Status,
)
from memories.selectors.neighbours import memory_neighbours
from memories.services import MemoryInputError, memory_delete, memory_input_clean
from memories.services.edit import (
    memory_archive_by,
    memory_edit,
    memory_restore_by,
    redaction_summary,
)


def _editor(request: HttpRequest) -> str:
    return request.user.get_username()


class ContributionInline(ReadOnlyTabularInline):
    model = MemoryContribution
    fields = ("created_at", "agent", "match_reason", "similarity", "content", "merged_at")
    verbose_name_plural = "contributions merged into this memory"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("agent")


class MemoryForm(forms.ModelForm):
    """The fields a curator edits; validated and redacted like an upload (errors beside the
    field), stored by ``memory_edit``."""

    tags_text = forms.CharField(label="Tags", required=False, help_text="Comma-separated.")

    class Meta:
        model = Memory
        fields = ("content", "context", "resolution", "memory_type")
        widgets = {"content": forms.Textarea(attrs={"rows": 4}), "context": forms.Textarea(attrs={"rows": 2}),
                   "resolution": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["tags_text"].initial = ", ".join(self.instance.tags)
        if "memory_type" in self.fields:  # absent for people who may only view
            self.fields["memory_type"].help_text = "The classifier's choice; change it when it is wrong."

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        tags = [t.strip() for t in (data.get("tags_text") or "").split(",") if t.strip()]
        data["tags"] = tags
        try:
            # Checked here only to put each error beside its field; save_model stores through memory_edit, which
            # validates and redacts again.
            memory_input_clean(content=data.get("content", ""), context=data.get("context", ""),
                               resolution=data.get("resolution", ""), tags=tags)
        except MemoryInputError as exc:
            self.add_error("tags_text" if exc.field == "tags" else exc.field
                           if exc.field in self.fields else None, exc.message)
        return data


@admin.register(Memory)
class MemoryAdmin(RankedSearchMixin, admin_feedback.FeedbackPanelMixin, admin_holds.HoldPanelMixin, SpaceScopedAdmin,
                  HubAdmin):
    form = MemoryForm
    list_display = ("l0", "type_badge", "tier_badge", "hit_count", "last_hit_at", "agent", "age")
    list_display_links = ("l0",)
    list_filter = (("status", GroupedCountFilter), ("tier", GroupedCountFilter), ("memory_type", GroupedCountFilter),
                   ("source", UncountedChoicesFilter), ("merge_pending", UncountedBooleanFilter), ("agent", AgentFilter),
                   TagFilter, ClusterFilter)
    show_facets = admin.ShowFacets.ALWAYS  # counts beside status, tier and type (GroupedCountFilter)
    list_select_related = ("agent",)
    list_per_page = 50
    search_fields = ("content",)  # the search box ranks with the hub's own hybrid search, see below
    search_help_text = "Search as an agent would (hybrid: meaning and words)"
    actions = ["archive_selected", "restore_selected", "set_type_selected"]
    inlines = [ContributionInline, admin_candidates.CandidateInline]
    readonly_fields = ("status_line", "summaries", "redactions", "provenance_panel", "cluster_panel",
                       "similar_panel", "history_panel", "type_panel", "hold_panel", "feedback_panel")
    fieldsets = (
        (None, {"fields": ("status_line", "content", "context", "resolution", "tags_text", "memory_type", "type_panel")}),
        ("Summaries and redaction", {"fields": ("summaries", "redactions")}),
        ("Where it came from and where it belongs", {"fields": ("provenance_panel", "cluster_panel")}),
        ("Similar memories", {"fields": ("similar_panel",)}),
        ("History", {"fields": ("history_panel",)}),
    )

    def get_queryset(self, request):
        # The vector and the full-text column are never shown: neither is read for the list or the page.
        return super().get_queryset(request).defer("embedding", "search_vector")

    def has_add_permission(self, request) -> bool:
        return False  # memories arrive through uploads and ingestion

    def get_actions(self, request):
        actions = super().get_actions(request)
        if not self.has_delete_permission(request):
            actions.pop("delete_selected", None)
        return actions

    # --- list -----------------------------------------------------------------------------
    @admin.display(description="memory (L0)")
    def l0(self, memory: Memory) -> str:
        return memory.summary_l0 or memory.content[:120]

    @admin.display(description="type", ordering="memory_type")
    def type_badge(self, memory: Memory) -> str:
        return format_html('<span class="hub-badge">{}</span>', memory.memory_type)

    @admin.display(description="tier", ordering="tier")
    def tier_badge(self, memory: Memory) -> str:
        if memory.status != Status.ACTIVE:
            return format_html('<span class="hub-badge">{}</span>', memory.status)
        return format_html('<span class="hub-badge hub-badge-{}">{}</span>', memory.tier, memory.tier.upper())

    @admin.display(description="age", ordering="created_at")
    def age(self, memory: Memory) -> str:
        from django.utils.timesince import timesince

        return timesince(memory.created_at, timezone.now()).split(",")[0]

    def changelist_view(self, request: HtmxHttpRequest, extra_context: dict | None = None) -> HttpResponse:
        """The whole list page, or for htmx (the live search box) only the results partial."""
        response = super().changelist_view(request, extra_context)
        if request.htmx and isinstance(response, TemplateResponse):
            response.template_name = "admin/memories/memory/_results.html"
        return response

    @admin.action(description="Archive the selected memories", permissions=["change"])
    def archive_selected(self, request, queryset):
        done = sum(memory_archive_by(memory_id=pk, editor=_editor(request)) for pk in queryset.values_list("pk", flat=True))
        self.message_user(request, f"Archived {done} memor{'y' if done == 1 else 'ies'}.", messages.SUCCESS)

    @admin.action(description="Restore the selected memories", permissions=["change"])
    def restore_selected(self, request, queryset):
        done = sum(memory_restore_by(memory_id=pk, editor=_editor(request)) for pk in queryset.values_list("pk", flat=True))
        self.message_user(request, f"Restored {done} memor{'y' if done == 1 else 'ies'}.", messages.SUCCESS)

    @admin.action(description="Set the type of the selected memories", permissions=["change"])
    def set_type_selected(self, request, queryset):
        from memories.admin_types import set_type_selected

        return set_type_selected(self, request, queryset)

    def delete_model(self, request, obj):
        memory_delete(memory_id=obj.pk)

    def delete_queryset(self, request, queryset):
        # One by one through memory_delete, never the admin's own bulk delete: each memory leaves its cluster.
        for pk in queryset.values_list("pk", flat=True):
            memory_delete(memory_id=pk)

    # --- the memory page --------------------------------------------------------------------
    def change_view(self, request, object_id, form_url="", extra_context=None):
        from memories.admin_panels import memory_page_panels
        from memories.admin_promote import panel_context

        return super().change_view(request, object_id, form_url, {
            **panel_context(self, request), "memory_panels": memory_page_panels(request, object_id),
            **(extra_context or {})})

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        result = memory_edit(
            memory_id=obj.pk, editor=_editor(request), content=data["content"], context=data.get("context", ""),
            resolution=data.get("resolution", ""), tags=data.get("tags", []), memory_type=data.get("memory_type"),
        )
        if result.redactions:
            self.message_user(request, f"Redacted on save: {redaction_summary(result.redactions)}.", messages.WARNING)
        for match in result.near_duplicates[:1]:
            url = reverse("admin:memories_memory_change", args=[match.memory.pk])
            merge = reverse("admin:memories_memory_merge", args=[obj.pk, match.memory.pk])
            self.message_user(request, format_html(
                'This memory is now close to <a class="hub-link" href="{}">another one</a> (similarity {}). '
                '<a class="hub-link" href="{}">Review and merge them</a>.',
                url, f"{match.similarity:.2f}", merge), messages.INFO)
        # memory_edit wrote through its own query: the page shows what was stored, redacted.
        obj.refresh_from_db()

    @admin.display(description="status")
    def status_line(self, memory: Memory) -> str:
        line = format_html(
            '<span class="hub-badge hub-badge-{}">{}</span> <span class="hub-badge">{}</span> '
            '<span class="hub-muted">{} hits · last hit {} · {} · by {}</span>',
            memory.tier, memory.tier.upper(), memory.status, memory.hit_count,
            memory.last_hit_at.strftime("%Y-%m-%d %H:%M") if memory.last_hit_at else "never",
            memory.source, memory.agent or "—",
        )
        if memory.verified_by:
            line += format_html(' <span class="hub-badge hub-badge-ok" title="{}">verified by {}</span>',
                                f"approved on {memory.verified_at:%Y-%m-%d %H:%M}" if memory.verified_at else "",
                                memory.verified_by)
        if memory.screen_flags:
            line += format_html('<p class="hub-muted">Served with the screen\'s notes: {}</p>', "; ".join(
                str(flag.get("label", "")) for flag in memory.screen_flags if isinstance(flag, dict)))
        if memory.superseded_by_id:
            line += format_html(
                '<p class="hub-muted">Superseded on {} by <a class="hub-link" href="{}">a newer memory</a> '
                '(undo it on <a class="hub-link" href="{}#supersessions">the review page</a>).</p>',
                memory.valid_until.strftime("%Y-%m-%d") if memory.valid_until else "?",
                reverse("admin:memories_memory_change", args=[memory.superseded_by_id]),
                reverse("admin:memories_memory_merge_review"))
        return line

    @admin.display(description="L0 / L1")
    def summaries(self, memory: Memory) -> str:
        return format_html('<p><strong>{}</strong></p><pre class="hub-pre">{}</pre>', memory.summary_l0,
                           memory.overview_l1)

    @admin.display(description="redacted")
    def redactions(self, memory: Memory) -> str:
        if not memory.redaction_counts:
            return "nothing"
        return format_html_join(" ", '<span class="hub-badge">{} × {}</span>',
                                sorted((tag, n) for tag, n in memory.redaction_counts.items()))

    @admin.display(description="provenance")
    def provenance_panel(self, memory: Memory) -> str:
        segment = memory.provenance.get("segment")
        if segment:
            url = reverse("admin:ingestion_tasksegment_conversation", args=[segment]) + f"?memory={memory.pk}"
            return format_html(
                '<a class="hub-link" href="{}">segment {}</a> of <a class="hub-link" href="{}">session {}</a>'
                '<div hx-get="{}" hx-trigger="load" hx-swap="innerHTML" class="hub-conversation">'
                '<span class="hub-muted">Loading the conversation…</span></div>',
                reverse("admin:ingestion_tasksegment_change", args=[segment]), segment,
                reverse("admin:ingestion_sessionrecord_change", args=[memory.provenance.get("session")]),
                memory.provenance.get("session"), url,
            )
        promoted = memory.provenance.get("promoted_from")
        if promoted:
            return format_html("promoted from space {} (memory {}) by {}", promoted.get("space"),
                               promoted.get("memory"), promoted.get("by"))
        if memory.provenance.get("raw_upload"):
            return format_html("plain-text ingestion (raw upload {})", memory.provenance["raw_upload"])
        return f"uploaded through the API ({memory.source})"

    @admin.display(description="cluster and skill")
    def cluster_panel(self, memory: Memory) -> str:
        member = getattr(memory, "cluster_member", None)
        if member is None:
            return "not in a cluster"
        cluster = member.cluster
        skill = cluster.skill
        return format_html(
            '<a class="hub-link" href="{}">{}</a> ({} members, similarity {}){}',
            reverse("admin:clusters_knowledgecluster_change", args=[cluster.pk]), cluster,
            cluster.member_count, f"{member.similarity:.2f}",
            format_html(' · skill <a class="hub-link" href="{}">{}</a>',
                        reverse("admin:clusters_skill_change", args=[skill.pk]), skill.slug) if skill else "",
        )

    @admin.display(description="nearest")
    def similar_panel(self, memory: Memory) -> str:
        url = reverse("admin:memories_memory_similar", args=[memory.pk])
        return format_html('<div hx-get="{}" hx-trigger="load" hx-swap="innerHTML">'
                           '<a class="hub-link" href="{}">Show the five most similar memories</a></div>', url, url)

    @admin.display(description="edits")
    def history_panel(self, memory: Memory) -> str:
        return admin_history.history_html(memory)

    @admin.display(description="type decisions")
    def type_panel(self, memory: Memory) -> str:
        from memories.admin_types import type_history

        return type_history(memory)

    # --- work views -------------------------------------------------------------------------
    def get_urls(self):
        from django.views.decorators.http import require_POST

        from memories import admin_promote, admin_queue, admin_review, admin_types

        def view(function, post: bool = False):
            def wrapped(request, *args, **kwargs):
                return function(self, request, *args, **kwargs)

            return self.admin_site.admin_view(require_POST(wrapped) if post else wrapped)

        return [
            path("merge-review/", view(admin_review.review_view), name="memories_memory_merge_review"),
            path("queue/", view(admin_queue.queue_view), name="memories_memory_queue"),
            path("queue/decide/", view(admin_queue.decide_view, post=True), name="memories_memory_queue_decide"),
            path("merge-review/<uuid:memory_id>/<str:action>/", view(admin_review.review_action, post=True),
                 name="memories_memory_review_action"),
            path("merge-review/contribution/<int:contribution_id>/split/",
                 view(admin_review.split_action, post=True), name="memories_memory_split"),
            path("merge-review/candidate/<int:candidate_id>/<str:action>/",
                 view(admin_review.candidate_action, post=True), name="memories_memory_candidate_action"),
            path("merge-review/change/<int:change_id>/<str:action>/",
                 view(admin_review.change_action, post=True), name="memories_memory_change_action"),
            path("merge-review/type/<int:type_change_id>/<str:action>/", view(admin_types.type_action, post=True),
                 name="memories_memory_type_action"),
            path("hold/<int:hold_id>/<str:action>/", view(admin_holds.hold_action, post=True),
                 name="memories_memory_hold_action"),
            path("report/<int:report_id>/<str:action>/", view(admin_feedback.report_action, post=True),
                 name="memories_memory_report_action"),
            path("writer/<int:agent_id>/hold/", view(admin_writer.writer_hold_view), name="memories_memory_writer_hold"),
            path("writer/hold/<uuid:batch>/undo/", view(admin_writer.writer_hold_undo_view, post=True),
                 name="memories_memory_writer_hold_undo"),
            path("<uuid:memory_id>/similar/", self.admin_site.admin_view(self.similar_view),
                 name="memories_memory_similar"),
            path("<uuid:memory_id>/revert/<int:edit_id>/", view(admin_history.revert_view, post=True),
                 name="memories_memory_revert"),
            path("<uuid:memory_id>/promote/", view(admin_promote.promote_view, post=True),
                 name="memories_memory_promote"),
            path("<uuid:memory_id>/merge/<uuid:other_id>/", view(admin_review.merge_pair_view),
                 name="memories_memory_merge"),
            *super().get_urls(),
        ]

    def similar_view(self, request: HtmxHttpRequest, memory_id: Any) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        memory = get_object_or_404(self.get_queryset(request).only("pk", "embedding"), pk=memory_id)
        context = {**self.admin_site.each_context(request), "memory": memory,
                   "neighbours": memory_neighbours(memory_id=memory.pk, limit=5),
                   "title": "Similar memories", "opts": self.opts}
        template = "admin/memories/_similar.html" if request.htmx else "admin/memories/similar.html"
        return TemplateResponse(request, template, context)
