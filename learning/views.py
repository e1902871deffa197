"""Pages and actions of rule learning (M13), reference files (M14) and clean-up (M12)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.auth import signed_in_user
from chat.selectors import message_for_user
from learning.selectors import suggestion_for_user
from learning.services import rules
from memory_addon.errors import MemoryRefusal


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
