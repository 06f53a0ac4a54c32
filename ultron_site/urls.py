from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from agents import api as agents_api
from clusters import api_downloads as clusters_downloads
from memories import api as memories_api
from ultron_site import api as site_api

# A URL under /api/ that no route matches still answers in the API's error shape.
handler404 = "ultron_site.api_errors.not_found"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False)),
    path("admin/", admin.site.urls),
    path("api/health", site_api.HealthApi.as_view(), name="health"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/memories/export.md", clusters_downloads.MemoryFileApi.as_view(), name="memory-export-md"),
    path("api/memories/", include("memories.urls")),
    path("api/", include("ingestion.urls")),
    path("api/", include("clusters.urls")),
    path("api/context", memories_api.ContextApi.as_view(), name="context"),
    path("api/spaces", agents_api.SpaceListApi.as_view(), name="spaces"),
]
