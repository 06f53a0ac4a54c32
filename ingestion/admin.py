"""Admin pages of ingestion: jobs with their per-file results, sessions, segments (their
messages shown as a conversation), failed and parked work with a retry action, raw archives
(downloadable by admins only)."""

from __future__ import annotations

import logging
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from agents.admin_spaces import SpaceScopedAdmin, page_space_chosen, page_spaces, space_choices
from agents.models import Agent
from agents.scoping import in_space
from agents.selectors import agents_of_spaces
from core.admin_tools import HtmxHttpRequest, ReadOnlyAdmin, ViewerLinks, linked
from ingestion.formats import ACCEPTED
from ingestion.models import IngestJob, RawUpload, SegmentMemory, SessionRecord, TaskSegment
from ingestion.selectors import job_progress, memory_source_messages
from ingestion.services import IngestError
from ingestion.services.accept import files_ingest, uploads_check
from ingestion.services.work import work_retry
from memories.admin_filters import AgentFilter

audit = logging.getLogger("ultron.audit")


class RetryWork(ReadOnlyAdmin):
    """Pipeline work items (sessions, segments): failed or parked ones can be queued again by
    those with ``ingestion.retry_work``."""

    actions = ["retry_selected"]
    retry_fields: tuple[str, ...] = ()
    retry_done = "{} item(s) queued again."

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("ingestion.retry_work")

    @admin.action(description="Retry the failed or parked work of the selected rows", permissions=["retry"])
    def retry_selected(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        done = sum(work_retry(model=queryset.model, ids=ids, state_field=field) for field in self.retry_fields)
        self.message_user(request, self.retry_done.format(done), messages.SUCCESS)


class MultipleFiles(forms.ClearableFileInput):
    allow_multiple_selected = True


class SessionFilesField(forms.FileField):
    widget = MultipleFiles

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        files = data if isinstance(data, list | tuple) else [data] if data else []
        if not files:
            raise forms.ValidationError(f"Choose one or more session files ({ACCEPTED}).")
        try:
            uploads_check([(upload.name, upload.size) for upload in files])
        except IngestError as exc:
            raise forms.ValidationError(f"{exc.message}.") from None
        return list(files)


class IngestForm(forms.Form):
    agent = forms.ModelChoiceField(
        queryset=Agent.objects.order_by("name"), help_text="The agent whose sessions these are.",
        error_messages={"required": "Choose the agent whose sessions these are.",
                        "invalid_choice": "That agent no longer exists: choose another."})
    space = forms.TypedChoiceField(coerce=int, required=False, empty_value=None,
                                   help_text="The space the sessions and their memories go to.",
                                   error_messages={"invalid_choice": "Choose one of your spaces."})
    session_files = SessionFilesField(label="Session files", help_text=(
        "One or more session files (.jsonl, .json, .traj, .md): Claude Code, Codex CLI, Gemini CLI, "
        "OpenHands, SWE-agent, Aider and OpenAI / Anthropic chat logs; the format is read from the content."))


@admin.register(IngestJob)
class IngestJobAdmin(SpaceScopedAdmin, ViewerLinks, ReadOnlyAdmin):
    list_display = ("created_at", "agent", "file_count")
    list_select_related = ("agent",)
    readonly_fields = ("agent_link", "created_at", "progress_panel")
    fields = ("agent_link", "created_at", "progress_panel")
    change_list_template = "admin/ingestion/ingestjob/change_list.html"

    @admin.display(description="agent")
    def agent_link(self, job: IngestJob) -> str:
        return linked(job, "agents.view_agent", "admin:agents_agent_change", job.agent_id,
                      job.agent.name if job.agent is not None else "")

    @admin.display(description="files")
    def file_count(self, job: IngestJob) -> int:
        return len(job.files)

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="progress")
    def progress_panel(self, job: IngestJob) -> str:
        return render_to_string("admin/ingestion/_job_progress.html", _progress_context(job))

    def get_urls(self):
        return [
            path("upload/", self.admin_site.admin_view(self.upload_view), name="ingestion_ingestjob_upload"),
            path("<uuid:job_id>/progress/", self.admin_site.admin_view(self.progress_view),
                 name="ingestion_ingestjob_progress"),
            *super().get_urls(),
        ]

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        """Admins upload session files for an agent: the same ingestion service as the API;
        the work itself is queued and the job page shows it."""
        if not request.user.has_perm("ingestion.upload_sessions"):
            raise PermissionDenied
        spaces = space_choices(request, page_spaces(request))  # the spaces the person's pages write to
        # The agents of those spaces (another team's are not offered, nor named).
        agents = Agent.objects.order_by("name") if request.user.is_superuser else agents_of_spaces(
            space_ids=page_spaces(request))
        form = IngestForm(request.POST or None, request.FILES or None,
                          initial={"agent": _agent_default(agents), "space": page_space_chosen(request)})
        form.fields["agent"].widget.attrs["required"] = False  # the form says what is missing, not the browser
        form.fields["agent"].queryset = agents  # type: ignore[attr-defined]  # a ModelChoiceField
        form.fields["space"].choices = [(s["id"], s["slug"]) for s in spaces]  # type: ignore[attr-defined]  # a ChoiceField
        if request.method == "POST" and form.is_valid() and form.cleaned_data["space"] is None:
            if len(spaces) == 1:  # nothing to choose
                form.cleaned_data["space"] = spaces[0]["id"]
            else:
                form.add_error("space", "Choose the space the sessions go to.")
        if request.method == "POST" and form.is_valid():
            # Read only once the form has checked names and sizes (uploads_check): a refused upload costs no memory.
            files = [(upload.name, upload.read()) for upload in form.cleaned_data["session_files"]]
            try:
                with in_space(form.cleaned_data["space"]):  # that space only, whatever else the pages cover
                    job, results = files_ingest(agent=form.cleaned_data["agent"], files=files,
                                                space=form.cleaned_data["space"])
            except IngestError as exc:
                form.add_error("session_files", str(exc))
            else:
                messages.success(request, f"{len(results)} file(s) accepted; the pipeline is working on them.")
                return HttpResponseRedirect(reverse("admin:ingestion_ingestjob_change", args=[job.pk]))
        context = {**self.admin_site.each_context(request), "form": form, "title": "Upload sessions",
                   "opts": self.opts, "no_agents": not agents.exists(),
                   "may_add_agent": request.user.has_perm("agents.add_agent")}
        return TemplateResponse(request, "admin/ingestion/upload.html", context)

    def progress_view(self, request: HtmxHttpRequest, job_id: Any) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        job = get_object_or_404(IngestJob.objects.filter(space_id__in=page_spaces(request)), pk=job_id)
        context = _progress_context(job)
        if request.htmx:
            return TemplateResponse(request, "admin/ingestion/_job_progress.html", context)
        context.update(self.admin_site.each_context(request), title="Ingest job", opts=self.opts)
        return TemplateResponse(request, "admin/ingestion/job_progress.html", context)


