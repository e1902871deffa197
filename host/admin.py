"""What deletes still owe other servers (host/leftovers.py), for the people who run the
host: a row that keeps its attempts and an error is a removal that keeps failing (the
storage or Qdrant server is down, or its address or key changed)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from host.models import Leftover


@admin.register(Leftover)
class LeftoverAdmin(admin.ModelAdmin[Leftover]):
    list_display = ["kind", "what", "created_at", "attempts", "next_try_at", "last_error"]
    list_filter = ["kind"]
    fields = ("kind", "what", "created_at", "attempts", "next_try_at", "last_error")
    readonly_fields = fields

    @admin.display(description=gettext_lazy("What"))
    def what(self, leftover: Leftover) -> str:
        return leftover.described

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
