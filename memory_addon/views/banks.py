"""The project banks screen (M17): a person's banks, their files, and what an agent sees."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from html import unescape
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from accounts.auth import signed_in_user
from host.core.markdown import render_markdown
from host.errors import Refusal, StaleBase
from memory_addon.models import BankSwitch, ChangeSet, MemoryFile, MemoryScope
from memory_addon.pages import banners_for
from memory_addon.selectors import bank_for_user, banks_for_user
from memory_addon.services.changes import clean_path, file_delete, file_write
from memory_addon.services.context import bank_agent_view
from memory_addon.services.scopes import (
    BANK_INDEX_PATH,
    bank_create,
    bank_delete,
    bank_edit,
    bank_switch,
    scope_folder,
)

# A relative link to another Markdown file of the bank (the sanitizer already dropped
# schemes it does not allow); the preview opens it on this page instead of a 404.
_TOPIC_HREF = re.compile(r'href="([^":/?#<>\s]+\.md)"')


def _preview(content: str) -> str:
    return _TOPIC_HREF.sub(
        lambda match: f'href="?path={quote(unescape(match.group(1)))}"', render_markdown(content)
    )


# A limit counts as "near" from this share on; the page warns before a write is refused.
NEAR_LIMIT = 0.9


@dataclass(frozen=True)
class Meter:
    used: int
    limit: int

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.used / self.limit)) if self.limit else 100

    @property
    def state(self) -> str:
        if self.used > self.limit:
            return "over"
        if self.used >= self.limit * NEAR_LIMIT:
            return "near"
        return "ok"


@dataclass(frozen=True)
class BankRow:
    bank: MemoryScope
    folder: str
    files: Meter
    size: Meter
    warnings: list[str]


def _bank_row(
    bank: MemoryScope, *, largest: int = 0, index_lines: int = 0, index_bytes: int = 0
) -> BankRow:
    files = Meter(getattr(bank, "file_count", 0), settings.MEMORY_BANK_MAX_FILES)
    size = Meter(getattr(bank, "total_bytes", 0), settings.MEMORY_BANK_MAX_BYTES)
    warnings = []
    if files.state == "over":
        warnings.append(_("More files than the limit: new files are refused."))
    elif files.state == "near":
        warnings.append(_("Nearly at the file limit."))
    if size.state == "over":
        warnings.append(_("Larger than the size limit: growing a file is refused."))
    elif size.state == "near":
        warnings.append(_("Nearly at the size limit."))
    if largest > settings.MEMORY_BANK_FILE_MAX_BYTES:
        warnings.append(_("A file is larger than the per-file limit."))
    if (
        index_lines > settings.MEMORY_BANK_STARTUP_MAX_LINES
        or index_bytes > settings.MEMORY_BANK_STARTUP_MAX_BYTES
    ):
        warnings.append(
            _("MEMORY.md is longer than the startup context: the agent sees only its beginning.")
        )
    return BankRow(bank=bank, folder=scope_folder(bank), files=files, size=size, warnings=warnings)


def _bank_url(bank: MemoryScope, **query: str) -> str:
    url = reverse("memory_bank", args=[bank.pk])
    return f"{url}?{urlencode(query)}" if query else url


# --- The list ------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def banks_page(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    form = {"project_key": "", "project_name": ""}
    error = ""
    if request.method == "POST":
        form = {
            "project_key": request.POST.get("project_key", ""),
            "project_name": request.POST.get("project_name", ""),
        }
        try:
            bank = bank_create(
                user=user, project_key=form["project_key"], project_name=form["project_name"]
            )
        except Refusal as refusal:
            error = refusal.message
        else:
            messages.success(
                request, _("Project bank %(name)s created.") % {"name": scope_folder(bank)}
            )
            return redirect(_bank_url(bank))
    rows = [_bank_row(bank) for bank in banks_for_user(user)]
    context = {
        "rows": rows,
        "form": form,
        "error": error,
        "limits": _limits(),
        "banners": banners_for(user),
    }
    return render(request, "memory/banks.html", context, status=422 if error else 200)


def _limits() -> dict[str, int]:
    return {
        "files": settings.MEMORY_BANK_MAX_FILES,
        "bytes": settings.MEMORY_BANK_MAX_BYTES,
        "file_bytes": settings.MEMORY_BANK_FILE_MAX_BYTES,
        "banks": settings.MEMORY_MAX_BANKS_PER_PERSON,
        "startup_lines": settings.MEMORY_BANK_STARTUP_MAX_LINES,
        "startup_bytes": settings.MEMORY_BANK_STARTUP_MAX_BYTES,
    }


# --- One bank ------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryItem:
    at: datetime
    switch: BankSwitch | None = None
    change: ChangeSet | None = None


def _history(bank: MemoryScope, limit: int = 20) -> list[HistoryItem]:
    switches = [HistoryItem(at=s.created_at, switch=s) for s in bank.switches.all()[:limit]]
    changes = [
        HistoryItem(at=c.created_at, change=c)
        for c in ChangeSet.objects.filter(scope=bank).prefetch_related("changes")[:limit]
    ]
    return sorted([*switches, *changes], key=lambda item: item.at, reverse=True)[:limit]


@login_required
@require_http_methods(["GET"])
def bank_page(request: HttpRequest, bank_id: int) -> HttpResponse:
    return _bank_render(request, bank_for_user(signed_in_user(request), bank_id), {})


def _bank_render(
    request: HttpRequest,
    bank: MemoryScope,
    extra: dict[str, Any],
    *,
    status: int = 200,
    path: str | None = None,
    editing: bool | None = None,
) -> HttpResponse:
    user = signed_in_user(request)
    files = list(MemoryFile.objects.filter(scope=bank).only("path", "size", "updated_at"))
    index = next((row for row in files if row.path == BANK_INDEX_PATH), None)
    selected_path = request.GET.get("path", "") if path is None else path
    if not selected_path and index is not None:
        selected_path = BANK_INDEX_PATH
    selected = None
    if selected_path:
        selected = MemoryFile.objects.filter(scope=bank, path=selected_path).first()
    index_lines = 0
    if index is not None:
        index_row = selected if selected and selected.path == BANK_INDEX_PATH else None
        content = (index_row or MemoryFile.objects.get(pk=index.pk)).content
        index_lines = len(content.split("\n"))
    row = _bank_row(
        bank,
        largest=max((f.size for f in files), default=0),
        index_lines=index_lines,
        index_bytes=index.size if index else 0,
    )
    if editing is None:
        editing = request.GET.get("edit") == "1" or request.GET.get("new") == "1"
    view = request.GET.get("view", "")
    context: dict[str, Any] = {
        "row": row,
        "bank": bank,
        "files": files,
        "selected": selected,
        "selected_path": selected_path,
        "rendered": _preview(selected.content) if selected else "",
        "editing": editing,
        "new_file": editing and selected is None,
        "confirm_delete_file": request.GET.get("confirm") == "delete-file" and selected,
        "view": "agent" if view == "agent" else "files",
        "history": _history(bank),
        "limits": _limits(),
        "banners": banners_for(user),
        "edit_form": {"project_key": bank.project_key, "project_name": bank.project_name},
        **extra,
    }
    if context["view"] == "agent":
        context["agent"] = bank_agent_view(user, bank)
    if context["editing"] and selected and "text" not in context:
        context["text"] = selected.content
        context["base_sha256"] = selected.sha256
    return render(request, "memory/banks_detail.html", context, status=status)


@login_required
@require_POST
def bank_enabled(request: HttpRequest, bank_id: int) -> HttpResponse:
    user = signed_in_user(request)
    bank = bank_for_user(user, bank_id)
    value = request.POST.get("enabled")
    if value not in ("0", "1"):  # a malformed form must not switch the bank off
        return HttpResponse(_("Choose to turn the bank on or off."), status=400)
    enabled = value == "1"
    bank_switch(user=user, scope=bank, enabled=enabled)
    messages.success(
        request,
        _("Project memory is on: the agent gets this bank's startup context and tools.")
        if enabled
        else _("Project memory is off: the agent gets nothing from this bank; the files are kept."),
    )
    return redirect(_bank_url(bank))


@login_required
@require_POST
def bank_edit_page(request: HttpRequest, bank_id: int) -> HttpResponse:
    user = signed_in_user(request)
    bank = bank_for_user(user, bank_id)
    form = {
        "project_key": request.POST.get("project_key", ""),
        "project_name": request.POST.get("project_name", ""),
    }
    try:
        bank_edit(
            user=user,
            scope=bank,
            project_key=form["project_key"],
            project_name=form["project_name"],
        )
    except Refusal as refusal:
        extra = {"edit_form": form, "edit_error": refusal.message}
        return _bank_render(request, bank, extra, status=422, path="")
    messages.success(request, _("Saved the bank's name and project key."))
    return redirect(_bank_url(bank))


@login_required
@require_POST
def bank_file_save(request: HttpRequest, bank_id: int) -> HttpResponse:
    user = signed_in_user(request)
    bank = bank_for_user(user, bank_id)
    action = request.POST.get("action", "save")
    raw_path = request.POST.get("path", "")
    base = request.POST.get("base_sha256", "")
    text = request.POST.get("content", "").replace("\r\n", "\n")
    try:
        path = clean_path(raw_path, bank=True)
        if action == "delete":
            file_delete(
                user=user, scope=bank, path=path, base_sha256=base, source=ChangeSet.Source.PAGE
            )
            messages.success(
                request, _("Deleted %(path)s. It stays in the history.") % {"path": path}
            )
            return redirect(_bank_url(bank))
        file_write(
            user=user,
            scope=bank,
            path=path,
            content=text,
            base_sha256=base,
            source=ChangeSet.Source.PAGE,
        )
    except Refusal as refusal:
        conflict = isinstance(refusal, StaleBase)
        extra = {
            "text": text,
            "base_sha256": base,
            "file_error": "" if conflict else refusal.message,
            "conflict": conflict,
        }
        return _bank_render(
            request, bank, extra, status=409 if conflict else 422, path=raw_path, editing=True
        )
    if request.POST.get("enable") == "1" and not bank.enabled:
        # The first file of a bank that is off: the person chose "Turn on and save".
        bank_switch(user=user, scope=bank, enabled=True)
        messages.success(request, _("Saved %(path)s and turned the bank on.") % {"path": path})
    else:
        messages.success(request, _("Saved %(path)s.") % {"path": path})
    return redirect(_bank_url(bank, path=path))


@login_required
@require_http_methods(["GET", "POST"])
def bank_delete_page(request: HttpRequest, bank_id: int) -> HttpResponse:
    """Asks first; deleting removes the files and their history for good."""
    user = signed_in_user(request)
    bank = bank_for_user(user, bank_id)
    if request.method == "POST":
        folder = scope_folder(bank)
        bank_delete(user=user, scope=bank)
        messages.success(request, _("Deleted the project bank %(name)s.") % {"name": folder})
        return redirect("memory_banks")
    return render(request, "memory/banks_delete.html", {"row": _bank_row(bank)})
