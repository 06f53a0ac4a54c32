"""Admin pages of clusters and skills: members with their similarity, readiness, a
crystallize action that queues the work (never in a request), skills rendered as text with
their versions, publish / roll back, and downloads (SKILL.md alone, or the folder as a zip)."""

from __future__ import annotations

import difflib

import markdown  # type: ignore[import-untyped, unused-ignore]  # mypy's cache flips whether this is needed
import nh3
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST

from agents.admin_spaces import (
    SpaceScopedAdmin,
    curated_spaces,
    page_spaces,
    promote_refused,
    promote_target,
    space_choices,
    space_slug_of,
)
from clusters import admin_changes
from clusters.knowledge_file import knowledge_markdown
from clusters.models import ClusterMember, KnowledgeCluster, Skill, SkillVersion
from clusters.selectors import readiness
from clusters.services import (
    SkillPromoteError,
    skill_promote,
    skill_version_publish,
    skill_version_reject,
)
from clusters.skill_files import skill_package, skill_version_for_download
from clusters.tasks import crystallize_task
from core.admin_tools import HtmxHttpRequest, ReadOnlyAdmin, ReadOnlyTabularInline
from core.queue import enqueue_on_commit


def skill_html(body: str) -> SafeString:
    """A SKILL.md as HTML: its front matter shown as code, the rest rendered as Markdown with
    raw HTML escaped (a member's ``<script>`` or ``List<String>`` shows as text), then
    sanitised (links only to http(s), no handler attributes)."""
    front = ""
    if body.startswith("---\n") and "\n---" in body[4:]:
        end = body.index("\n---", 4)
        front, body = body[4:end], body[end + 4:]
    renderer = markdown.Markdown(extensions=["fenced_code", "tables"], output_format="html")
    renderer.preprocessors.deregister("html_block")
    renderer.inlinePatterns.deregister("html")
    html = renderer.convert(body)
    clean = nh3.clean(html, tags={"h1", "h2", "h3", "h4", "p", "ul", "ol", "li", "code", "pre", "em", "strong",
                                  "a", "blockquote", "table", "thead", "tbody", "tr", "th", "td", "hr", "br"},
                      url_schemes={"http", "https"})
    meta = f'<pre class="hub-pre hub-front-matter">{escape(front.strip())}</pre>' if front.strip() else ""
    return mark_safe(meta + clean)  # noqa: S308 - escaped and sanitised above


def line_diff(before: str, after: str) -> SafeString:
    """Two versions side by side (an HTML table of changed lines and their context)."""
    table = difflib.HtmlDiff(wrapcolumn=70).make_table(before.splitlines(), after.splitlines(),
                                                       "previous", "this version", context=True, numlines=2)
    return mark_safe(table)  # noqa: S308 - HtmlDiff escapes the lines it shows


def _crystallization_context(cluster: KnowledgeCluster, since: str | None, can_crystallize: bool = False) -> dict:
    queued_at = parse_datetime(since) if since else None
    waiting = queued_at is not None and (cluster.last_crystallization_at is None
                                         or cluster.last_crystallization_at < queued_at)
    poll = reverse("admin:clusters_knowledgecluster_crystallization", args=[cluster.pk])
    # A cluster too small for a skill is not offered "Crystallize now" (it would only say "insufficient").
    needed = settings.ULTRON_CRYSTALLIZATION_THRESHOLD
    return {"cluster": cluster, "waiting": waiting, "since": since or "", "poll_url": poll,
            "ready": readiness(cluster), "can_crystallize": can_crystallize and cluster.member_count >= needed,
            "too_small": cluster.member_count < needed, "needed": needed}


class MemberInline(ReadOnlyTabularInline):
    model = ClusterMember
    fields = ("memory", "similarity_shown")
    readonly_fields = fields
    ordering = ("-similarity",)
    verbose_name_plural = "members (similarity to the centroid when they joined or were last checked)"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("memory").defer("vector", "memory__embedding")

    @admin.display(description="similarity")
    def similarity_shown(self, member: ClusterMember) -> str:
        return f"{member.similarity:.3f}"


