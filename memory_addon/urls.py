"""The memory add-on's pages: Memory tab, History, Files, Inbox, Audit, banks, its add-on page."""

from __future__ import annotations

from django.urls import path

from memory_addon import bank_views, views

urlpatterns = [
    path("memory/", views.memory_tab, name="memory"),
    path("memory/<int:scope_id>/raw/", views.memory_raw_save, name="memory_raw_save"),
    path("memory/<int:scope_id>/entries/", views.memory_entry_add, name="memory_entry_add"),
    path("memory/<int:scope_id>/notes/", views.memory_note_edit, name="memory_note_edit"),
    path("memory/<int:scope_id>/clear/", views.memory_clear, name="memory_clear"),
    path("memory/<int:scope_id>/history/", views.history_page, name="memory_history"),
    path(
        "memory/versions/<int:version_id>/restore/",
        views.version_restore_page,
        name="memory_restore",
    ),
    path(
        "memory/changes/<int:change_set_id>/undo/", views.change_set_undo_page, name="memory_undo"
    ),
    path("memory/audit/", views.audit_page, name="memory_audit"),
    path("memory/agents/<int:agent_id>/", views.agent_memory, name="memory_agent"),
    path("memory/banks/", bank_views.banks_page, name="memory_banks"),
    path("memory/banks/<int:bank_id>/", bank_views.bank_page, name="memory_bank"),
    path(
        "memory/banks/<int:bank_id>/enabled/", bank_views.bank_enabled, name="memory_bank_enabled"
    ),
    path("memory/banks/<int:bank_id>/edit/", bank_views.bank_edit_page, name="memory_bank_edit"),
    path("memory/banks/<int:bank_id>/file/", bank_views.bank_file_save, name="memory_bank_file"),
    path(
        "memory/banks/<int:bank_id>/delete/", bank_views.bank_delete_page, name="memory_bank_delete"
    ),
    path("files/", views.files_page, name="memory_files"),
    path("files/export.zip", views.memory_export_download, name="memory_export"),
    path("files/restore/", views.memory_restore_upload, name="memory_restore_upload"),
    path("files/<int:scope_id>/", views.file_page, name="memory_file"),
    path("inbox/", views.inbox_page, name="inbox"),
    path("inbox/all/", views.inbox_decide_all, name="inbox_decide_all"),
    path("inbox/all/undo/", views.inbox_undo_all, name="inbox_undo_all"),
    path(
        "inbox/<int:proposal_id>/confirm/",
        views.inbox_decide,
        {"decision": "confirm"},
        name="inbox_confirm",
    ),
    path(
        "inbox/<int:proposal_id>/confirm-edited/",
        views.inbox_decide,
        {"decision": "confirm-edited"},
        name="inbox_confirm_edited",
    ),
    path(
        "inbox/<int:proposal_id>/reject/",
        views.inbox_decide,
        {"decision": "reject"},
        name="inbox_reject",
    ),
    path("addons/memory/", views.addon_page, name="memory_addon_page"),
    path("addons/memory/enabled/", views.addon_toggle, name="memory_addon_toggle"),
]
