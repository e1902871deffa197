"""The memory add-on's pages: Memory tab, History, Files, Inbox, Audit, banks, its add-on page."""

from __future__ import annotations

from django.urls import path

from memory_addon.views import addon, agents, audit, banks, files, history, inbox, tab

urlpatterns = [
    path("memory/", tab.memory_tab, name="memory"),
    path("memory/<int:scope_id>/raw/", tab.memory_raw_save, name="memory_raw_save"),
    path("memory/<int:scope_id>/entries/", tab.memory_entry_add, name="memory_entry_add"),
    path("memory/<int:scope_id>/notes/", tab.memory_note_edit, name="memory_note_edit"),
    path("memory/<int:scope_id>/clear/", tab.memory_clear, name="memory_clear"),
    path("memory/<int:scope_id>/history/", history.history_page, name="memory_history"),
    path(
        "memory/versions/<int:version_id>/restore/",
        history.version_restore_page,
        name="memory_restore",
    ),
    path(
        "memory/changes/<int:change_set_id>/undo/", history.change_set_undo_page, name="memory_undo"
    ),
    path("memory/audit/", audit.audit_page, name="memory_audit"),
    path("memory/agents/<int:agent_id>/", agents.agent_memory, name="memory_agent"),
    path("memory/banks/", banks.banks_page, name="memory_banks"),
    path("memory/banks/<int:bank_id>/", banks.bank_page, name="memory_bank"),
    path("memory/banks/<int:bank_id>/enabled/", banks.bank_enabled, name="memory_bank_enabled"),
    path("memory/banks/<int:bank_id>/edit/", banks.bank_edit_page, name="memory_bank_edit"),
    path("memory/banks/<int:bank_id>/file/", banks.bank_file_save, name="memory_bank_file"),
    path("memory/banks/<int:bank_id>/delete/", banks.bank_delete_page, name="memory_bank_delete"),
    path("files/", files.files_page, name="memory_files"),
    path("files/export.zip", files.memory_export_download, name="memory_export"),
    path("files/restore/", files.memory_restore_upload, name="memory_restore_upload"),
    path("files/<int:scope_id>/", files.file_page, name="memory_file"),
    path("inbox/", inbox.inbox_page, name="inbox"),
    path("inbox/all/", inbox.inbox_decide_all, name="inbox_decide_all"),
    path("inbox/import/", inbox.inbox_import, name="inbox_import"),
    path("inbox/all/undo/", inbox.inbox_undo_all, name="inbox_undo_all"),
    path(
        "inbox/<int:proposal_id>/confirm/",
        inbox.inbox_decide,
        {"decision": "confirm"},
        name="inbox_confirm",
    ),
    path(
        "inbox/<int:proposal_id>/confirm-edited/",
        inbox.inbox_decide,
        {"decision": "confirm-edited"},
        name="inbox_confirm_edited",
    ),
    path(
        "inbox/<int:proposal_id>/reject/",
        inbox.inbox_decide,
        {"decision": "reject"},
        name="inbox_reject",
    ),
    path("addons/memory/", addon.addon_page, name="memory_addon_page"),
    path("addons/memory/enabled/", addon.addon_toggle, name="memory_addon_toggle"),
]
