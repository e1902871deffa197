"""The chat pages (htmx): the list, a conversation, and its actions."""

from __future__ import annotations

from datetime import time
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.auth import signed_in_user
from accounts.models import User
from chat import attachments, questions, schedules, services
from chat.export import conversation_markdown, export_kind
from chat.models import Conversation, Message, Schedule
from chat.selectors import (
    agents_for_user,
    conversation_for_user,
    conversations_listed,
    message_for_user,
    message_view,
    message_views,
    profiles_for_user,
    question_for_user,
    questions_waiting_for,
    schedule_for_user,
    stores_for_user,
)
from host import filestore
from host.core.ids import row_id, row_ids
from host.errors import Refusal
from host.htmx import HtmxHttpRequest
from knowledge.forms import UploadForm
from knowledge.services import upload_formats
from memory_addon.core.entries import MAX_ENTRY_CHARS
from memory_addon.pages import saving_off_reason
from memory_addon.services.context import memory_readable
from memory_addon.services.policy import policy_for
from memory_addon.turns import Turn

LIST_LIMIT = 100


def _page_context(request: HttpRequest, conversation: Conversation | None) -> dict[str, Any]:
    user = signed_in_user(request)
    query = request.GET.get("q", "")
    context: dict[str, Any] = {
        "conversations": conversations_listed(user, query, LIST_LIMIT),
        "query": query,
        "profiles": profiles_for_user(user),
        "agents": agents_for_user(user),
        "stores": stores_for_user(user),
        "conversation": conversation,
        "max_entry_chars": MAX_ENTRY_CHARS,
        "temporary_keep_hours": settings.CHAT_TEMPORARY_KEEP_HOURS,
        "upload_accept": ",".join(upload_formats()),
    }
    if conversation is not None:
        rows = list(conversation.messages.all())
        policy = policy_for(user)  # read once for the memory and the learning notes
        views = message_views(conversation, rows, policy)
        last_user = max((m.pk for m in rows if m.role == Message.Role.USER), default=None)
        last_answer = max((m.pk for m in rows if m.role == Message.Role.ASSISTANT), default=None)
        attached = set(conversation.stores.values_list("pk", flat=True))
        context.update(
            {
                "views": views,
                "last_user_id": last_user,
                "last_answer_id": last_answer,
                "busy": any(m.state == Message.State.STREAMING for m in rows),
                "attached": attached,
                "attachments": attachments.attachments_of(conversation),
                # Only those the person may read now: the others are not searched either.
                "attached_stores": [s for s in context["stores"] if s.pk in attached],
                "memory_reason": memory_readable(
                    Turn(
                        user=user, agent=conversation.agent, memory_off=not conversation.memory_on
                    ),
                    policy,
                ),
                # A temporary chat's own banner says why nothing is saved.
                "saving_reason": "" if conversation.temporary else saving_off_reason(user, policy),
                "last_user_text": next(
                    (m.content for m in reversed(rows) if m.role == Message.Role.USER), ""
                ),
            }
        )
    else:
        context["memory_reason"] = memory_readable(Turn(user=user))
        context["saving_reason"] = saving_off_reason(user, policy_for(user))
    return context


@login_required
@require_GET
def chat_home(request: HtmxHttpRequest) -> HttpResponse:
    context = _page_context(request, None)
    if request.htmx and request.GET.get("partial") == "list":
        return render(request, "chat/page.html#conversation_list", context)
    return render(request, "chat/page.html", context)