@admin.register(KnowledgeCluster)
class KnowledgeClusterAdmin(SpaceScopedAdmin, ReadOnlyAdmin):
    list_display = ("__str__", "member_count", "ready", "skill", "last_crystallization_result", "updated_at")
    list_filter = ("last_crystallization_result",)
    search_fields = ("topic",)
    list_select_related = ("skill",)
    actions = ["crystallize_selected"]
    inlines = [MemberInline]
    readonly_fields = ("topic", "member_count", "ready", "skill", "members_link")
    change_form_template = "admin/clusters/knowledgecluster/change_form.html"
    fields = readonly_fields

    def get_queryset(self, request):
        return super().get_queryset(request).defer("centroid", "direction")

    @admin.display(description="readiness")
    def ready(self, cluster: KnowledgeCluster) -> str:
        state = readiness(cluster)
        return {"ready": "ready", "recrystallize": "ready again"}.get(state or "", "crystallized" if cluster.skill_id else "—")

    def change_view(self, request, object_id, form_url="", extra_context=None):
        cluster = self.get_object(request, object_id)
        extra = {"can_crystallize": self.has_crystallize_permission(request)}
        if cluster is not None:
            extra.update(_crystallization_context(cluster, None, extra["can_crystallize"]))
            extra.update(admin_changes.panel_context(request, cluster))
        return super().change_view(request, object_id, form_url, {**extra, **(extra_context or {})})

    @admin.display(description="members")
    def members_link(self, cluster: KnowledgeCluster) -> str:
        url = reverse("admin:memories_memory_changelist") + f"?cluster={cluster.pk}"
        return format_html('<a class="hub-link" href="{}">open the {} members in the memory list</a>', url,
                           cluster.member_count)

    def has_crystallize_permission(self, request) -> bool:
        return request.user.has_perm("clusters.crystallize_cluster")

    def get_urls(self):
        return [
            path("<int:cluster_id>/crystallize/", self.admin_site.admin_view(require_POST(self.crystallize_view)),
                 name="clusters_knowledgecluster_crystallize"),
            path("<int:cluster_id>/crystallization/", self.admin_site.admin_view(self.crystallization_view),
                 name="clusters_knowledgecluster_crystallization"),
            path("memory-file/", self.admin_site.admin_view(self.memory_file_view),
                 name="clusters_knowledgecluster_memory_file"),
            # Clusters by hand (clusters/admin_changes.py): merge, split, move, undo, suggestions.
            path("<int:cluster_id>/merge/", self.admin_site.admin_view(require_POST(admin_changes.merge_view)),
                 name="clusters_knowledgecluster_merge"),
            path("<int:cluster_id>/split/", self.admin_site.admin_view(require_POST(admin_changes.split_view)),
                 name="clusters_knowledgecluster_split"),
            path("<int:cluster_id>/move/", self.admin_site.admin_view(require_POST(admin_changes.move_view)),
                 name="clusters_knowledgecluster_move"),
            path("change/<int:cluster_change_id>/undo/",
                 self.admin_site.admin_view(require_POST(admin_changes.undo_view)),
                 name="clusters_knowledgecluster_undo"),
            path("suggestion/<int:suggestion_id>/<str:action>/",
                 self.admin_site.admin_view(require_POST(admin_changes.suggestion_view)),
                 name="clusters_knowledgecluster_suggestion"),
            *super().get_urls(),
        ]

    def memory_file_view(self, request: HttpRequest) -> HttpResponse:
        """MEMORY.md of the spaces the person's pages cover (the API's export, for people)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        ids = page_spaces(request)
        text = knowledge_markdown(space_ids=ids, space_slugs=sorted(space_slug_of(request, i) for i in ids))
        response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="MEMORY.md"'
        return response

    def crystallize_view(self, request: HtmxHttpRequest, cluster_id: int) -> HttpResponse:
        """Queue the crystallization of one cluster (never run in the request); the panel then
        polls until the cluster records a newer result."""
        if not self.has_crystallize_permission(request):
            raise PermissionDenied
        cluster = get_object_or_404(KnowledgeCluster.objects.filter(space_id__in=page_spaces(request))
                                    .defer("centroid", "direction"), pk=cluster_id)
        since = timezone.now().isoformat()  # before queueing: a quick worker may finish at once
        enqueue_on_commit(crystallize_task, cluster.pk)
        if request.htmx:
            return TemplateResponse(request, "admin/clusters/_crystallization.html",
                                    _crystallization_context(cluster, since, True))
        messages.success(request, "Crystallization queued; the result appears on this page when it is done.")
        return HttpResponseRedirect(reverse("admin:clusters_knowledgecluster_change", args=[cluster.pk]))

    def crystallization_view(self, request: HtmxHttpRequest, cluster_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        cluster = get_object_or_404(KnowledgeCluster.objects.filter(space_id__in=page_spaces(request))
                                    .defer("centroid", "direction").select_related("skill"), pk=cluster_id)
        context = _crystallization_context(cluster, request.GET.get("since"), self.has_crystallize_permission(request))
        if request.htmx:
            return TemplateResponse(request, "admin/clusters/_crystallization.html", context)
        context.update(self.admin_site.each_context(request), title=f"Crystallization of {cluster}", opts=self.opts)
        return TemplateResponse(request, "admin/clusters/crystallization.html", context)

    @admin.action(description="Crystallize the selected clusters into skills (queued)", permissions=["crystallize"])
    def crystallize_selected(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        for cluster_id in ids:
            enqueue_on_commit(crystallize_task, cluster_id)
        self.message_user(request, f"Queued {len(ids)} cluster(s); the result appears on each cluster when done.",
                          messages.SUCCESS)


@admin.register(Skill)
class SkillAdmin(SpaceScopedAdmin, ReadOnlyAdmin):
    list_display = ("slug", "name", "status", "current_version", "updated_at")
    list_filter = ("status",)
    search_fields = ("slug", "name", "description")
    list_select_related = ("current_version__skill",)
    readonly_fields = ("slug", "name", "description", "status", "source_cluster")
    change_form_template = "admin/clusters/skill/change_form.html"
    fields = readonly_fields
    actions = ["publish_latest"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("embedding")

    def change_view(self, request, object_id, form_url="", extra_context=None):
        skill = self.get_object(request, object_id)
        extra: dict = {"can_publish": self.has_publish_permission(request),
                       # the space panel: a published skill may be promoted to another curated space
                       "can_promote": self.has_publish_permission(request),
                       "promote_spaces": space_choices(request, curated_spaces(request))}
        if skill is not None:
            versions = list(skill.versions.order_by("-version"))
            current = next((v for v in versions if v.pk == skill.current_version_id), versions[0] if versions else None)
            previous = next((v for v in versions if current and v.version < current.version), None)
            extra.update(skill=skill, version=current, versions=versions, previous=previous,
                         html=skill_html(current.body) if current else "",
                         diff=line_diff(previous.body, current.body) if previous and current else "")
        return super().change_view(request, object_id, form_url, {**extra, **(extra_context or {})})

    def has_publish_permission(self, request) -> bool:
        return request.user.has_perm("clusters.publish_skill")

    @admin.action(description="Publish the newest version of the selected skills", permissions=["publish"])
    def publish_latest(self, request, queryset):
        done = 0
        for skill in queryset:
            newest = skill.versions.order_by("-version").first()
            if newest is not None:
                skill_version_publish(version_id=newest.pk)
                done += 1
        self.message_user(request, f"Published {done} skill(s).", messages.SUCCESS)

    def get_urls(self):
        return [
            path("<int:skill_id>/SKILL.md", self.admin_site.admin_view(self.download_view),
                 name="clusters_skill_download"),
            path("<int:skill_id>/package.zip", self.admin_site.admin_view(self.package_view),
                 name="clusters_skill_package"),
            path("version/<int:version_id>/<str:action>/", self.admin_site.admin_view(require_POST(self.version_view)),
                 name="clusters_skill_version"),
            path("<int:skill_id>/promote/", self.admin_site.admin_view(require_POST(self.promote_view)),
                 name="clusters_skill_promote"),
            *super().get_urls(),
        ]

    def version_view(self, request: HttpRequest, version_id: int, action: str) -> HttpResponse:
        """Publish (also a rollback to an older version) or reject one version."""
        if not self.has_publish_permission(request):
            raise PermissionDenied
        # A version of another space's skill is missing, as one that never existed.
        version = get_object_or_404(SkillVersion.objects.filter(space_id__in=page_spaces(request)), pk=version_id)
        if action == "publish":
            skill_version_publish(version_id=version.pk)
            messages.success(request, f"Version {version.version} is published.")
        elif action == "reject":
            reason = (request.POST.get("reason") or "").strip() or f"rejected by {request.user.get_username()}"
            skill_version_reject(version_id=version.pk, reason=reason)
            messages.success(request, f"Version {version.version} is rejected.")
        else:
            raise PermissionDenied(f"unknown action {action!r}")
        return HttpResponseRedirect(reverse("admin:clusters_skill_change", args=[version.skill_id]))

    def promote_view(self, request: HttpRequest, skill_id: int) -> HttpResponse:
        """POST ``space`` (an id): copy the published skill there, then back to the skill's page."""
        if not self.has_publish_permission(request):
            raise PermissionDenied
        skill = self.get_object(request, str(skill_id))
        if skill is None:  # another space's skill is missing here, like one that never existed
            raise Http404
        target = promote_target(request)
        back = HttpResponseRedirect(reverse("admin:clusters_skill_change", args=[skill.pk]))
        try:
            promoted = skill_promote(skill_id=skill.pk, target=target, user=request.user)
        except SkillPromoteError as exc:
            return promote_refused(request, exc, back)
        url = reverse("admin:clusters_skill_change", args=[promoted.skill.pk])
        what = "the copy" if promoted.created else f"version {promoted.version.version} of the copy"
        messages.success(request, format_html('Promoted to space {}: <a class="hub-link" href="{}">{}</a>.',
                                              target.slug, url, what))
        return back

    def _download_version(self, request: HttpRequest, skill_id: int) -> SkillVersion:
        if not self.has_view_permission(request):
            raise PermissionDenied
        skill = get_object_or_404(self.get_queryset(request).select_related("current_version"), pk=skill_id)
        version = skill_version_for_download(skill, include_unpublished=True)
        if version is None:
            raise PermissionDenied("this skill has no version yet")
        return version

    def download_view(self, request: HttpRequest, skill_id: int) -> HttpResponse:
        version = self._download_version(request, skill_id)
        response = HttpResponse(version.body, content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{version.skill.slug}-SKILL.md"'
        return response

    def package_view(self, request: HttpRequest, skill_id: int) -> HttpResponse:
        """The skill as a folder (SKILL.md and the cited memories), zipped."""
        version = self._download_version(request, skill_id)
        response = HttpResponse(skill_package(version), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{version.skill.slug}.zip"'
        return response
