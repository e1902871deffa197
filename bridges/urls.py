from __future__ import annotations

from django.urls import path

from bridges import views, webhooks

app_name = "bridges"

urlpatterns = [
    path("in/<uuid:public_id>/", webhooks.webhook, name="webhook"),
    path("messaging/", views.messaging_page, name="messaging"),
    path("messaging/<int:binding_id>/rotate/", views.binding_rotate_page, name="rotate"),
    path("messaging/<int:binding_id>/enabled/", views.binding_enabled_page, name="enabled"),
    path("messaging/<int:binding_id>/delete/", views.binding_delete_page, name="delete"),
    path(
        "messaging/<int:binding_id>/deliveries/",
        views.binding_deliveries,
        name="deliveries",
    ),
    path("events/", views.events_page, name="events"),
    path("events/<int:endpoint_id>/delete/", views.endpoint_delete_page, name="endpoint_delete"),
    path("events/log/<int:event_id>/redeliver/", views.event_redeliver_page, name="redeliver"),
]
