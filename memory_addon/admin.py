from __future__ import annotations

from django.contrib import admin

from memory_addon.models import ChangeSet, MemoryFile, MemoryScope, Proposal


@admin.register(MemoryScope)
class MemoryScopeAdmin(admin.ModelAdmin[MemoryScope]):
    list_display = ["__str__", "kind", "owner", "agent", "binding", "project_key", "enabled"]
    list_filter = ["kind", "enabled"]
    search_fields = ["owner__username", "project_key"]


@admin.register(MemoryFile)
class MemoryFileAdmin(admin.ModelAdmin[MemoryFile]):
    # Read-only here: edits go through the pages and API, which keep history and checks.
    list_display = ["path", "scope", "size", "updated_at"]
    search_fields = ["path", "scope__owner__username"]
    readonly_fields = ["scope", "path", "content", "sha256", "size", "machine_sha256"]

    def has_add_permission(self, request: object) -> bool:
        return False


@admin.register(ChangeSet)
class ChangeSetAdmin(admin.ModelAdmin[ChangeSet]):
    list_display = ["__str__", "user", "origin", "source", "summary", "created_at"]
    list_filter = ["origin", "source"]


@admin.register(Proposal)
class ProposalAdmin(admin.ModelAdmin[Proposal]):
    list_display = ["__str__", "user", "state", "source", "created_at", "expires_at"]
    list_filter = ["state", "source"]
