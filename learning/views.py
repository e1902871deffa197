"""Pages and actions of rule learning (M13), reference files (M14) and clean-up (M12)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.auth import signed_in_user
from chat.selectors import message_for_user
from knowledge.services import granted_folders
from learning.models import ReferenceFile
from learning.selectors import suggestion_for_user
from learning.services import references, rules
from memory_addon.errors import ChangeRefused, LimitExceeded, MemoryRefusal


def _back_to_chat(conversation_id: int) -> HttpResponse:
    return redirect("chat_conversation", conversation_id=conversation_id)


@login_required
@require_POST
def rule_save(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    user = signed_in_user(request)
    suggestion = suggestion_for_user(user, suggestion_id)
    try:
        rules.rule_save(user=user, suggestion=suggestion, text=request.POST.get("text", ""))
    except MemoryRefusal as refusal:
        messages.error(request, f"The rule was not saved: {refusal.message}")
    else:
        messages.success(request, "Rule saved. You can undo it for 30 seconds.")
    return _back_to_chat(suggestion.conversation_id)


@login_required
@require_POST
def rule_postpone(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    user = signed_in_user(request)
    suggestion = suggestion_for_user(user, suggestion_id)
    try:
        rules.rule_postpone(user=user, suggestion=suggestion)
    except MemoryRefusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(request, "Not now: this rule is suggested again in 7 days.")
    return _back_to_chat(suggestion.conversation_id)


@login_required
@require_POST
def rule_never(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    user = signed_in_user(request)
    suggestion = suggestion_for_user(user, suggestion_id)
    try:
        rules.rule_never(user=user, suggestion=suggestion)
    except MemoryRefusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(request, "This rule will not be suggested again.")
    return _back_to_chat(suggestion.conversation_id)


@login_required
@require_POST
def rule_undo(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    user = signed_in_user(request)
    suggestion = suggestion_for_user(user, suggestion_id)
    try:
        rules.rule_undo(user=user, suggestion=suggestion)
    except MemoryRefusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(request, "Rule removed again.")
    return _back_to_chat(suggestion.conversation_id)


@login_required
@require_POST
def remember(request: HttpRequest, message_id: int) -> HttpResponse:
    user = signed_in_user(request)
    message = message_for_user(user, message_id)
    try:
        rules.rule_remember(user=user, message=message, text=request.POST.get("text", ""))
    except MemoryRefusal as refusal:
        messages.error(request, f"The rule was not saved: {refusal.message}")
    else:
        messages.success(request, "Rule saved. You can undo it for 30 seconds.")
    return _back_to_chat(message.conversation_id)


# --- Reference files (M14) ------------------------------------------------------


def _owned_reference(request: HttpRequest, reference_id: int) -> ReferenceFile:
    return get_object_or_404(ReferenceFile, pk=reference_id, owner=signed_in_user(request))


@login_required
@require_GET
def references_page(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    files = [references.reference_review(ref) for ref in ReferenceFile.objects.filter(owner=user)]
    context = {
        "files": files,
        "off_reason": references.reference_off_reason(user),
        "folders": granted_folders(user),
        "max_read": settings.REFERENCE_READ_MAX_BYTES,
        "per_file": settings.REFERENCE_FILE_MAX_BYTES,
        "max_tokens": settings.REFERENCE_MAX_TOKENS,
    }
    return render(request, "learning/references.html", context)


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
            raise ChangeRefused("Choose a file to upload, or give the path of an allowed file.")
    except MemoryRefusal as refusal:
        messages.error(request, f"Not added: {refusal.message}")
        return redirect("learning_references")
    messages.success(request, f"Added {ref.name}. Read it and approve it to have it sent.")
    return redirect("learning_reference", reference_id=ref.pk)


@login_required
@require_http_methods(["GET", "POST"])
def reference_page(request: HttpRequest, reference_id: int) -> HttpResponse:
    user = signed_in_user(request)
    ref = _owned_reference(request, reference_id)
    if request.method == "POST":
        try:
            references.reference_approve(user=user, ref=ref, sha256=request.POST.get("sha256", ""))
        except MemoryRefusal as refusal:
            messages.error(request, f"Not approved: {refusal.message}")
        else:
            messages.success(request, f"{ref.name} is approved and sent while it stays unchanged.")
            return redirect("learning_references")
    review = references.reference_review(ref)
    return render(request, "learning/reference.html", {"review": review})


@login_required
@require_POST
def reference_send(request: HttpRequest, reference_id: int) -> HttpResponse:
    ref = _owned_reference(request, reference_id)
    send = request.POST.get("send") == "on"
    references.reference_set_send(user=signed_in_user(request), ref=ref, send=send)
    messages.success(request, f"{ref.name} is {'sent' if send else 'not sent'} with requests.")
    return redirect("learning_references")


@login_required
@require_POST
def reference_remove(request: HttpRequest, reference_id: int) -> HttpResponse:
    ref = _owned_reference(request, reference_id)
    references.reference_remove(user=signed_in_user(request), ref=ref)
    messages.success(request, f"Removed {ref.name} from your reference files.")
    return redirect("learning_references")
