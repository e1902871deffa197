"""Pages and actions of rule learning (M13), reference files (M14) and clean-up (M12)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.auth import signed_in_user
from chat.selectors import message_for_user
from host.errors import ChangeRefused, LimitExceeded, Refusal
from host.htmx import HtmxHttpRequest
from knowledge.services import granted_folders
from learning.core import cleanup as cleanup_core
from learning.models import CleanupJob
from learning.selectors import (
    cleanup_job_for_user,
    reference_for_user,
    suggestion_for_user,
    triage_for_user,
)
from learning.services import cleanup as cleanup_service
from learning.services import rules, triage
from memory_addon.core import entries
from memory_addon.core.diffs import unified_diff
from memory_addon.core.readable_diff import readable_diff
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope, ReferenceFile
from memory_addon.selectors import person_scope_for_user, scopes_for_user
from memory_addon.services import reference_search, references
from memory_addon.services.scopes import INDEX_PATH, scope_folder


def _back_to_chat(conversation_id: int) -> HttpResponse:
    return redirect("chat_conversation", conversation_id=conversation_id)


@login_required
@require_POST
def rule_save(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    user = signed_in_user(request)
    suggestion = suggestion_for_user(user, suggestion_id)
    try:
        rules.rule_save(
            user=user,
            suggestion=suggestion,
            text=request.POST.get("text", ""),
            target=request.POST.get("target"),
        )
    except Refusal as refusal:
        messages.error(
            request, _("The rule was not saved: %(message)s") % {"message": refusal.message}
        )
    else:
        messages.success(request, _("Rule saved. You can undo it for 30 seconds."))
    return _back_to_chat(suggestion.conversation_id)


def _card_action(
    request: HttpRequest,
    suggestion_id: int,
    action: Callable[..., object],
    done: str,
) -> HttpResponse:
    """Not now, Never and Undo on a rule card: the owner's card, one service call."""
    user = signed_in_user(request)
    suggestion = suggestion_for_user(user, suggestion_id)
    try:
        action(user=user, suggestion=suggestion)
    except Refusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(request, done)
    return _back_to_chat(suggestion.conversation_id)


