from __future__ import annotations

from django.contrib import admin

from knowledge.models import FolderGrant, Job, Source, Store, StoreShare


class StoreShareInline(admin.TabularInline[StoreShare, Store]):
    model = StoreShare
    extra = 0
    raw_id_fields = ["user", "organization"]


@admin.register(Store)
class StoreAdmin(admin.ModelAdmin[Store]):
    list_display = ["name", "owner", "provider", "model_name", "dimension"]
    inlines = [StoreShareInline]


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin[Source]):
    list_display = ["path", "store", "kind", "status", "enabled", "file_count", "chunk_count"]
    list_filter = ["status", "kind", "enabled"]
    exclude = ["hashes"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin[Job]):
    list_display = ["__str__", "store", "kind", "state", "progress", "created_at"]
    list_filter = ["kind", "state"]
    exclude = ["review"]


@admin.register(FolderGrant)
class FolderGrantAdmin(admin.ModelAdmin[FolderGrant]):
    """Who may index which server folder; without a grant only superusers may (K2)."""

    list_display = ["path", "user", "organization", "note", "created_at"]
    list_filter = ["organization"]
    search_fields = ["path", "user__username", "organization__name"]
    raw_id_fields = ["user"]
