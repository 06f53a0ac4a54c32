from django.urls import path

from memories import api, api_feedback

urlpatterns = [
    path("", api.MemoryListApi.as_view(), name="memory-list"),
    path("upload", api.MemoryUploadApi.as_view(), name="memory-upload"),
    path("search", api.MemorySearchApi.as_view(), name="memory-search"),
    path("details", api.MemoryDetailsApi.as_view(), name="memory-details"),
    path("stats", api.MemoryStatsApi.as_view(), name="memory-stats"),
    path("<uuid:memory_id>/feedback", api_feedback.MemoryFeedbackApi.as_view(), name="memory-feedback"),
]