def _agent_default(agents: Any) -> int | None:
    """The agent to preselect among ``agents``: the only one, else the one whose sessions were
    uploaded last."""
    # Two rows tell whether there is exactly one agent, without counting them all.
    first = list(agents.values_list("pk", flat=True)[:2])
    if len(first) == 1:
        return first[0]
    return (IngestJob.objects.filter(agent__in=agents.values("pk")).order_by("-created_at")
            .values_list("agent_id", flat=True).first())


def _progress_context(job: IngestJob) -> dict[str, Any]:
    return {"job": job, "progress": job_progress(job=job),
            "poll_url": reverse("admin:ingestion_ingestjob_progress", args=[job.pk])}


SESSION_SEGMENTS_SHOWN = 200


@admin.register(SessionRecord)
class SessionRecordAdmin(SpaceScopedAdmin, ViewerLinks, RetryWork):
    list_display = ("identity", "agent", "message_count", "segmentation", "attempts", "updated_at")
    list_filter = ("segmentation", ("agent", AgentFilter))
    search_fields = ("identity",)
    list_select_related = ("agent",)
    retry_fields = ("segmentation",)
    retry_done = "{} session(s) queued again."
    readonly_fields = ("identity", "agent_link", "job_link", "raw_link", "size", "sha256", "line_count",
                       "message_count", "malformed", "segmentation", "attempts", "last_error", "created_at",
                       "updated_at", "segments_panel")
    fieldsets = (
        (None, {"fields": ("identity", "agent_link", "job_link", "raw_link", "segmentation", "attempts", "last_error")}),
        ("Segments and the memories they gave", {"fields": ("segments_panel",)}),
        ("File", {"fields": ("size", "sha256", "line_count", "message_count", "malformed", "created_at", "updated_at")}),
    )

    @admin.display(description="agent")
    def agent_link(self, session: SessionRecord) -> str:
        return linked(session, "agents.view_agent", "admin:agents_agent_change", session.agent_id,
                      session.agent.name)

    @admin.display(description="ingest job")
    def job_link(self, session: SessionRecord) -> str:
        if session.job is None:
            return "— (from before jobs were kept, or ingested from the server's disk)"
        return linked(session, "ingestion.view_ingestjob", "admin:ingestion_ingestjob_change", session.job_id,
                      f"job of {session.job.created_at:%Y-%m-%d %H:%M}")

    @admin.display(description="raw archive")
    def raw_link(self, session: SessionRecord) -> str:
        return linked(session, "ingestion.view_rawupload", "admin:ingestion_rawupload_change", session.raw_id,
                      f"raw upload {session.raw_id}")

    @admin.display(description="segments")
    def segments_panel(self, session: SessionRecord) -> str:
        links = SegmentMemory.objects.select_related("memory").only(
            "segment_id", "memory_id", "memory__summary_l0", "memory__content").order_by("item_index")
        segments = list(session.segments.only("pk", "session_id", "index", "topic", "score", "scoring", "extraction")
                        .prefetch_related(Prefetch("memory_links", queryset=links))
                        # One more than shown says whether there are more; only then are they counted.
                        .order_by("index")[:SESSION_SEGMENTS_SHOWN + 1])
        more = len(segments) > SESSION_SEGMENTS_SHOWN
        return render_to_string("admin/ingestion/_session_segments.html", {
            "session": session, "segments": segments[:SESSION_SEGMENTS_SHOWN], "more": more,
            "total": session.segments.count() if more else len(segments),
            "all_url": reverse("admin:ingestion_tasksegment_changelist") + f"?session={session.pk}",
        })


