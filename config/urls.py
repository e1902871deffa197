from __future__ import annotations

from django.contrib import admin
from django.urls import include, path, reverse_lazy
from django.views.generic import RedirectView

from accounts.bearer import protected_resource_metadata
from config import views
from config.api import api
from host.metrics import metrics_view

urlpatterns = [
    # First: API clients call far more often than pages load, and a path is tried
    # against each pattern in turn.
    path("api/", api.urls),
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the account menu's switch
    path("theme/", views.set_theme, name="set_theme"),
    path("metrics", metrics_view, name="metrics"),
    # Browsers ask for /favicon.ico on their own; Django's and other tools' habits for
    # the sign-in page lead to ours.
    path("favicon.ico", views.favicon),
    path(
        "accounts/login/",
        RedirectView.as_view(url=reverse_lazy("accounts:login"), query_string=True),
    ),
    # RFC 9728: where a client without a token learns how to get one.
    path(".well-known/oauth-protected-resource", protected_resource_metadata),
    path(".well-known/oauth-protected-resource/<path:resource>", protected_resource_metadata),
    path("chat/", include("chat.urls")),
    path("knowledge/", include("knowledge.urls")),
    path("learning/", include("learning.urls")),
    path("", include("memory_addon.urls")),
    path("addons/", include("addons.urls")),
    path("accounts/", include("accounts.urls")),
    path("bridges/", include("bridges.urls")),
    path("admin/", admin.site.urls),
]
handler400 = "config.views.bad_request"
handler404 = "config.views.not_found"
