"""The Files page: every memory file, one file's view and editor, export and restore."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.auth import signed_in_user
from host import filestore
from host.core.markdown import render_markdown
from host.errors import Refusal, StaleBase
from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope
from memory_addon.selectors import scope_for_user, scopes_for_user
from memory_addon.services.backup import MAX_ARCHIVE_BYTES, memory_export, memory_restore
from memory_addon.services.changes import clean_path, file_delete, file_write
from memory_addon.services.scopes import scope_folder


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
        path = clean_path(
            request.GET.get("path") or request.POST.get("path") or "",
            bank=scope.kind == MemoryScope.Kind.PROJECT,
        )
    except Refusal as refusal:
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
        except Refusal as refusal:
            context["error"] = refusal.message
        else:
            messages.success(request, _("Saved %(path)s.") % {"path": path})
            return redirect(f"{reverse('memory_file', args=[scope.pk])}?path={path}")
    if request.GET.get("confirm") == "delete":
        context["confirm_delete"] = True
    return render(request, "memory/file.html", context)


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
    except Refusal as refusal:
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