@admin.register(TaskSegment)
class TaskSegmentAdmin(SpaceScopedAdmin, RetryWork):
    list_display = ("__str__", "topic", "score_shown", "task_type", "scoring", "extraction", "attempts", "short_error")
    list_filter = ("scoring", "extraction", "task_type")
    search_fields = ("topic",)
    list_select_related = ("session",)
    retry_fields = ("scoring", "extraction")
    retry_done = "{} step(s) queued again."
    readonly_fields = ("session", "index", "topic", "outcome_panel", "task_type", "scoring", "extraction", "attempts",
                       "last_error", "conversation_panel")
    fields = readonly_fields

    @admin.display(description="outcome")
    def outcome_panel(self, segment: TaskSegment) -> str:
        """The score and its evidence, the memories the segment gave, and why it gave no (more)."""
        minimum = settings.ULTRON_SEGMENT_MIN_SCORE
        links = segment.memory_links.select_related("memory").only(
            "memory_id", "memory__content", "memory__memory_type", "memory__status").order_by("item_index")
        return render_to_string("admin/ingestion/_segment_outcome.html", {
            "segment": segment, "minimum": minimum, "links": list(links), "notes": segment.notes or [],
            "eligible": segment.score is not None and segment.score >= minimum,
            "reasons": (segment.metrics or {}).get("reasons", []),
        })

    @admin.display(description="score", ordering="score")
    def score_shown(self, segment: TaskSegment) -> str:
        return "—" if segment.score is None else f"{segment.score:.2f}"

    @admin.display(description="last error")
    def short_error(self, segment: TaskSegment) -> str:
        return segment.last_error[:100]

    @admin.display(description="messages")
    def conversation_panel(self, segment: TaskSegment) -> str:
        return render_to_string("admin/ingestion/_conversation.html", {"messages": segment.messages})

    def get_urls(self):
        return [
            path("<int:segment_id>/conversation/", self.admin_site.admin_view(self.conversation_view),
                 name="ingestion_tasksegment_conversation"),
            *super().get_urls(),
        ]

    def conversation_view(self, request: HtmxHttpRequest, segment_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        spaces = page_spaces(request)
        segment = get_object_or_404(TaskSegment.objects.filter(space_id__in=spaces)
                                    .only("pk", "messages", "index", "session_id"), pk=segment_id)
        # Opened from a memory's page: mark the messages it came from.
        sources = (memory_source_messages(segment=segment, memory_id=request.GET["memory"], space_ids=spaces)
                   if request.GET.get("memory") else [])
        context = {**self.admin_site.each_context(request), "messages": segment.messages, "segment": segment,
                   "sources": sources, "title": f"{segment}: conversation", "opts": self.opts}
        template = "admin/ingestion/_conversation.html" if request.htmx else "admin/ingestion/conversation.html"
        return TemplateResponse(request, template, context)


@admin.register(RawUpload)
class RawUploadAdmin(SpaceScopedAdmin, ReadOnlyAdmin):
    list_display = ("created_at", "kind", "name", "size", "redacted", "download_link")
    list_filter = ("kind", "redacted")
    search_fields = ("name",)
    # The archive's bytes (up to ULTRON_RAW_ARCHIVE_MAX_BYTES a row) are read by a download only, never by
    # a list or a form.
    exclude = ("content",)

    def get_queryset(self, request):
        return super().get_queryset(request).defer("content")

    @admin.display(description="download")
    def download_link(self, raw: RawUpload) -> str:
        return format_html('<a class="hub-link" href="{}">download</a>',
                           reverse("admin:ingestion_rawupload_download", args=[raw.pk]))

    def get_urls(self):
        return [
            path("<int:raw_id>/download/", self.admin_site.admin_view(self.download_view),
                 name="ingestion_rawupload_download"),
            *super().get_urls(),
        ]

    def download_view(self, request: HttpRequest, raw_id: int) -> HttpResponse:
        """What the archive keeps, as a file: the redacted text (the default), or the original
        bytes where an admin turned ``ULTRON_RAW_ARCHIVE_REDACT`` off. Admins only; each download
        is logged. The original bytes a redacted row's pieces still hold for segmentation are never served."""
        if not request.user.has_perm("ingestion.download_rawupload"):
            raise PermissionDenied
        raw = get_object_or_404(RawUpload.objects.filter(space_id__in=page_spaces(request)), pk=raw_id)
        if raw.content is None:
            why = ("its redacted text is written when its session is segmented: try again later"
                   if raw.metadata.get("archive") == "pending" else "it was larger than the archive limit when it came")
            messages.error(request, f"Raw upload {raw.pk} keeps no bytes yet: {why}.")
            return HttpResponseRedirect(reverse("admin:ingestion_rawupload_changelist"))
        # Every download is logged (flow.md#raw-archive): with redaction off, the archive holds secrets in clear.
        audit.info("raw upload %s (%s, %s bytes, %s) downloaded by %r", raw.pk, raw.name[:200], raw.size,
                   "redacted" if raw.redacted else "original bytes", request.user.get_username())
        # A quote in the name would end the header's filename early.
        name = (raw.name.rsplit("/", 1)[-1] or f"upload-{raw.pk}").replace('"', "")
        response = HttpResponse(bytes(raw.content), content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        # The bytes are someone's session: a browser must not sniff them into a page it renders.
        response["X-Content-Type-Options"] = "nosniff"
        return response
