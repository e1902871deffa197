from __future__ import annotations

from django.urls import path

from learning import views

urlpatterns = [
    path("rules/<int:suggestion_id>/save/", views.rule_save, name="learning_rule_save"),
    path("rules/<int:suggestion_id>/postpone/", views.rule_postpone, name="learning_rule_postpone"),
    path("rules/<int:suggestion_id>/never/", views.rule_never, name="learning_rule_never"),
    path("rules/<int:suggestion_id>/undo/", views.rule_undo, name="learning_rule_undo"),
    path("messages/<int:message_id>/remember/", views.remember, name="learning_remember"),
]
