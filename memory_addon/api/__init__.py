"""The memory add-on's JSON API: files, turn context, tools, proposals, history, settings.

One router per subject, mounted on `router` in the order the schema lists them; the audit
of automatic changes is on `chats_router` (mounted at /chats).
"""

from __future__ import annotations

from ninja import Router

from memory_addon.api import backup, banks, notes, proposals, turns

PARTS = (notes, turns, proposals, backup, banks)

router = Router(tags=["memory"])
for part in PARTS:
    router.add_router("/", part.router)
chats_router = proposals.chats_router

# Ninja names an operation after its function's module; the ids are from before this
# package was split into modules, and clients generated from the schema name them.
for part_router in (*(part.router for part in PARTS), chats_router):
    for path_view in part_router.path_operations.values():
        for operation in path_view.operations:
            operation.operation_id = f"memory_addon_api_{operation.view_func.__name__}"

__all__ = ["chats_router", "router"]
