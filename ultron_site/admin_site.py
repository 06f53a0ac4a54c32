"""The hub's admin site: one login for curators and admins, the dashboard as its index, the
sidebar of work pages. Agents never log in here: their users have no password, and an API
token is not a session."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.templatetags.static import static
from django.urls import path, reverse, reverse_lazy
from django.views.decorators.http import require_POST
from unfold.sites import UnfoldAdminSite

from ultron_site.spaces_pages import page_spaces, space_switch, switcher_context


def stylesheet(request: HttpRequest) -> str:
    return static("ultron/hub.css")


def script(request: HttpRequest) -> str:
    return static("ultron/hub.js")


def favicon(request: HttpRequest) -> str:
    return static("ultron/favicon.svg")


def _can(permission: str):
    def check(request: HttpRequest) -> bool:
        return request.user.has_perm(permission)

    return check


def _space_admin(request: HttpRequest) -> bool:
    """Hub-wide admins and the admins of a space (who manage its members)."""
    from agents.admin_spaces import space_admin_ids

    return bool(space_admin_ids(request))


def _review_page(request: HttpRequest) -> bool:
    """The review queue and the texts waiting for a merge (pages under the memory list's URL)."""
    return request.path.startswith((reverse("admin:memories_memory_queue"),
                                    reverse("admin:memories_memory_merge_review")))


def _memories_page(request: HttpRequest) -> bool:
    return request.path.startswith(reverse("admin:memories_memory_changelist")) and not _review_page(request)


def sidebar(request: HttpRequest) -> list[dict[str, Any]]:
    """The work pages, grouped; each shown only to those with its permission."""
    return [
        {
            "title": "Work",
            "items": [
                {"title": "Dashboard", "icon": "dashboard", "link": reverse_lazy("admin:index")},
                {"title": "Memories", "icon": "psychology", "link": reverse_lazy("admin:memories_memory_changelist"),
                 "active": _memories_page, "permission": _can("memories.view_memory")},
                # One entry for every decision a curator takes (merges, conflicts, types, held
                # memories, clusters): the queue, its badge the count its tabs show.
                {"title": "Review", "icon": "checklist",
                 "link": reverse_lazy("admin:memories_memory_queue"),
                 "badge": "memories.admin_queue.review_badge", "active": _review_page,
                 "permission": _can("memories.review_merges")},
                {"title": "Clusters", "icon": "bubble_chart",
                 "link": reverse_lazy("admin:clusters_knowledgecluster_changelist"),
                 "permission": _can("clusters.view_knowledgecluster")},
                {"title": "Skills", "icon": "auto_stories", "link": reverse_lazy("admin:clusters_skill_changelist"),
                 "permission": _can("clusters.view_skill")},
            ],
        },
        {
            "title": "Sessions and pipeline",
            "items": [
                {"title": "Ingest jobs", "icon": "upload_file",
                 "link": reverse_lazy("admin:ingestion_ingestjob_changelist"),
                 "permission": _can("ingestion.view_ingestjob")},
                {"title": "Sessions", "icon": "forum", "link": reverse_lazy("admin:ingestion_sessionrecord_changelist"),
                 "permission": _can("ingestion.view_sessionrecord")},
                {"title": "Segments", "icon": "segment", "link": reverse_lazy("admin:ingestion_tasksegment_changelist"),
                 "permission": _can("ingestion.view_tasksegment")},
                {"title": "Raw archives", "icon": "archive", "link": reverse_lazy("admin:ingestion_rawupload_changelist"),
                 "permission": _can("ingestion.view_rawupload")},
                {"title": "Pipeline runs", "icon": "schedule", "link": reverse_lazy("admin:ultron_site_steprun_changelist"),
                 "permission": _can("ultron_site.view_steprun")},
            ],
        },
        {
            "title": "Access",
            "items": [
                {"title": "Agents and tokens", "icon": "smart_toy", "link": reverse_lazy("admin:agents_agent_changelist"),
                 "permission": _can("agents.view_agent")},
                {"title": "People", "icon": "group", "link": reverse_lazy("admin:auth_user_changelist"),
                 "permission": _can("auth.view_user")},
                {"title": "Spaces", "icon": "workspaces", "link": reverse_lazy("admin:agents_space_changelist"),
                 "permission": _space_admin},
                {"title": "Members", "icon": "badge", "link": reverse_lazy("admin:agents_membership_changelist"),
                 "permission": _space_admin},
            ],
        },
    ]


class HubAdminSite(UnfoldAdminSite):
    site_header = "Ultron Hub"
    site_title = "Ultron Hub"
    index_title = "Dashboard"
    index_template = "admin/hub_dashboard.html"

    def get_urls(self):
        return [
            path("pipeline/run/", self.admin_view(require_POST(self.pipeline_run)), name="pipeline_run"),
            path("space/", self.admin_view(require_POST(space_switch)), name="space_switch"),
            *super().get_urls(),
        ]

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        # The header's space switcher is on every page of the site.
        return {**super().each_context(request), **switcher_context(request)}

    def password_change(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
        # On a first login the page says which password is the "old" one: the one-time one just used.
        from ultron_site.models import FirstPassword

        password = getattr(request.user, "password", None)  # the admin site's views need a logged-in person
        first = FirstPassword.objects.filter(user_id=request.user.pk or 0).values_list("password_hash", flat=True).first()
        return super().password_change(
            request, {"first_login": first is not None and first == password, **(extra_context or {})})

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
        from ultron_site.dashboard import dashboard_context

        context = {**dashboard_context(space_ids=page_spaces(request)),
                   "can_run_pipeline": request.user.has_perm("ultron_site.run_pipeline")}
        return super().index(request, {**context, **(extra_context or {})})

    def pipeline_run(self, request: HttpRequest) -> HttpResponse:
        """Queue a whole pipeline run now (admins); the worker runs it, the dashboard shows it."""
        if not request.user.has_perm("ultron_site.run_pipeline"):
            raise PermissionDenied
        from ultron_site.pipeline import pipeline_run_enqueue

        pipeline_run_enqueue()
        messages.success(request, "The pipeline run is queued; its steps appear under Pipeline as they finish.")
        return HttpResponseRedirect(reverse("admin:index"))
