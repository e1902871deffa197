from __future__ import annotations

from django.urls import path

from chat import views

urlpatterns = [
    path("", views.chat_home, name="chat"),
    path("new/", views.chat_new, name="chat_new"),
    path("<int:conversation_id>/", views.conversation_page, name="chat_conversation"),
    path("<int:conversation_id>/send/", views.message_send, name="chat_send"),
    path("<int:conversation_id>/regenerate/", views.answer_regenerate, name="chat_regenerate"),
    path("<int:conversation_id>/edit-last/", views.last_message_edit, name="chat_edit_last"),
    path("<int:conversation_id>/settings/", views.conversation_settings, name="chat_settings"),
    path("<int:conversation_id>/model/", views.conversation_profile, name="chat_profile"),
    path(
        "<int:conversation_id>/collections/",
        views.conversation_store_add,
        name="chat_store_add",
    ),
    path(
        "<int:conversation_id>/collections/<int:store_id>/remove/",
        views.conversation_store_remove,
        name="chat_store_remove",
    ),
    path("<int:conversation_id>/attach/", views.conversation_attach, name="chat_attach"),
    path(
        "<int:conversation_id>/attachments/",
        views.conversation_attachments,
        name="chat_attachments",
    ),
    path(
        "<int:conversation_id>/attachments/<int:job_id>/index/",
        views.attachment_index,
        name="chat_attachment_index",
    ),
    path("<int:conversation_id>/rename/", views.conversation_rename, name="chat_rename"),
    path("<int:conversation_id>/delete/", views.conversation_delete, name="chat_delete"),
    path("<int:conversation_id>/export.md", views.conversation_export, name="chat_export"),
    path("<int:conversation_id>/end/", views.temporary_end, name="chat_temporary_end"),
    path("schedules/", views.schedules_page, name="chat_schedules"),
    path("schedules/<int:schedule_id>/run/", views.schedule_run_now, name="chat_schedule_run"),
    path("schedules/<int:schedule_id>/delete/", views.schedule_delete, name="chat_schedule_delete"),
    path("messages/<int:message_id>/", views.message_fragment, name="chat_message"),
    path("messages/<int:message_id>/edit/", views.message_edit, name="chat_message_edit"),
    path("messages/<int:message_id>/stop/", views.message_stop, name="chat_stop"),
    path("questions/<int:question_id>/", views.question_fragment, name="chat_question"),
    path(
        "questions/<int:question_id>/answer/",
        views.question_answer,
        name="chat_question_answer",
    ),
]
