from django.urls import path

from clusters import api, api_downloads

urlpatterns = [
    path("clusters", api.ClusterListApi.as_view(), name="cluster-list"),
    path("clusters/<int:cluster_id>", api.ClusterDetailApi.as_view(), name="cluster-detail"),
    path("clusters/<int:cluster_id>/crystallize", api.ClusterCrystallizeApi.as_view(), name="cluster-crystallize"),
    path("skills", api.SkillListApi.as_view(), name="skill-list"),
    path("skills/search", api.SkillSearchApi.as_view(), name="skill-search"),
    path("skills/<str:slug>", api.SkillDetailApi.as_view(), name="skill-detail"),
    path("skills/<str:slug>/SKILL.md", api_downloads.SkillFileApi.as_view(), name="skill-file"),
    path("skills/<str:slug>/package.zip", api_downloads.SkillPackageApi.as_view(), name="skill-package"),
    path("skills/<str:slug>/versions", api.SkillVersionsApi.as_view(), name="skill-versions"),
    path("skills/<str:slug>/versions/<int:version>/publish", api.SkillPublishApi.as_view(), name="skill-publish"),
]
