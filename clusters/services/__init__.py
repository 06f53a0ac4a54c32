"""Every write of the cluster service (docs/flow.md#clusters-and-skills).

- ``membership``: assigning memories to clusters and keeping centroids exact;
- ``rebuild``: deterministic rebuild, topic labels, embedding-model changes;
- ``repair``: the pipeline's bounded repair of order effects (merge close clusters, move misfits);
- ``changes``: a cluster change (merge, split, move) kept exact and recorded, and its undo;
- ``manual``: clusters by hand — a curator merges, splits, moves a memory;
- ``suggestions``: merges suggested to a curator (close clusters under the repair's threshold);
- ``crystallize``: skills written from clusters, checked, published or rejected;
- ``search``: skill search for agents, and the text a skill is embedded as;
- ``promote``: a published skill copied to another space by a curator of both;
- ``portable``: what an import of a portable export writes back (clusters with their members,
  skills with their versions, a cluster's skill).
"""

from clusters.services.changes import ClusterChangeError, cluster_change_undo
from clusters.services.crystallize import (
    CrystallizeOutcome,
    cluster_crystallize,
    cluster_crystallize_now,
    crystallization_step,
    skill_version_publish,
    skill_version_reject,
    skills_mark_stale,
)
from clusters.services.manual import cluster_member_move, cluster_split, clusters_merge
from clusters.services.membership import (
    cluster_assign,
    cluster_member_refresh,
    cluster_member_remove,
    clusters_assign_missing,
    clusters_prune_inactive,
)
from clusters.services.portable import (
    ClusterImported,
    MemberImport,
    SkillImported,
    SkillImportError,
    SkillVersionImport,
    cluster_change_import,
    cluster_id_reserve,
    cluster_import,
    cluster_skill_link,
    cluster_suggestion_import,
    skill_import,
)
from clusters.services.promote import SkillPromoted, SkillPromoteError, skill_promote
from clusters.services.rebuild import (
    cluster_relabel,
    clusters_rebuild,
    skills_reembed,
    vector_columns_resize,
)
from clusters.services.repair import clusters_repair
from clusters.services.search import skill_search_text, skills_search
from clusters.services.suggestions import cluster_suggestion_decide

__all__ = [
    "ClusterChangeError",
    "cluster_change_undo",
    "cluster_member_move",
    "cluster_split",
    "cluster_suggestion_decide",
    "clusters_merge",
    "ClusterImported",
    "MemberImport",
    "SkillImported",
    "SkillPromoteError",
    "SkillPromoted",
    "SkillImportError",
    "SkillVersionImport",
    "cluster_assign",
    "CrystallizeOutcome",
    "cluster_crystallize",
    "cluster_crystallize_now",
    "cluster_import",
    "cluster_member_refresh",
    "cluster_member_remove",
    "cluster_relabel",
    "cluster_skill_link",
    "clusters_assign_missing",
    "clusters_prune_inactive",
    "clusters_rebuild",
    "clusters_repair",
    "crystallization_step",
    "skill_import",
    "cluster_change_import",
    "cluster_id_reserve",
    "cluster_suggestion_import",
    "skill_search_text",
    "skill_promote",
    "skill_version_publish",
    "skills_mark_stale",
    "skill_version_reject",
    "skills_reembed",
    "skills_search",
    "vector_columns_resize",
]
