from __future__ import annotations

from django.urls import path

from learning import views

urlpatterns = [
    path("rules/<int:suggestion_id>/save/", views.rule_save, name="learning_rule_save"),
    path("rules/<int:suggestion_id>/postpone/", views.rule_postpone, name="learning_rule_postpone"),
    path("rules/<int:suggestion_id>/never/", views.rule_never, name="learning_rule_never"),
    path("rules/<int:suggestion_id>/undo/", views.rule_undo, name="learning_rule_undo"),
    path("triage/<int:card_id>/proceed/", views.triage_proceed, name="learning_triage_proceed"),
    path("messages/<int:message_id>/remember/", views.remember, name="learning_remember"),
    path("references/", views.references_page, name="learning_references"),
    path("references/add/", views.reference_add, name="learning_reference_add"),
    path("references/search/", views.references_search, name="learning_references_search"),
    path("references/<int:reference_id>/", views.reference_page, name="learning_reference"),
    path(
        "references/<int:reference_id>/send/", views.reference_send, name="learning_reference_send"
    ),
    path("cleanup/", views.cleanup_page, name="learning_cleanup"),
    path("cleanup/jobs/<int:job_id>/", views.cleanup_job, name="learning_cleanup_job"),
    path(
        "cleanup/jobs/<int:job_id>/apply/",
        views.cleanup_decide,
        {"decision": "apply"},
        name="learning_cleanup_apply",
    ),
    path(
        "cleanup/jobs/<int:job_id>/dismiss/",
        views.cleanup_decide,
        {"decision": "dismiss"},
        name="learning_cleanup_dismiss",
    ),
    path(
        "cleanup/<int:scope_id>/<str:action>/",
        views.cleanup_action,
        name="learning_cleanup_action",
    ),
    path(
        "references/<int:reference_id>/remove/",
        views.reference_remove,
        name="learning_reference_remove",
    ),
]