@login_required
@require_POST
def chat_new(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    try:
        conversation = services.conversation_create(
            user=user,
            profile_id=row_id(request.POST.get("profile")),
            agent_id=row_id(request.POST.get("agent")),
            store_ids=row_ids(request.POST.getlist("stores")),
            memory_on=request.POST.get("memory_on") == "on",
            temporary=request.POST.get("temporary") == "on",
        )
        text = request.POST.get("text", "")
        if text.strip():
            services.message_send(user=user, conversation=conversation, text=text)
    except Refusal as refusal:
        messages.error(request, refusal.message)
        return redirect("chat")
    return redirect("chat_conversation", conversation_id=conversation.pk)


@login_required
@require_GET
def conversation_page(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    return render(request, "chat/page.html", _page_context(request, conversation))


@login_required
@require_POST
def message_send(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    user = signed_in_user(request)
    conversation = conversation_for_user(user, conversation_id)
    try:
        answer = services.message_send(
            user=user, conversation=conversation, text=request.POST.get("text", "")
        )
    except Refusal as refusal:
        if request.htmx:
            return render(
                request, "chat/_composer_error.html", {"error": refusal.message}, status=200
            )
        messages.error(request, refusal.message)
        return redirect("chat_conversation", conversation_id=conversation.pk)
    if request.htmx:
        user_message = conversation.messages.filter(role=Message.Role.USER).last()
        rows = [m for m in (user_message, answer) if m is not None]
        return render(
            request,
            "chat/_sent.html",
            {
                "views": message_views(conversation, rows),
                "conversation": conversation,
                "last_answer_id": answer.pk,
                "last_user_id": user_message.pk if user_message else None,
                "max_entry_chars": MAX_ENTRY_CHARS,
            },
        )
    return redirect("chat_conversation", conversation_id=conversation.pk)


@login_required
@require_GET
def message_fragment(request: HttpRequest, message_id: int) -> HttpResponse:
    """One message as it is now; a page that (re)connects its socket asks for it."""
    message = message_for_user(signed_in_user(request), message_id)
    return render(
        request,
        "chat/_message.html",
        {
            "view": message_view(message),
            "conversation": message.conversation,
            "last_answer_id": message.conversation.messages.filter(role=Message.Role.ASSISTANT)
            .values_list("pk", flat=True)
            .last(),
        },
    )


def _back(conversation: Conversation) -> HttpResponse:
    return redirect("chat_conversation", conversation_id=conversation.pk)


@login_required
@require_POST
def message_stop(request: HtmxHttpRequest, message_id: int) -> HttpResponse:
    message = message_for_user(signed_in_user(request), message_id)
    services.message_stop(message=message)
    if request.htmx:
        return HttpResponse(status=204)
    return _back(message.conversation)


def inbox_questions(request: HttpRequest, user: User) -> str:
    """The questions waiting for the person, for the Inbox (registered in ready())."""
    waiting = questions_waiting_for(user)
    if not waiting:
        return ""
    return render_to_string("chat/_inbox_questions.html", {"questions": waiting}, request)


@login_required
@require_GET
def question_fragment(request: HttpRequest, question_id: int) -> HttpResponse:
    """One question card in the page's language: a card pushed live (rendered without
    it) fetches itself once from here."""
    question = question_for_user(signed_in_user(request), question_id)
    return render(request, "chat/_question_card.html", {"question": question, "values": {}})


@login_required
@require_POST
def question_answer(request: HtmxHttpRequest, question_id: int) -> HttpResponse:
    """The person's answer to a question under an answer (M19); a refused one re-renders
    the card with the error on the field to fix, and keeps what was typed."""
    user = signed_in_user(request)
    question = question_for_user(user, question_id)
    values = {name: request.POST.get(name, "") for name in ("choice", "other", "rule", "save_to")}
    errors: dict[str, str] = {}
    try:
        question = questions.question_answer(
            user=user,
            question_id=question.pk,
            choice=values["choice"],
            other=values["other"],
            rule=values["rule"],
            save_to=values["save_to"],
        )
    except questions.AnswerRefused as refusal:
        errors[refusal.field] = refusal.message
    except Refusal as refusal:
        errors["choice"] = refusal.message
        question.refresh_from_db()
    if not request.htmx:
        for error in errors.values():
            messages.error(request, error)
        return _back(question.message.conversation)
    context = {"question": question, "errors": errors, "values": values}
    return render(request, "chat/_question_card.html", context)


@login_required
@require_POST
def answer_regenerate(request: HttpRequest, conversation_id: int) -> HttpResponse:
    user = signed_in_user(request)
    conversation = conversation_for_user(user, conversation_id)
    try:
        services.answer_regenerate(user=user, conversation=conversation)
    except Refusal as refusal:
        messages.error(request, refusal.message)
    return _back(conversation)


@login_required
@require_POST
def last_message_edit(request: HttpRequest, conversation_id: int) -> HttpResponse:
    user = signed_in_user(request)
    conversation = conversation_for_user(user, conversation_id)
    try:
        services.last_message_edit(
            user=user, conversation=conversation, text=request.POST.get("text", "")
        )
    except Refusal as refusal:
        messages.error(request, refusal.message)
    return _back(conversation)


@login_required
@require_POST
def conversation_settings(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The fold-out's rarer settings (agent, memory); the header changes model and
    collections."""
    user = signed_in_user(request)
    conversation = conversation_for_user(user, conversation_id)
    try:
        services.conversation_update(
            user=user,
            conversation=conversation,
            profile_id=row_id(request.POST.get("profile")),
            agent_id=row_id(request.POST.get("agent")),
            store_ids=(
                row_ids(request.POST.getlist("stores")) if "stores" in request.POST else None
            ),
            memory_on=request.POST.get("memory_on") == "on",
        )
    except Refusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(request, _("Saved. The next answer uses these settings."))
    return _back(conversation)


def _header(
    request: HtmxHttpRequest, conversation: Conversation, *, error: str = "", notice: str = ""
) -> HttpResponse:
    """The header's pickers after a change: the partial for htmx, else the page again."""
    if not request.htmx:
        if error:
            messages.error(request, error)
        elif notice:
            messages.success(request, notice)
        return _back(conversation)
    user = signed_in_user(request)
    stores = stores_for_user(user)
    attached = set(conversation.stores.values_list("pk", flat=True))
    context = {
        "conversation": conversation,
        "profiles": profiles_for_user(user),
        "stores": stores,
        "attached_stores": [s for s in stores if s.pk in attached],
        "header_error": error,
        "header_notice": notice,
    }
    return render(request, "chat/_header_pickers.html", context)


def _header_change(
    request: HtmxHttpRequest, conversation_id: int, change: Any, notice: str
) -> HttpResponse:
    user = signed_in_user(request)
    conversation = conversation_for_user(user, conversation_id)
    try:
        change(user, conversation)
    except Refusal as refusal:
        conversation.refresh_from_db()
        return _header(request, conversation, error=refusal.message)
    return _header(request, conversation, notice=notice)


@login_required
@require_POST
def conversation_profile(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    profile_id = row_id(request.POST.get("profile"))
    return _header_change(
        request,
        conversation_id,
        lambda user, conversation: services.conversation_profile_set(
            user=user, conversation=conversation, profile_id=profile_id
        ),
        _("Model changed; the next answer uses it."),
    )


@login_required
@require_POST
def conversation_store_add(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    store_id = row_id(request.POST.get("store"))
    return _header_change(
        request,
        conversation_id,
        lambda user, conversation: services.conversation_store_add(
            user=user, conversation=conversation, store_id=store_id
        ),
        _("Collection added; the next answer searches it."),
    )


@login_required
@require_POST
def conversation_store_remove(
    request: HtmxHttpRequest, conversation_id: int, store_id: int
) -> HttpResponse:
    return _header_change(
        request,
        conversation_id,
        lambda _user, conversation: services.conversation_store_remove(
            conversation=conversation, store_id=store_id
        ),
        _("Collection removed; the next answer no longer searches it."),
    )


def _attachments(
    request: HtmxHttpRequest, conversation: Conversation, *, error: str = ""
) -> HttpResponse:
    """The chips after an attach; a refusal is shown above them (htmx swaps only a 200)."""
    if not request.htmx:
        if error:
            messages.error(request, error)
        return _back(conversation)
    context = {
        "conversation": conversation,
        "attachments": attachments.attachments_of(conversation),
        "attach_error": error,
    }
    return render(request, "chat/_attachments.html", context)


@login_required
@require_POST
def conversation_attach(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    """The composer's paperclip: files into the conversation's own collection."""
    user = signed_in_user(request)
    conversation = conversation_for_user(user, conversation_id)
    form = UploadForm(request.POST, request.FILES)
    if not form.is_valid():
        errors = form.errors.as_data().get("documents", [])
        text = " ".join(message for error in errors for message in error.messages)
        return _attachments(request, conversation, error=text)
    try:
        attachments.conversation_attach(
            user=user, conversation=conversation, files=form.cleaned_data["documents"]
        )
    except Refusal as refusal:
        return _attachments(request, conversation, error=refusal.message)
    return _attachments(request, conversation)


@login_required
@require_GET
def conversation_attachments(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    """The attached files' chips as they are now (polled while a job runs)."""
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    context = {
        "conversation": conversation,
        "attachments": attachments.attachments_of(conversation),
    }
    return render(request, "chat/_attachments.html", context)


@login_required
@require_POST
def attachment_index(request: HtmxHttpRequest, conversation_id: int, job_id: int) -> HttpResponse:
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    try:
        attachments.attachment_index(conversation=conversation, job_id=job_id)
    except Refusal as refusal:
        return _attachments(request, conversation, error=refusal.message)
    return _attachments(request, conversation)


@login_required
@require_POST
def message_edit(request: HttpRequest, message_id: int) -> HttpResponse:
    """Edit any of the person's messages: the last in place, an earlier one in a copy."""
    user = signed_in_user(request)
    message = message_for_user(user, message_id)
    try:
        answer = services.message_edit(
            user=user, message=message, text=request.POST.get("text", "")
        )
    except Refusal as refusal:
        messages.error(request, refusal.message)
        return _back(message.conversation)
    return redirect("chat_conversation", conversation_id=answer.conversation_id)


@login_required
@require_POST
def conversation_rename(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    try:
        services.conversation_rename(conversation=conversation, title=request.POST.get("title", ""))
    except Refusal as refusal:
        messages.error(request, refusal.message)
    return _back(conversation)


@login_required
@require_http_methods(["GET", "POST"])
def conversation_delete(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    if request.method == "POST":
        title = str(conversation)
        services.conversation_delete(conversation=conversation)
        messages.success(request, _("Deleted “%(title)s”.") % {"title": title})
        return redirect("chat")
    return render(request, "chat/delete_confirm.html", {"conversation": conversation})


@login_required
@require_POST
def temporary_end(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """ "End temporary chat" (M22): it is deleted and never listed."""
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    try:
        services.temporary_conversation_end(conversation=conversation)
    except Refusal as refusal:
        messages.error(request, refusal.message)
        return _back(conversation)
    messages.success(request, _("The temporary chat was ended and deleted."))
    return redirect("chat")


@login_required
@require_GET
def conversation_export(request: HttpRequest, conversation_id: int) -> HttpResponseBase:
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    name = slugify(str(conversation)) or f"conversation-{conversation.pk}"
    return filestore.export_response(
        user_id=conversation.owner_id,
        kind=export_kind(conversation.pk),
        filename=f"{name}.md",
        data=conversation_markdown(conversation).encode(),
        content_type="text/markdown; charset=utf-8",
        still_there=Conversation.objects.filter(pk=conversation.pk).exists,
    )


# --- Scheduled runs (H9) -----------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def schedules_page(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    if request.method == "POST":
        try:
            daily = request.POST.get("daily_at") or ""
            schedules.schedule_create(
                user=user,
                name=request.POST.get("name", ""),
                prompt=request.POST.get("prompt", ""),
                profile_id=row_id(request.POST.get("profile")),
                agent_id=row_id(request.POST.get("agent")),
                store_ids=row_ids(request.POST.getlist("stores")),
                every_minutes=row_id(request.POST.get("every_minutes")),
                daily_at=time.fromisoformat(daily) if daily else None,
            )
        except (Refusal, ValueError) as error:
            text = error.message if isinstance(error, Refusal) else _("Give a valid time.")
            messages.error(request, text)
        else:
            messages.success(request, _("Schedule created."))
        return redirect("chat_schedules")
    context = {
        "schedules": list(
            Schedule.objects.filter(owner=user).select_related("ai_profile", "agent")
        ),
        "profiles": profiles_for_user(user),
        "agents": agents_for_user(user),
        "stores": stores_for_user(user),
    }
    return render(request, "chat/schedules.html", context)


def _owned_schedule(request: HttpRequest, schedule_id: int) -> Schedule:
    return schedule_for_user(signed_in_user(request), schedule_id)


@login_required
@require_POST
def schedule_run_now(request: HttpRequest, schedule_id: int) -> HttpResponse:
    answer = schedules.schedule_run(schedule=_owned_schedule(request, schedule_id))
    return redirect("chat_conversation", conversation_id=answer.conversation_id)


@login_required
@require_POST
def schedule_delete(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedules.schedule_delete(schedule=_owned_schedule(request, schedule_id))
    messages.success(request, _("Schedule deleted."))
    return redirect("chat_schedules")
