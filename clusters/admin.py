"""Admin pages of clusters and skills: members with their similarity, readiness, a
crystallize action that queues the work (never in a request), skills rendered as text with
their versions, publish / roll back, and SKILL.md downloads."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils.html import format_html

from agents.admin_tools import ReadOnlyAdmin, ReadOnlyTabularInline
from clusters.models import ClusterMember, KnowledgeCluster, Skill, SkillVersion
from clusters.selectors import readiness
from clusters.services import skill_version_publish
from memories.queue import enqueue_on_commit


class MemberInline(ReadOnlyTabularInline):
    model = ClusterMember
    fields = ("memory", "similarity")
    ordering = ("-similarity",)
    verbose_name_plural = "members (similarity to the centroid when they joined or were last checked)"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("memory").defer("vector", "memory__embedding")


@admin.register(KnowledgeCluster)
class KnowledgeClusterAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "member_count", "ready", "skill", "last_crystallization_result", "updated_at")
    list_filter = ("last_crystallization_result",)
    search_fields = ("topic",)
    list_select_related = ("skill",)
    actions = ["crystallize_selected"]
    inlines = [MemberInline]
    readonly_fields = ("topic", "member_count", "ready", "skill", "last_crystallization_at",
                       "last_crystallization_result", "last_crystallization_reason", "members_link")
    fields = readonly_fields

    def get_queryset(self, request):
        return super().get_queryset(request).defer("centroid")

    @admin.display(description="readiness")
    def ready(self, cluster: KnowledgeCluster) -> str:
        state = readiness(cluster)
        return {"ready": "ready", "recrystallize": "ready again"}.get(state or "", "crystallized" if cluster.skill_id else "—")

    @admin.display(description="members")
    def members_link(self, cluster: KnowledgeCluster) -> str:
        url = reverse("admin:memories_memory_changelist") + f"?cluster={cluster.pk}"
        return format_html('<a class="hub-link" href="{}">open the {} members in the memory list</a>', url,
                           cluster.member_count)

    def has_crystallize_permission(self, request) -> bool:
        return request.user.has_perm("clusters.crystallize_cluster")

    @admin.action(description="Crystallize the selected clusters into skills (queued)", permissions=["crystallize"])
    def crystallize_selected(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        for cluster_id in ids:
            enqueue_on_commit("clusters.tasks.crystallize_task", cluster_id)
        self.message_user(request, f"Queued {len(ids)} cluster(s); the result appears on each cluster when done.",
                          messages.SUCCESS)


class VersionInline(ReadOnlyTabularInline):
    model = SkillVersion
    fields = ("version", "status", "score", "author", "reason", "created_at")
    ordering = ("-version",)


@admin.register(Skill)
class SkillAdmin(ReadOnlyAdmin):
    list_display = ("slug", "name", "status", "current_version", "updated_at")
    list_filter = ("status",)
    search_fields = ("slug", "name", "description")
    list_select_related = ("current_version",)
    inlines = [VersionInline]
    readonly_fields = ("slug", "name", "description", "status", "source_cluster", "skill_panel")
    fields = readonly_fields
    actions = ["publish_latest"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("embedding")

    @admin.display(description="SKILL.md")
    def skill_panel(self, skill: Skill) -> str:
        versions = list(skill.versions.order_by("-version")[:2])
        return render_to_string("admin/clusters/_skill.html", {"skill": skill, "versions": versions})

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
            *super().get_urls(),
        ]

    def download_view(self, request: HttpRequest, skill_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        skill = get_object_or_404(Skill.objects.select_related("current_version").defer("embedding"), pk=skill_id)
        version = skill.current_version or skill.versions.order_by("-version").first()
        if version is None:
            raise PermissionDenied("this skill has no version yet")
        response = HttpResponse(version.body, content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{skill.slug}-SKILL.md"'
        return response
