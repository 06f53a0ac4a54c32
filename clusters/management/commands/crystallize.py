from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from clusters.models import KnowledgeCluster
from clusters.selectors import cluster_get
from clusters.services import cluster_crystallize, crystallization_step
from core.spaces import HubWideCommand


class Command(HubWideCommand, BaseCommand):
    help = "Crystallize one cluster (--cluster ID) or every ready one."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", type=int)
        parser.add_argument("--limit", type=int, default=10)

    def handle(self, *args, cluster: int | None, limit: int, **options):
        if cluster is None:
            self.stdout.write(str(crystallization_step(limit=limit)))
            return
        try:
            cluster_get(cluster_id=cluster)
        except KnowledgeCluster.DoesNotExist:
            raise CommandError(f"no cluster {cluster}") from None
        version = cluster_crystallize(cluster_id=cluster)
        cluster_row = cluster_get(cluster_id=cluster)
        if version is None:
            self.stdout.write(f"not crystallized: {cluster_row.last_crystallization_result}: "
                              f"{cluster_row.last_crystallization_reason}")
        else:
            self.stdout.write(f"{version.skill.slug} v{version.version}: {version.status} {version.reason}")