@login_required
@require_POST
def rule_postpone(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    return _card_action(
        request,
        suggestion_id,
        rules.rule_postpone,
        _("Not now: this rule is suggested again in 7 days."),
    )


@login_required
@require_POST
def rule_never(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    return _card_action(
        request, suggestion_id, rules.rule_never, _("This rule will not be suggested again.")
    )


@login_required
@require_POST
def rule_undo(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    return _card_action(request, suggestion_id, rules.rule_undo, _("Rule removed again."))


@login_required
@require_POST
def remember(request: HttpRequest, message_id: int) -> HttpResponse:
    user = signed_in_user(request)
    message = message_for_user(user, message_id)
    try:
        rules.rule_remember(
            user=user,
            message=message,
            text=request.POST.get("text", ""),
            target=request.POST.get("target"),
        )
    except Refusal as refusal:
        messages.error(
            request, _("The rule was not saved: %(message)s") % {"message": refusal.message}
        )
    else:
        messages.success(request, _("Rule saved. You can undo it for 30 seconds."))
    return _back_to_chat(message.conversation_id)


@login_required
@require_POST
def triage_proceed(request: HttpRequest, card_id: int) -> HttpResponse:
    """Proceed with selection on a triage card (M20); a refusal keeps the card open."""
    user = signed_in_user(request)
    card = triage_for_user(user, card_id)
    try:
        triage.triage_proceed(
            user=user,
            card=card,
            choice=str(request.POST.get("choice", "")),
            own_idea=str(request.POST.get("own_idea", "")),
            rule_text=str(request.POST.get("rule_text", "")),
            rule_target=request.POST.get("rule_target"),
        )
    except Refusal as refusal:
        messages.error(
            request, _("The card is still open: %(message)s") % {"message": refusal.message}
        )
    return _back_to_chat(card.conversation_id)


# --- Reference files (M14) ------------------------------------------------------


def _owned_reference(request: HttpRequest, reference_id: int) -> ReferenceFile:
    return reference_for_user(signed_in_user(request), reference_id)


def _references_context(request: HttpRequest) -> dict[str, object]:
    user = signed_in_user(request)
    files = [references.reference_review(ref) for ref in ReferenceFile.objects.filter(owner=user)]
    return {
        "files": files,
        "off_reason": references.reference_off_reason(user),
        "folders": granted_folders(user),
        "max_read": settings.REFERENCE_READ_MAX_BYTES,
        "per_file": settings.REFERENCE_FILE_MAX_BYTES,
        "max_tokens": settings.REFERENCE_MAX_TOKENS,
    }


@login_required
@require_GET
def references_page(request: HttpRequest) -> HttpResponse:
    return render(request, "learning/references.html", _references_context(request))


@login_required
@require_GET
def references_search(request: HtmxHttpRequest) -> HttpResponse:
    """Rule files in the granted folders; a read: nothing is added until the person asks."""
    result = reference_search.reference_search(user=signed_in_user(request))
    if request.htmx:
        return render(request, "learning/references.html#search", {"search": result})
    return render(
        request, "learning/references.html", _references_context(request) | {"search": result}
    )


@login_required
@require_POST
def reference_add(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    upload = request.FILES.get("file")
    path = request.POST.get("path", "")
    try:
        if upload is not None:
            if (upload.size or 0) > settings.REFERENCE_READ_MAX_BYTES:
                raise LimitExceeded(
                    f"{upload.name} is larger than {settings.REFERENCE_READ_MAX_BYTES:,} bytes; "
                    "a reference file is read only up to that size."
                )
            ref = references.reference_upload(user=user, name=upload.name or "", data=upload.read())
        elif path.strip():
            ref = references.reference_add_folder_file(user=user, path=path)
        else:
            raise ChangeRefused(_("Choose a file to upload, or give the path of an allowed file."))
    except Refusal as refusal:
        messages.error(request, _("Not added: %(message)s") % {"message": refusal.message})
        return redirect("learning_references")
    messages.success(
        request, _("Added %(name)s. Read it and approve it to have it sent.") % {"name": ref.name}
    )
    return redirect("learning_reference", reference_id=ref.pk)


@login_required
@require_http_methods(["GET", "POST"])
def reference_page(request: HttpRequest, reference_id: int) -> HttpResponse:
    user = signed_in_user(request)
    ref = _owned_reference(request, reference_id)
    if request.method == "POST":
        try:
            references.reference_approve(user=user, ref=ref, sha256=request.POST.get("sha256", ""))
        except Refusal as refusal:
            messages.error(request, _("Not approved: %(message)s") % {"message": refusal.message})
        else:
            messages.success(
                request,
                _("%(name)s is approved and sent while it stays unchanged.") % {"name": ref.name},
            )
            return redirect("learning_references")
    review = references.reference_review(ref)
    context = {"review": review, "in_git": reference_search.in_git_tree(ref)}
    return render(request, "learning/reference.html", context)


@login_required
@require_POST
def reference_send(request: HttpRequest, reference_id: int) -> HttpResponse:
    ref = _owned_reference(request, reference_id)
    send = request.POST.get("send") == "on"
    references.reference_set_send(user=signed_in_user(request), ref=ref, send=send)
    messages.success(
        request,
        (_("%(name)s is sent with requests.") if send else _("%(name)s is not sent with requests."))
        % {"name": ref.name},
    )
    return redirect("learning_references")


@login_required
@require_POST
def reference_remove(request: HttpRequest, reference_id: int) -> HttpResponse:
    ref = _owned_reference(request, reference_id)
    references.reference_remove(user=signed_in_user(request), ref=ref)
    messages.success(request, _("Removed %(name)s from your reference files.") % {"name": ref.name})
    return redirect("learning_references")


# --- Clean-up (M12) -------------------------------------------------------------


def _cleanup_url(scope: MemoryScope) -> str:
    return f"{reverse('learning_cleanup')}?scope={scope.pk}"


def _job_view(job: CleanupJob | None) -> dict[str, object] | None:
    if job is None or job.state == CleanupJob.State.DISMISSED:
        return None
    current = MemoryFile.objects.filter(scope=job.scope, path=INDEX_PATH).first()
    diff = ""
    notes: list[Any] = []
    if job.state == CleanupJob.State.READY:
        diff = unified_diff(current.content if current else "", job.proposed, path=INDEX_PATH)
        notes = readable_diff(current.content if current else "", job.proposed)
    return {"job": job, "diff": diff, "notes": notes}


@login_required
@require_GET
def cleanup_page(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    scope = person_scope_for_user(user, request.GET.get("scope"))
    index = MemoryFile.objects.filter(scope=scope, path=INDEX_PATH).first()
    archive = MemoryFile.objects.filter(scope=scope, path=cleanup_core.ARCHIVE_PATH).first()
    content = index.content if index else ""
    jobs = {
        kind: CleanupJob.objects.filter(user=user, scope=scope, kind=kind).first()
        for kind in (CleanupJob.Kind.MERGE, CleanupJob.Kind.SHORTEN)
    }
    archived = sorted(
        entries.machine_entries(archive.content if archive else ""),
        key=lambda item: (item.created, item.position),
        reverse=True,
    )
    context = {
        "scope": scope,
        "folder": scope_folder(scope),
        "scopes": [
            (s, scope_folder(s))
            for s in scopes_for_user(user).exclude(kind=MemoryScope.Kind.PROJECT)
        ],
        "machine_count": len(entries.machine_entries(content)),
        "person_count": len(entries.person_items(content)),
        "old": cleanup_core.old_entries(
            content, today=timezone.localdate(), days=settings.CLEANUP_ARCHIVE_AFTER_DAYS
        ),
        "archived": archived,
        "merge": _job_view(jobs[CleanupJob.Kind.MERGE]),
        "shorten": _job_view(jobs[CleanupJob.Kind.SHORTEN]),
        "changes": list(
            ChangeSet.objects.filter(scope=scope, source=ChangeSet.Source.CLEANUP)
            .annotate(is_undone=Exists(ChangeSet.objects.filter(undoes=OuterRef("pk"))))
            .exclude(origin=ChangeSet.Origin.UNDO)[:10]
        ),
        "days": settings.CLEANUP_ARCHIVE_AFTER_DAYS,
        "back": _cleanup_url(scope),
    }
    return render(request, "learning/cleanup.html", context)


@login_required
@require_GET
def cleanup_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = cleanup_job_for_user(signed_in_user(request), job_id)
    return render(request, "learning/_cleanup_job.html", {"view": _job_view(job), "kind": job.kind})


@login_required
@require_POST
def cleanup_action(request: HttpRequest, scope_id: int, action: str) -> HttpResponse:
    user = signed_in_user(request)
    scope = person_scope_for_user(user, scope_id)
    ids = [value for value in request.POST.getlist("entry") if value.isalnum()][:100]
    try:
        if action in ("merge", "shorten"):
            cleanup_service.cleanup_start(user=user, scope=scope, kind=action)
            messages.success(request, _("Asking the AI; the result shows here as a diff first."))
        elif action == "archive":
            cleanup_service.archive_entries(user=user, scope=scope, ids=ids)
            messages.success(request, _("Archived into Memory/archive.md."))
        elif action == "restore":
            cleanup_service.archive_restore(user=user, scope=scope, ids=ids)
            messages.success(request, _("Restored at the end of the index."))
        elif action == "delete":
            cleanup_service.archive_delete(user=user, scope=scope, ids=ids)
            messages.success(request, _("Deleted from the archive."))
        else:
            raise Http404("No such clean-up step.")
    except Refusal as refusal:
        messages.error(request, refusal.message)
    return redirect(_cleanup_url(scope))


@login_required
@require_POST
def cleanup_decide(request: HttpRequest, job_id: int, decision: str) -> HttpResponse:
    user = signed_in_user(request)
    job = cleanup_job_for_user(user, job_id)
    try:
        if decision == "apply":
            cleanup_service.cleanup_apply(user=user, job=job)
            messages.success(request, _("Clean-up applied. You can undo it below."))
        else:
            cleanup_service.cleanup_dismiss(user=user, job=job)
            messages.success(request, _("Dismissed; nothing was changed."))
    except Refusal as refusal:
        messages.error(request, refusal.message)
    return redirect(_cleanup_url(job.scope))
