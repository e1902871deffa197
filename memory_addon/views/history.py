"""A scope's history: its versions, restoring one, and undoing a change."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.auth import signed_in_user
from host.errors import Refusal
from host.htmx import HtmxHttpRequest
from memory_addon.core.diffs import unified_diff
from memory_addon.core.readable_diff import readable_diff
from memory_addon.live import notice_context
from memory_addon.models import ChangeSet, FileChange, MemoryFile
from memory_addon.selectors import (
    change_set_for_user,
    person_scope_for_user,
    version_for_user,
    versions_for_scope,
)
from memory_addon.services.changes import change_set_undo, version_restore
from memory_addon.services.scopes import scope_folder


@login_required
@require_GET
def history_page(request: HttpRequest, scope_id: int) -> HttpResponse:
    scope = person_scope_for_user(signed_in_user(request), scope_id)
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
    except Refusal as refusal:
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
        except Refusal as refusal:
            context = {**notice_context(change_set), "undo": False, "error": refusal.message}
        else:
            context = notice_context(undo)
        return render(request, "memory/_live_notice.html", context)
    try:
        change_set_undo(user=user, change_set=change_set, source=ChangeSet.Source.PAGE)
    except Refusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(request, _("Change undone."))
    back = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(back if safe else reverse("memory_audit"))
