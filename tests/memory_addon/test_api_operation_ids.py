"""The memory API keeps its paths and operation ids (issue 28): clients generated from the
OpenAPI schema name operations by these ids, whichever module of memory_addon/api/ holds them."""

from __future__ import annotations

MEMORY_OPERATIONS = [
    ("get", "/api/memory/scopes", "memory_addon_api_scope_list"),
    ("get", "/api/memory/scopes/{scope_id}/files", "memory_addon_api_file_list"),
    ("get", "/api/memory/scopes/{scope_id}/file", "memory_addon_api_file_read"),
    ("put", "/api/memory/scopes/{scope_id}/file", "memory_addon_api_file_put"),
    ("delete", "/api/memory/scopes/{scope_id}/file", "memory_addon_api_file_remove"),
    ("get", "/api/memory/scopes/{scope_id}/notes", "memory_addon_api_note_list"),
    ("post", "/api/memory/scopes/{scope_id}/notes", "memory_addon_api_note_create"),
    ("put", "/api/memory/scopes/{scope_id}/notes/{key}", "memory_addon_api_note_update"),
    ("delete", "/api/memory/scopes/{scope_id}/notes/{key}", "memory_addon_api_note_remove"),
    ("get", "/api/memory/scopes/{scope_id}/history", "memory_addon_api_history"),
    (
        "post",
        "/api/memory/versions/{version_id}/restore",
        "memory_addon_api_version_restore_endpoint",
    ),
    ("post", "/api/memory/turn-context", "memory_addon_api_turn_context"),
    ("get", "/api/memory/tools", "memory_addon_api_tools"),
    ("post", "/api/memory/tools/call", "memory_addon_api_tool_call"),
    ("get", "/api/memory/proposals", "memory_addon_api_proposal_list"),
    (
        "post",
        "/api/memory/proposals/{proposal_id}/confirm",
        "memory_addon_api_proposal_confirm_endpoint",
    ),
    ("post", "/api/memory/imports", "memory_addon_api_memory_import_endpoint"),
    (
        "post",
        "/api/memory/proposals/{proposal_id}/reject",
        "memory_addon_api_proposal_reject_endpoint",
    ),
    ("get", "/api/memory/change-sets", "memory_addon_api_change_set_list"),
    ("get", "/api/memory/change-sets/{change_set_id}", "memory_addon_api_change_set_detail"),
    (
        "post",
        "/api/memory/change-sets/{change_set_id}/undo",
        "memory_addon_api_change_set_undo_endpoint",
    ),
    ("get", "/api/memory/export", "memory_addon_api_export"),
    ("post", "/api/memory/restore", "memory_addon_api_restore"),
    ("get", "/api/memory/banks/status", "memory_addon_api_bank_status"),
    ("post", "/api/memory/banks/enabled", "memory_addon_api_bank_enabled"),
    ("get", "/api/memory/banks/files", "memory_addon_api_bank_files"),
    ("get", "/api/memory/banks/file", "memory_addon_api_bank_file"),
    ("get", "/api/memory/memory-tool/commands", "memory_addon_api_memory_tool_commands"),
    ("post", "/api/memory/memory-tool", "memory_addon_api_memory_tool"),
    ("get", "/api/chats/changes/audit", "memory_addon_api_audit"),
]


def test_the_memory_api_keeps_its_paths_and_operation_ids(client):
    schema = client.get("/api/openapi.json").json()
    operations = [
        (method, path, operation["operationId"])
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if operation["operationId"].startswith("memory_addon_")
    ]
    assert operations == MEMORY_OPERATIONS
    assert all(
        schema["paths"][path][method]["tags"] == ["memory"] for method, path, _ in MEMORY_OPERATIONS
    )
