from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from memory_addon import views
from memory_addon.api import api

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("chat/", views.section, {"section": "chat"}, name="chat"),
    path("memory/", views.section, {"section": "memory"}, name="memory"),
    path("knowledge/", views.section, {"section": "knowledge"}, name="knowledge"),
    path("inbox/", views.section, {"section": "inbox"}, name="inbox"),
    path("accounts/", include("accounts.urls")),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
]
