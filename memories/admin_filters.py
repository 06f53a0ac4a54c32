"""The memory list's filters: status, tier and type with counts from one shared GROUP BY; the
rest (source, merge flag, agent, tag, cluster) listed without counts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.core.cache import cache
from django.db.models import Count

from agents.admin_spaces import page_spaces
from agents.selectors import agents_of_spaces
from core.spaces import scope_current
from memories.models import Memory

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise


class WithoutCounts:
    """A filter that lists its choices without facet counts: counting each tag, cluster or agent
    would cost a scan per choice on every page view."""

    def choices(self, changelist):
        counting, changelist.add_facets = changelist.add_facets, False
        try:
            yield from super().choices(changelist)  # type: ignore[misc]
        finally:
            changelist.add_facets = counting


class AgentFilter(WithoutCounts, admin.RelatedFieldListFilter):
    """The agents of the spaces the pages cover: another team's agents are not named here."""

    def field_choices(self, field, request, model_admin) -> list[tuple[str, str | _StrPromise]]:
        return [(str(agent.pk), str(agent)) for agent in agents_of_spaces(space_ids=page_spaces(request))]


class UncountedChoicesFilter(WithoutCounts, admin.ChoicesFieldListFilter):
    pass


class UncountedBooleanFilter(WithoutCounts, admin.BooleanFieldListFilter):
    pass


_COUNTED = ("status", "tier", "memory_type")


class GroupedCountFilter(admin.ChoicesFieldListFilter):
    """Counts beside status, tier and type from a ``GROUP BY status, tier, memory_type`` over
    the list's other filters and search. The three filters share one query unless one of them
    is in use (then it counts over the list without its own choice, as Django's facets do);
    Django's own facets cost a scan per filter, about a second at 100k memories."""

    def get_facet_queryset(self, changelist):
        mine = _COUNTED.index(self.field_path)
        used = any(self.request.GET.getlist(str(p)) for p in self.expected_parameters())
        key = self.field_path if used else "-"
        cache = self.request.__dict__.setdefault("_memory_facets", {})
        if key not in cache:
            queryset = changelist.get_queryset(self.request, exclude_parameters=self.expected_parameters())
            cache[key] = list(queryset.order_by().values_list(*_COUNTED).annotate(n=Count("pk")))
        return {f"{i}__c": sum(row[-1] for row in cache[key] if row[mine] == value)
                for i, (value, _) in enumerate(self.field.flatchoices)}


TOP_TAGS_KEY = "memories:admin:top-tags"


def _top_tags() -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT tag, count(*) FROM {Memory._meta.db_table}, unnest(tags) AS tag "
            "WHERE status = 'active' GROUP BY tag ORDER BY count(*) DESC, tag LIMIT 20"
        )
        return [row[0] for row in cursor.fetchall()]


class TagFilter(WithoutCounts, admin.SimpleListFilter):
    title = "tag"
    parameter_name = "tag"

    def lookups(self, request, model_admin):
        # The 20 commonest tags of active memories: an unnest over every row (~80 ms at 100k), so
        # kept for five minutes; a chosen tag outside the list is added below.
        # Kept per set of spaces read: one team's tags are never offered to another.
        scope = scope_current()
        key = f"{TOP_TAGS_KEY}:{'all' if scope.maintenance else ','.join(map(str, scope.read))}"
        tags = list(cache.get_or_set(key, _top_tags, 300) or [])
        chosen = self.value()
        if chosen and chosen not in tags:
            tags.append(chosen)
        return [(tag, tag) for tag in tags]

    def queryset(self, request, queryset):
        return queryset.filter(tags__contains=[self.value()]) if self.value() else queryset


class ClusterFilter(WithoutCounts, admin.SimpleListFilter):
    title = "cluster"
    parameter_name = "cluster"

    def lookups(self, request, model_admin):
        # The largest clusters (any cluster id works in the URL). The cluster model is reached
        # through the memory's own relation: the memory service does not import the clusters app.
        relation: Any = Memory._meta.get_field("cluster_member")
        membership = relation.related_model
        clusters = membership._meta.get_field("cluster").related_model
        largest = clusters.objects.filter(member_count__gt=1).order_by("-member_count", "pk").values_list(
            "pk", "topic")[:15]
        rows = [(str(pk), topic or f"cluster {pk}") for pk, topic in largest]
        chosen = self.value()
        if chosen and chosen not in {pk for pk, _ in rows}:
            rows.append((chosen, f"cluster {chosen}"))
        return rows

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        # Not a number: no cluster has it, and int() must not turn a bad query string into a 500.
        if not value.isdigit():
            return queryset.none()
        return queryset.filter(cluster_member__cluster_id=int(value))
