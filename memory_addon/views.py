"""htmx pages of the memory add-on: Memory tab, History, Files, Inbox, Audit, add-on page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.auth import signed_in_user
from accounts.selectors import agent_for_user
from host import filestore
from host.core.ids import row_id, row_ids
from host.core.markdown import render_markdown
from host.errors import LimitExceeded, MemoryRefusal, StaleBase
from host.htmx import HtmxHttpRequest
from memory_addon.addons import MEMORY_ADDON
from memory_addon.core import entries
from memory_addon.core.diffs import unified_diff
from memory_addon.core.entries import MAX_ENTRY_CHARS
from memory_addon.core.readable_diff import readable_diff
from memory_addon.live import notice_context
from memory_addon.models import ChangeSet, FileChange, MemoryFile, MemoryScope
from memory_addon.pages import banners_for, notes_matching, scope_page
from memory_addon.selectors import (
    PERSON_KINDS,
    change_set_for_user,
    change_sets_for_user,
    pending_proposals,
    proposal_for_user,
    proposals_with_diffs,
    scope_for_user,
    scopes_for_user,
    version_for_user,
    versions_for_scope,
)
from memory_addon.services.backup import MAX_ARCHIVE_BYTES, memory_export, memory_restore
from memory_addon.services.changes import (
    change_set_undo,
    change_sets_undo,
    clean_path,
    file_delete,
    file_write,
    version_restore,
)
from memory_addon.services.notes import note_add, note_edit, note_key, notes_clear
from memory_addon.services.policy import policy_for
from memory_addon.services.proposals import (
    proposal_confirm,
    proposal_reject,
    proposals_decide_all,
    proposals_reopen,
)
from memory_addon.services.scopes import (
    agent_scope_find,
    index_path,
    scope_folder,
    user_scope_find,
)
from memory_addon.services.user_settings import addon_enabled, addon_set_enabled


def _owned_scope(request: HttpRequest, scope_id: int | str | None) -> MemoryScope:
    user = signed_in_user(request)
    if not scope_id:
        own = user_scope_find(user)
        if own is None:  # made with the person; only a row removed by hand lacks it
            raise Http404("Your memory scope is missing; ask an administrator to run migrate.")
        return own
    if isinstance(scope_id, str) and not scope_id.isdecimal():
        # A hand-edited ?scope= is just a scope that does not exist, not a server error.
        raise Http404("There is no memory scope with that number.")
    return scope_for_user(user, scope_id, PERSON_KINDS)


def _scope_choices(request: HttpRequest) -> list[tuple[MemoryScope, str]]:
    user = signed_in_user(request)
    return [
        (scope, scope_folder(scope))
        for scope in scopes_for_user(user).exclude(kind=MemoryScope.Kind.PROJECT)
    ]


# --- Memory tab --------------------------------------------------------------


@login_required
@require_GET
def memory_tab(request: HttpRequest) -> HttpResponse:
    return memory_tab_render(request, _owned_scope(request, request.GET.get("scope")), {})


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
    scope = _owned_scope(request, scope_id)
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
    except MemoryRefusal as refusal:
        context["error"] = refusal.message
    else:
        saved = MemoryFile.objects.get(scope=scope, path=index_path(scope))
        context |= {"saved": True, "raw_text": saved.content, "base_sha256": saved.sha256}
    return render(request, "memory/tab.html#raw_editor", context)


@login_required
@require_POST
def memory_entry_add(request: HttpRequest, scope_id: int) -> HttpResponse:
    user = signed_in_user(request)
    scope = _owned_scope(request, scope_id)
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
    except MemoryRefusal as refusal:
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
    scope = _owned_scope(request, scope_id)
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
    except MemoryRefusal as refusal:
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
    scope = _owned_scope(request, scope_id)
    row = MemoryFile.objects.filter(scope=scope, path=index_path(scope)).first()
    if request.method == "POST":
        try:
            change_set = notes_clear(
                user=user,
                scope=scope,
                base_sha256=request.POST.get("base_sha256", ""),
                source=ChangeSet.Source.PAGE,
            )
        except MemoryRefusal as refusal:
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


# --- History and audit -------------------------------------------------------


@login_required
@require_GET
def history_page(request: HttpRequest, scope_id: int) -> HttpResponse:
    scope = _owned_scope(request, scope_id)
    versions = versions_for_scope(scope)
    change_ids = {v["change_set_id"] for v in versions}
    undone = set(
        ChangeSet.objects.filter(undoes_id__in=change_ids).values_list("undoes_id", flat=True)
    )
    for version in versions:
        version["undoable"] = (
            version["origin"] in (ChangeSet.Origin.AUTOMATIC, ChangeSet.Origin.ASSISTANT)
            and version["change_set_id"] not in undone
        )
    return render(
        request,
        "memory/history.html",
        {"scope": scope, "folder": scope_folder(scope), "versions": versions},
    )


def _owned_version(request: HttpRequest, version_id: int) -> FileChange:
    return version_for_user(signed_in_user(request), version_id)


@login_required
@require_http_methods(["GET", "POST"])
def version_restore_page(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _owned_version(request, version_id)
    if request.method == "GET":
        current = MemoryFile.objects.filter(scope=version.scope, path=version.path).first()
        diff = unified_diff(
            current.content if current else "", version.after or "", path=version.path
        )
        notes = readable_diff(current.content if current else "", version.after or "")
        return render(
            request,
            "memory/restore_confirm.html",
            {"version": version, "diff": diff, "notes": notes},
        )
    try:
        version_restore(user=signed_in_user(request), version=version, source=ChangeSet.Source.PAGE)
    except MemoryRefusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(
            request,
            _("Restored %(path)s. The text it replaced stays in the history.")
            % {"path": version.path},
        )
    return redirect("memory_history", scope_id=version.scope_id)


@login_required
@require_POST
def change_set_undo_page(request: HtmxHttpRequest, change_set_id: int) -> HttpResponse:
    user = signed_in_user(request)
    change_set = change_set_for_user(user, change_set_id)
    if request.htmx:
        # From a live notice: the answer replaces the notice and the page stays.
        try:
            undo = change_set_undo(user=user, change_set=change_set, source=ChangeSet.Source.PAGE)
        except MemoryRefusal as refusal:
            context = {**notice_context(change_set), "undo": False, "error": refusal.message}
        else:
            context = notice_context(undo)
        return render(request, "memory/_live_notice.html", context)
    try:
        change_set_undo(user=user, change_set=change_set, source=ChangeSet.Source.PAGE)
    except MemoryRefusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(request, _("Change undone."))
    back = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(back if safe else reverse("memory_audit"))


@login_required
@require_GET
def audit_page(request: HttpRequest) -> HttpResponse:
    change_sets = list(
        change_sets_for_user(signed_in_user(request))
        .filter(origin=ChangeSet.Origin.AUTOMATIC)
        .select_related("scope__agent", "scope__binding")[:200]
    )
    rows = [(cs, scope_folder(cs.scope)) for cs in change_sets]
    return render(request, "memory/audit.html", {"rows": rows})


# --- Files -------------------------------------------------------------------


@login_required
@require_GET
def files_page(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    scopes = list(scopes_for_user(user))
    files = MemoryFile.objects.filter(scope__in=scopes).only(
        "scope_id", "path", "size", "updated_at"
    )
    by_scope: dict[int, list[MemoryFile]] = {}
    for row in files:
        by_scope.setdefault(row.scope_id, []).append(row)
    tree = [(scope, scope_folder(scope), by_scope.get(scope.pk, [])) for scope in scopes]
    return render(request, "memory/files.html", {"tree": tree})


@login_required
@require_http_methods(["GET", "POST"])
def file_page(request: HttpRequest, scope_id: int) -> HttpResponse:
    user = signed_in_user(request)
    scope = scope_for_user(user, scope_id)
    try:
        path = clean_path(request.GET.get("path") or request.POST.get("path") or "")
    except MemoryRefusal as refusal:
        messages.error(request, refusal.message)
        return redirect("memory_files")
    row = MemoryFile.objects.filter(scope=scope, path=path).first()
    context: dict[str, Any] = {
        "scope": scope,
        "folder": scope_folder(scope),
        "path": path,
        "row": row,
        "text": row.content if row else "",
        "base_sha256": row.sha256 if row else "",
        "editing": request.GET.get("edit") == "1" or row is None,
        # The rendered view shows notes, never the entry fence comments around them.
        "rendered": render_markdown(entries.without_fences(row.content)) if row else "",
    }
    if request.method == "POST":
        action = request.POST.get("action")
        base = request.POST.get("base_sha256", "")
        try:
            if action == "delete":
                file_delete(
                    user=user,
                    scope=scope,
                    path=path,
                    base_sha256=base,
                    source=ChangeSet.Source.PAGE,
                )
                messages.success(
                    request, _("Deleted %(path)s. It stays in the history.") % {"path": path}
                )
                return redirect("memory_files")
            text = request.POST.get("content", "").replace("\r\n", "\n")
            context |= {"text": text, "editing": True}
            file_write(
                user=user,
                scope=scope,
                path=path,
                content=text,
                base_sha256=base,
                source=ChangeSet.Source.PAGE,
            )
        except StaleBase:
            context["conflict"] = True
        except MemoryRefusal as refusal:
            context["error"] = refusal.message
        else:
            messages.success(request, _("Saved %(path)s.") % {"path": path})
            return redirect(f"{reverse('memory_file', args=[scope.pk])}?path={path}")
    if request.GET.get("confirm") == "delete":
        context["confirm_delete"] = True
    return render(request, "memory/file.html", context)


# --- Inbox -------------------------------------------------------------------


@login_required
@require_GET
def inbox_page(request: HtmxHttpRequest) -> HttpResponse:
    return _inbox_render(request, {})


def _inbox_render(request: HtmxHttpRequest, extra: dict[str, Any]) -> HttpResponse:
    """The Inbox, or only its body (notice, bulk buttons, cards) for an htmx request."""
    user = signed_in_user(request)
    context = {
        "proposals": proposals_with_diffs(pending_proposals(user)),
        "max_entry_chars": MAX_ENTRY_CHARS,
        "banners": banners_for(user),
        **extra,
    }
    # Only the bulk buttons swap the body; an htmx GET (a page catching up after its
    # socket dropped) takes the whole page.
    partial = request.method == "POST" and bool(request.htmx)
    template = "memory/inbox.html#inbox_body" if partial else "memory/inbox.html"
    return render(request, template, context)


def _posted_ids(request: HttpRequest, name: str) -> list[int]:
    return row_ids(request.POST.getlist(name))


@login_required
@require_POST
def inbox_decide_all(request: HtmxHttpRequest) -> HttpResponse:
    """Confirm all / Reject all: the cards the page showed, as one step with one Undo."""
    user = signed_in_user(request)
    decision = request.POST.get("decision", "")
    if decision not in ("confirm", "reject"):
        return HttpResponse(_("Choose Confirm all or Reject all."), status=400)
    result = proposals_decide_all(
        user=user,
        proposal_ids=_posted_ids(request, "proposal"),
        decision="confirm" if decision == "confirm" else "reject",
    )
    count = len(result.decided)
    if result.decision == "confirm":
        text = ngettext(
            "Saved %(count)s note to memory.", "Saved %(count)s notes to memory.", count
        ) % {"count": count}
    else:
        text = ngettext(
            "Rejected %(count)s proposal; nothing was saved.",
            "Rejected %(count)s proposals; nothing was saved.",
            count,
        ) % {"count": count}
    notice = {
        "text": text,
        "decision": result.decision,
        "change_sets": [change_set.pk for change_set in result.change_sets],
        "proposals": [proposal.pk for proposal in result.decided],
        "refused": result.refused,
    }
    return _inbox_render(request, {"bulk": notice})


@login_required
@require_POST
def inbox_undo_all(request: HtmxHttpRequest) -> HttpResponse:
    """Undo of a Confirm all (its change sets, together) or a Reject all (they wait again)."""
    user = signed_in_user(request)
    error = ""
    if request.POST.get("decision") == "reject":
        reopened = proposals_reopen(user=user, proposal_ids=_posted_ids(request, "proposal"))
        text = ngettext(
            "Undone: %(count)s proposal waits again.",
            "Undone: %(count)s proposals wait again.",
            len(reopened),
        ) % {"count": len(reopened)}
    else:
        change_sets = list(
            ChangeSet.objects.select_related("scope").filter(
                pk__in=_posted_ids(request, "change_set"), user=user
            )
        )
        try:
            undone = change_sets_undo(
                user=user, change_sets=change_sets, source=ChangeSet.Source.PAGE
            )
        except MemoryRefusal as refusal:
            error, text = refusal.message, ""
        else:
            text = ngettext(
                "Undone: %(count)s note is no longer saved.",
                "Undone: %(count)s notes are no longer saved.",
                len(undone),
            ) % {"count": len(undone)}
    return _inbox_render(request, {"bulk": {"text": text, "error": error, "undone": True}})


@login_required
@require_POST
def inbox_decide(request: HttpRequest, proposal_id: int, decision: str) -> HttpResponse:
    user = signed_in_user(request)
    proposal = proposal_for_user(user, proposal_id)
    try:
        if decision == "reject":
            proposal_reject(user=user, proposal=proposal)
            messages.success(request, _("Proposal rejected; nothing was saved."))
        else:
            edited = request.POST.get("text") if decision == "confirm-edited" else None
            proposal_confirm(user=user, proposal=proposal, edited_text=edited)
            messages.success(request, _("Saved to memory."))
    except MemoryRefusal as refusal:
        messages.error(request, refusal.message)
    # The same card sits under a chat answer; it sends people back to where they were.
    back = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(back if back and safe else reverse("inbox"))


# --- Add-on page -------------------------------------------------------------


@login_required
@require_GET
def addon_page(request: HttpRequest) -> HttpResponse:
    from addons.pages import addon_details
    from addons.selectors import installed_addon

    user = signed_in_user(request)
    state = installed_addon(MEMORY_ADDON)
    if state is None:  # built in, so always installed
        raise Http404
    return render(
        request,
        "memory/addon.html",
        {
            **addon_details(user, state),
            "enabled": addon_enabled(user=user, addon=MEMORY_ADDON),
            "is_admin": user.is_superuser,
            "banners": banners_for(user),
        },
    )


@login_required
@require_POST
def addon_toggle(request: HttpRequest) -> HttpResponse:
    enabled = request.POST.get("enabled") == "1"
    addon_set_enabled(user=signed_in_user(request), addon=MEMORY_ADDON, enabled=enabled)
    messages.success(
        request,
        _("Short memory is on.")
        if enabled
        else _("Short memory is off: the assistant reads nothing; your files are kept."),
    )
    return redirect("memory_addon_page")


@login_required
@require_GET
def agent_memory(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = agent_for_user(signed_in_user(request), agent_id)
    scope = agent_scope_find(agent)  # made when the agent was saved
    if scope is None:
        return redirect("memory")
    return redirect(f"{reverse('memory')}?scope={scope.pk}")


@login_required
@require_GET
def memory_export_download(request: HttpRequest) -> HttpResponseBase:
    user = signed_in_user(request)
    return filestore.export_response(
        user_id=user.pk,
        kind="memory",
        filename="memory-export.zip",
        data=memory_export(user=user),
        content_type="application/zip",
    )


@login_required
@require_POST
def memory_restore_upload(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("archive")
    if upload is None:
        messages.error(request, _("Choose a memory export (.zip) to restore."))
        return redirect("memory_files")
    if upload.size and upload.size > MAX_ARCHIVE_BYTES:
        messages.error(request, _("The archive is too large to be a memory export."))
        return redirect("memory_files")
    try:
        report = memory_restore(user=signed_in_user(request), archive_bytes=upload.read())
    except MemoryRefusal as refusal:
        messages.error(request, refusal.message)
        return redirect("memory_files")
    messages.success(
        request,
        _(
            "Restored %(added)s file(s); kept %(kept)s that already existed "
            "(current memory is never replaced)."
        )
        % {"added": len(report.added), "kept": len(report.kept)},
    )
    for name, reason in report.refused[:20]:
        messages.error(
            request, _("Not restored: %(name)s — %(reason)s") % {"name": name, "reason": reason}
        )
    return redirect("memory_files")
