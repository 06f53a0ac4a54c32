from django.urls import path

from ingestion import api

urlpatterns = [
    path("ingest", api.IngestApi.as_view(), name="ingest"),
    path("ingest/text", api.IngestTextApi.as_view(), name="ingest-text"),
    path("ingest/<uuid:job_id>", api.IngestJobApi.as_view(), name="ingest-job"),
    path("trajectories/export", api.TrajectoryExportApi.as_view(), name="trajectory-export"),
]
