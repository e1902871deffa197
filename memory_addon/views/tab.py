"""The Memory tab: the notes of one scope, the raw editor, adding, editing, clearing."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.auth import signed_in_user
from addons.selectors import addon_enabled
from host.core.ids import row_id
from host.errors import LimitExceeded, Refusal, StaleBase
from memory_addon.addons import MEMORY_ADDON
from memory_addon.core import entries
from memory_addon.core.diffs import unified_diff
from memory_addon.core.entries import MAX_ENTRY_CHARS
from memory_addon.core.readable_diff import readable_diff
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope
from memory_addon.pages import banners_for, notes_matching, scope_page
from memory_addon.selectors import person_scope_for_user, scopes_for_user
from memory_addon.services.changes import file_write
from memory_addon.services.notes import note_add, note_edit, note_key, notes_clear
from memory_addon.services.policy import policy_for
from memory_addon.services.scopes import index_path, scope_folder


def _scope_choices(request: HttpRequest) -> list[tuple[MemoryScope, str]]:
    user = signed_in_user(request)
    return [
        (scope, scope_folder(scope))
        for scope in scopes_for_user(user).exclude(kind=MemoryScope.Kind.PROJECT)
    ]


@login_required
@require_GET
def memory_tab(request: HttpRequest) -> HttpResponse:
    scope = person_scope_for_user(signed_in_user(request), request.GET.get("scope"))
    return memory_tab_render(request, scope, {})


def memory_tab_render(
    request: HttpRequest, scope: MemoryScope, extra: dict[str, Any]
) -> HttpResponse:
    user = signed_in_user(request)
    policy = policy_for(user)
    page = scope_page(user, scope, policy)
    view = "raw" if request.GET.get("view") == "raw" else "entries"
    context = {
        "page": page,
        "view": view,
        "scopes": _scope_choices(request),
        "banners": banners_for(user),
        "policy": policy,
        "addon_enabled": addon_enabled(user=user, addon=MEMORY_ADDON),
        "raw_text": page.index.content if page.index else "",
        "base_sha256": page.index.sha256 if page.index else "",
        "max_entry_chars": MAX_ENTRY_CHARS,
        "query": request.GET.get("q", "").strip()[:200],
        "changed": _undoable_change(user, request.GET.get("changed", "")),
        **extra,
    }
    if context["query"]:
        context["matches"] = notes_matching(user, context["query"])
    return render(request, "memory/tab.html", context)


def _undoable_change(user: Any, change_id: str) -> ChangeSet | None:
    """The change this page just made, while it can still be undone."""
    pk = row_id(change_id)
    if pk is None:
        return None
    return (
        ChangeSet.objects.filter(pk=pk, user=user)
        .exclude(pk__in=ChangeSet.objects.filter(undoes__isnull=False).values("undoes_id"))
        .first()
    )


@login_required
@require_POST
def memory_raw_save(request: HttpRequest, scope_id: int) -> HttpResponse:
    user = signed_in_user(request)
    scope = person_scope_for_user(user, scope_id)
    text = request.POST.get("content", "").replace("\r\n", "\n")
    base = request.POST.get("base_sha256", "")
    context: dict[str, Any] = {"page": {"scope": scope}, "raw_text": text, "base_sha256": base}
    try:
        file_write(
            user=user,
            scope=scope,
            path=index_path(scope),
            content=text,
            base_sha256=base,
            source=ChangeSet.Source.PAGE,
        )
    except StaleBase:
        context["conflict"] = True
    except LimitExceeded as refusal:
        context["error"] = _over_cap_message(refusal, raw=True)
    except Refusal as refusal:
        context["error"] = refusal.message
    else:
        saved = MemoryFile.objects.get(scope=scope, path=index_path(scope))
        context |= {"saved": True, "raw_text": saved.content, "base_sha256": saved.sha256}
    return render(request, "memory/tab.html#raw_editor", context)


@login_required
@require_POST
def memory_entry_add(request: HttpRequest, scope_id: int) -> HttpResponse:
    user = signed_in_user(request)
    scope = person_scope_for_user(user, scope_id)
    text = request.POST.get("text", "")
    try:
        change_set = note_add(user=user, scope=scope, text=text, source=ChangeSet.Source.PAGE)
    except LimitExceeded as refusal:
        return _tab_with(
            request,
            scope,
            entry_text=text,
            entry_error=_over_cap_message(refusal),
            over_cap={"keep_for": "add", "text": text},
        )
    except Refusal as refusal:
        # The text stays in the field, with the reason beside it.
        return _tab_with(request, scope, entry_text=text, entry_error=refusal.message)
    messages.success(request, _("Note added."))
    return _back_to_tab(scope, change_set)


def _over_cap_message(refusal: LimitExceeded, *, raw: bool = False) -> str:
    """The person's words for a full memory; the refusal's own text lists entries for the model."""
    lines, size = refusal.details.get("lines"), refusal.details.get("size")
    if lines is None or size is None:
        return _("There is no room for this: %(reason)s Delete a note to make room.") % {
            "reason": refusal.message
        }
    hint = (
        _("Shorten the text, then save again; nothing was saved.")
        if raw
        else _("Delete or shorten a note below to make room; your text stays in the field.")
    )
    return _(
        "This memory is full: with this change it would hold %(lines)s of %(max_lines)s lines "
        "and %(size)s of %(max_bytes)s bytes. %(hint)s"
    ) % {
        "hint": hint,
        "lines": lines,
        "max_lines": settings.MEMORY_INDEX_MAX_LINES,
        "size": size,
        "max_bytes": settings.MEMORY_INDEX_MAX_BYTES,
    }


def _key_after_change(scope: MemoryScope, old_key: str) -> str:
    """The key of the same note once other notes moved (keys name a line and the text)."""
    row = MemoryFile.objects.filter(scope=scope, path=index_path(scope)).first()
    text_hash = old_key.partition(":")[2]
    for item in entries.parse_items(row.content if row else ""):
        if note_key(item).partition(":")[2] == text_hash:
            return note_key(item)
    return ""


@login_required
@require_POST
def memory_note_edit(request: HttpRequest, scope_id: int) -> HttpResponse:
    user = signed_in_user(request)
    scope = person_scope_for_user(user, scope_id)
    delete = request.POST.get("action") == "delete"
    key = request.POST.get("key", "")
    try:
        change_set = note_edit(
            user=user,
            scope=scope,
            key=key,
            base_sha256=request.POST.get("base_sha256", ""),
            text=None if delete else request.POST.get("text", ""),
            source=ChangeSet.Source.PAGE,
        )
    except LimitExceeded as refusal:
        return _tab_with(
            request,
            scope,
            edit_key=key,
            edit_text=request.POST.get("text", ""),
            edit_error=_over_cap_message(refusal),
            over_cap={"keep_for": f"edit:{key}", "text": request.POST.get("text", "")},
        )
    except Refusal as refusal:
        return _tab_with(
            request,
            scope,
            edit_key=key,
            edit_text=request.POST.get("text", ""),
            edit_error=refusal.message,
        )
    keep_for = request.POST.get("keep_for", "")
    if delete and keep_for:
        # A delete from the "memory is full" list: the text the person was saving stays.
        kept = request.POST.get("keep_text", "")
        messages.success(request, _("Note deleted. Your text is still there; save it now."))
        extra: dict[str, Any] = {"changed": change_set}
        if keep_for.startswith("edit:"):
            extra |= {"edit_key": _key_after_change(scope, keep_for[5:]), "edit_text": kept}
        else:
            extra |= {"entry_text": kept}
        return memory_tab_render(request, scope, extra)
    messages.success(request, _("Note deleted.") if delete else _("Note saved."))
    return _back_to_tab(scope, change_set)


@login_required
@require_http_methods(["GET", "POST"])
def memory_clear(request: HttpRequest, scope_id: int) -> HttpResponse:
    """Shows what clearing removes first; the clear itself can be undone."""
    user = signed_in_user(request)
    scope = person_scope_for_user(user, scope_id)
    row = MemoryFile.objects.filter(scope=scope, path=index_path(scope)).first()
    if request.method == "POST":
        try:
            change_set = notes_clear(
                user=user,
                scope=scope,
                base_sha256=request.POST.get("base_sha256", ""),
                source=ChangeSet.Source.PAGE,
            )
        except Refusal as refusal:
            messages.error(request, refusal.message)
            return redirect(reverse("memory_clear", args=[scope.pk]))
        messages.success(request, _("This memory is cleared."))
        return _back_to_tab(scope, change_set)
    text = row.content if row else ""
    context = {
        "scope": scope,
        "folder": scope_folder(scope),
        "diff": unified_diff(text, "", path=index_path(scope)) if text.strip() else "",
        "notes": readable_diff(text, ""),
        "base_sha256": row.sha256 if row else "",
    }
    return render(request, "memory/clear_confirm.html", context)


def _back_to_tab(scope: MemoryScope, change_set: ChangeSet) -> HttpResponse:
    return redirect(f"{reverse('memory')}?scope={scope.pk}&changed={change_set.pk}")


def _tab_with(request: HttpRequest, scope: MemoryScope, **extra: Any) -> HttpResponse:
    """The Memory tab again, with what the person typed and why it was refused."""
    response = memory_tab_render(request, scope, extra)
    response.status_code = 422
    return response
