"""Every write of the bridges app: bindings, inbound messages, answers back, endpoints."""

from __future__ import annotations

import json
import logging
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import Agent, AIProfile, MessagingBinding, Organization, User
from bridges.delivery_gate import Deferred, gated_post, seconds_until
from bridges.models import EventEndpoint, InboundMessage
from bridges.outgoing import backoff_seconds, check_webhook_target
from bridges.signing import new_secret
from chat.models import Conversation, Message, Question
from chat.questions import (
    question_answer,
    question_as_text,
    question_waiting_in,
    reply_as_answer,
)
from chat.services import answers_in_flight, default_profile
from host.core.storable import storable
from host.errors import ChangeRefused, Refusal
from host.outbound import OutboundRefused
from host.queue import queue_job, queue_job_on_commit
from memory_addon.models import Proposal
from memory_addon.services.scopes import ensure_channel_scope

logger = logging.getLogger(__name__)
# A bridge message whose person has every answer slot busy is looked at again after this.
BUSY_RETRY_SECONDS = 5


class BridgeRefused(ChangeRefused):
    """A bridge action that is not possible; the message is for people."""


def _check_url(url: str) -> None:
    try:
        check_webhook_target(url, unresolvable_ok=True)
    except OutboundRefused as refusal:
        raise BridgeRefused(str(refusal)) from refusal


# --- Bindings -------------------------------------------------------------------


def binding_create(
    *,
    owner: User,
    kind: str,
    title: str,
    callback_url: str = "",
    agent: Agent | None = None,
    ai_profile: AIProfile | None = None,
    secret: str = "",
) -> tuple[MessagingBinding, str]:
    """Create a binding and its conversation scope; the secret is returned to show once.

    Every binding gets a new Standard Webhooks secret: it signs the answers back (and
    verifies the standard bridge's requests and Telegram's secret token). `secret`: a
    Slack binding's own signing secret, which the person pastes; it verifies Slack.
    """
    if kind not in MessagingBinding.Kind.values:
        raise BridgeRefused(gettext("Pick a bridge kind: Standard Webhooks, Telegram or Slack."))
    if agent is not None and agent.owner_id != owner.pk:
        raise BridgeRefused(gettext("No such agent."))
    if ai_profile is not None and ai_profile.owner_id != owner.pk:
        raise BridgeRefused(gettext("No such AI profile."))
    if callback_url:
        _check_url(callback_url)
    if secret.strip() and kind != MessagingBinding.Kind.SLACK:
        raise BridgeRefused(
            "Only a Slack binding takes a pasted signing secret; this one gets its own."
        )
    if kind == MessagingBinding.Kind.SLACK and not secret.strip():
        raise BridgeRefused(gettext("Paste your Slack app's signing secret."))
    signing = new_secret()
    binding = MessagingBinding(
        owner=owner,
        bridge=kind,
        external_id=uuid.uuid4().hex,
        title=" ".join(title.split())[:200],
        callback_url=callback_url,
        agent=agent,
        ai_profile=ai_profile,
    )
    binding.webhook_secret = signing
    if kind == MessagingBinding.Kind.SLACK:
        binding.platform_secret = secret.strip()
    with transaction.atomic(durable=True):
        binding.save()
        # The conversation's notes exist from the start: the scope picker shows them.
        ensure_channel_scope(binding)
    return binding, signing


def binding_rotate_secret(*, binding: MessagingBinding) -> str:
    """A new secret; the old one keeps working for BRIDGE_SECRET_GRACE_HOURS."""
    secret = new_secret()
    with transaction.atomic(durable=True):
        locked = MessagingBinding.objects.select_for_update().get(pk=binding.pk)
        locked.previous_secret_encrypted = locked.webhook_secret_encrypted
        locked.previous_secret_expires_at = timezone.now() + timedelta(
            hours=settings.BRIDGE_SECRET_GRACE_HOURS
        )
        locked.webhook_secret = secret
        locked.save(
            update_fields=[
                "previous_secret_encrypted",
                "previous_secret_expires_at",
                "webhook_secret_encrypted",
            ]
        )
    return secret


def binding_set_enabled(*, binding: MessagingBinding, enabled: bool) -> None:
    MessagingBinding.objects.filter(pk=binding.pk).update(enabled=enabled)
    binding.enabled = enabled


def binding_delete(*, binding: MessagingBinding) -> None:
    """The webhook stops for good; the conversation notes stay until the person deletes them.

    The row stays (marked deleted, secrets dropped) because the notes' scope points at it.
    """
    MessagingBinding.objects.filter(pk=binding.pk).update(
        enabled=False,
        deleted_at=timezone.now(),
        previous_secret_encrypted="",
        previous_secret_expires_at=None,
    )


# --- Inbound messages -----------------------------------------------------------


@dataclass(frozen=True)
class Incoming:
    webhook_id: str
    text: str
    sender: str = ""
    # The platform's ids; "" when the bridge names none (the binding's first conversation).
    sender_id: str = ""
    chat_id: str = ""
    thread_id: str = ""


def inbound_accept(*, binding: MessagingBinding, incoming: Incoming) -> tuple[InboundMessage, bool]:
    """Store a verified message and queue its turn; a repeated webhook-id is not stored again.

    Returns the row and whether it is new.
    """
    text = storable(incoming.text).strip()
    # Zero-width and other invisible format characters are not text a person sent.
    if not "".join(c for c in text if unicodedata.category(c) != "Cf").strip():
        raise BridgeRefused(gettext("The message has no text."))
    if len(text) > settings.BRIDGE_MAX_TEXT_CHARS:
        raise BridgeRefused(
            f"A message can have at most {settings.BRIDGE_MAX_TEXT_CHARS} characters."
        )
    with transaction.atomic(durable=True):
        try:
            with transaction.atomic():
                row = InboundMessage.objects.create(
                    binding=binding,
                    webhook_id=incoming.webhook_id,
                    kind=binding.bridge,
                    sender=storable(incoming.sender)[:200],
                    sender_id=incoming.sender_id,
                    chat_id=incoming.chat_id,
                    thread_id=incoming.thread_id,
                    text=text,
                )
        except IntegrityError:
            existing = InboundMessage.objects.get(binding=binding, webhook_id=incoming.webhook_id)
            return existing, False
        _process_on_commit(row.pk)
    return row, True


def _process_on_commit(inbound_id: int) -> None:
    queue_job_on_commit("bridges.inbound_process", inbound_id)


def bridge_conversation(
    binding: MessagingBinding, *, chat_id: str = "", thread_id: str = ""
) -> Conversation:
    """The conversation of one external chat (and thread) of a binding, made on first use.

    A message that names no chat goes to the binding's first conversation.
    """
    lookup = Conversation.objects.filter(
        binding=binding, external_chat=chat_id, external_thread=thread_id
    ).order_by("pk")
    found = lookup.first()
    if found is not None:
        return found
    profile = binding.ai_profile or default_profile(binding.owner)
    if profile is None:
        raise BridgeRefused(gettext("Add an AI profile under Settings so the bridge can answer."))
    title = f"{binding.get_bridge_display()}: {binding.title or 'conversation'}"
    if chat_id:
        title += f" ({chat_id}{' / ' + thread_id if thread_id else ''})"
    try:
        with transaction.atomic():
            return Conversation.objects.create(
                owner=binding.owner,
                ai_profile=profile,
                agent=binding.agent,
                binding=binding,
                external_chat=chat_id,
                external_thread=thread_id,
                title=title[:200],
            )
    except IntegrityError:  # the chat's first two messages arrived together
        return lookup.get()


def _start_turn(inbound: InboundMessage) -> Message:
    with transaction.atomic(durable=True):
        conversation = bridge_conversation(
            inbound.binding, chat_id=inbound.chat_id, thread_id=inbound.thread_id
        )
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        Message.objects.create(conversation=locked, role=Message.Role.USER, content=inbound.text)
        answer = Message.objects.create(
            conversation=locked,
            role=Message.Role.ASSISTANT,
            state=Message.State.STREAMING,
            model=locked.ai_profile.model if locked.ai_profile else "",
            heartbeat_at=timezone.now(),
        )
        locked.save(update_fields=["updated_at"])
        InboundMessage.objects.filter(pk=inbound.pk).update(answer=answer)
    return answer


def inbound_process(*, inbound_id: int) -> None:
    """Run the chat's own turn for a bridge message, then queue the answer back."""
    from chat.runner import turn_run

    waiting = InboundMessage.objects.filter(pk=inbound_id, state=InboundMessage.State.RECEIVED)
    owner_id = waiting.values_list("binding__owner_id", flat=True).first()
    if owner_id is not None and answers_in_flight(owner_id) >= settings.CHAT_MAX_ANSWERS_IN_FLIGHT:
        # The person's answer slots are full: wait in the queue, not on a chat thread.
        queue_job("bridges.inbound_process", inbound_id, countdown=BUSY_RETRY_SECONDS)
        return
    claimed = InboundMessage.objects.filter(
        pk=inbound_id, state=InboundMessage.State.RECEIVED
    ).update(state=InboundMessage.State.ANSWERING)
    inbound = (
        InboundMessage.objects.select_related(
            "binding__owner", "binding__ai_profile", "binding__agent", "answer"
        )
        .filter(pk=inbound_id)
        .first()
    )
    if inbound is None:
        logger.info("Inbound message %s is gone", inbound_id)
        return
    if not claimed:
        # Delivered again after a worker died: the turn's own claim settled the answer.
        answer = inbound.answer
        if (
            inbound.state == InboundMessage.State.ANSWERING
            and answer is not None
            and answer.state != Message.State.STREAMING
        ):
            _inbound_finish(inbound)
        return
    question = _waiting_question(inbound)
    if question is not None and _answered(inbound, question):
        # The reply answers the question: the same answer goes on, and only its rest
        # goes back (the text before the question went with it).
        turn_run(message_id=question.message_id)
        inbound.answer_id = question.message_id
        _inbound_finish(inbound, already_sent=int(question.resume.get("shown", 0)))
        return
    try:
        answer = _start_turn(inbound)
    except BridgeRefused as refusal:
        InboundMessage.objects.filter(pk=inbound.pk).update(
            state=InboundMessage.State.FAILED, error=refusal.message[:500]
        )
        return
    turn_run(message_id=answer.pk)
    inbound.answer_id = answer.pk
    _inbound_finish(inbound)


def _waiting_question(inbound: InboundMessage) -> Question | None:
    """The question waiting in the very chat (and thread) this message came from."""
    conversation = (
        Conversation.objects.filter(
            binding=inbound.binding,
            external_chat=inbound.chat_id,
            external_thread=inbound.thread_id,
        )
        .order_by("pk")
        .first()
    )
    return question_waiting_in(conversation.pk) if conversation else None


def _answered(inbound: InboundMessage, question: Question) -> bool:
    """Take the message as the question's answer; False when it was decided meanwhile."""
    choice, other = reply_as_answer(question, inbound.text)
    try:
        question_answer(
            user=inbound.binding.owner,
            question_id=question.pk,
            choice=choice,
            other=other,
            queue_turn=False,  # this job runs the rest of the turn itself
        )
    except Refusal:
        return False  # decided after the timeout: the message starts a turn of its own
    InboundMessage.objects.filter(pk=inbound.pk).update(answer_id=question.message_id)
    return True


def decided_answer_send(*, answer_id: int, question_id: int) -> None:
    """The rest of an answer whose question nobody answered in time goes back to the chat
    it was asked in, as a message of its own (no one's reply carries it)."""
    answer = Message.objects.select_related("conversation__binding").filter(pk=answer_id).first()
    question = Question.objects.filter(pk=question_id).first()
    binding = answer.conversation.binding if answer is not None else None
    if answer is None or question is None or binding is None:
        return
    conversation = answer.conversation
    try:
        with transaction.atomic():
            row = InboundMessage.objects.create(
                binding=binding,
                webhook_id=f"question_decided_{question.pk}",
                kind=binding.bridge,
                chat_id=conversation.external_chat,
                thread_id=conversation.external_thread,
                text="",
                state=InboundMessage.State.ANSWERING,
                answer=answer,
            )
    except IntegrityError:
        return  # sent already (the turn ran twice)
    _inbound_finish(row, already_sent=int(question.resume.get("shown", 0)))


def _asked_note(count: int) -> str:
    if count == 1:
        return "I asked to save 1 note to your memory; it waits for your confirmation in the Inbox."
    return (
        f"I asked to save {count} notes to your memory; they wait for your confirmation "
        "in the Inbox."
    )


def _inbound_finish(inbound: InboundMessage, *, already_sent: int = 0) -> None:
    answer = Message.objects.filter(pk=inbound.answer_id or 0).first()
    if answer is None:
        return
    asked = Proposal.objects.filter(
        user_id=inbound.binding.owner_id, source="bridge", message_ref=str(answer.pk)
    ).count()
    text = answer.content[already_sent:].strip()
    ok = answer.state in (Message.State.COMPLETE, Message.State.WAITING)
    if answer.state == Message.State.WAITING:
        # A question (M19) goes back as a numbered message; a reply answers it.
        question = question_waiting_in(answer.conversation_id)
        if question is not None:
            text = f"{text}\n\n{question_as_text(question)}".strip()
    if asked:
        # Messages from messaging apps always ask (M9): the sender is told so in words.
        text = f"{text}\n\n{_asked_note(asked)}".strip()
    now = timezone.now()
    has_callback = bool(inbound.binding.callback_url)
    with transaction.atomic(durable=True):
        updated = InboundMessage.objects.filter(
            pk=inbound.pk, state=InboundMessage.State.ANSWERING
        ).update(
            state=InboundMessage.State.ANSWERED if ok else InboundMessage.State.FAILED,
            error="" if ok else (answer.error or "The answer could not be written.")[:500],
            answer_text=text,
            proposals=asked,
            answered_at=now,
            callback_state=(
                InboundMessage.Callback.PENDING if has_callback else InboundMessage.Callback.NONE
            ),
            callback_deadline=now + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SECONDS),
        )
        if updated and has_callback:
            _callback_on_commit(inbound.pk)


def _callback_on_commit(inbound_id: int, countdown: float = 0) -> None:
    queue_job_on_commit("bridges.callback_send", inbound_id, countdown=countdown)


def callback_body(inbound: InboundMessage) -> bytes:
    ok = inbound.state == InboundMessage.State.ANSWERED
    payload = {
        "type": "message.answer",
        "binding": str(inbound.binding.public_id),
        "in_reply_to": inbound.webhook_id,
        # Where the answer goes: the chat and thread the message came from (null if none).
        "chat_id": inbound.chat_id or None,
        "thread_id": inbound.thread_id or None,
        "ok": ok,
        "text": inbound.answer_text,
        "error": "" if ok else inbound.error,
        "proposals": inbound.proposals,
    }
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def callback_webhook_id(inbound: InboundMessage) -> str:
    """The same id on every try, so the bridge can drop a repeat."""
    return f"msg_answer_{inbound.pk}"


def callback_send(*, inbound_id: int) -> bool:
    """POST the answer to the binding's callback URL once; True when it was acknowledged."""
    now = timezone.now()
    claimed = (
        InboundMessage.objects.filter(pk=inbound_id, callback_state=InboundMessage.Callback.PENDING)
        .filter(Q(callback_lease_until__isnull=True) | Q(callback_lease_until__lt=now))
        .filter(Q(callback_next_at__isnull=True) | Q(callback_next_at__lte=now))
        .update(callback_lease_until=now + timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS))
    )
    if not claimed:
        return False
    inbound = InboundMessage.objects.select_related("binding").get(pk=inbound_id)
    binding = inbound.binding
    current, *previous = binding.valid_secrets(now)
    result = gated_post(
        binding.callback_url,
        binding_id=binding.pk,
        secret=current,
        msg_id=callback_webhook_id(inbound),
        body=callback_body(inbound),
        also_signed_with=previous,
    )
    now = timezone.now()
    rows = InboundMessage.objects.filter(
        pk=inbound_id, callback_state=InboundMessage.Callback.PENDING
    )
    if isinstance(result, Deferred):
        # Not sent (another answer to this bridge is in flight, or it is paused): not an
        # attempt; the answer waits its turn.
        rows.update(callback_next_at=result.until, callback_lease_until=None)
        queue_job("bridges.callback_send", inbound_id, countdown=seconds_until(result.until))
        return False
    if result.ok:
        rows.update(
            callback_state=InboundMessage.Callback.DELIVERED,
            callback_delivered_at=now,
            callback_attempts=F("callback_attempts") + 1,
            callback_error="",
            callback_lease_until=None,
        )
        return True
    deadline = inbound.callback_deadline or now
    if result.retryable and now < deadline:
        wait = backoff_seconds(inbound.callback_attempts + 1)
        rows.update(
            callback_attempts=F("callback_attempts") + 1,
            callback_error=result.error,
            callback_next_at=now + timedelta(seconds=wait),
            callback_lease_until=None,
        )
        queue_job("bridges.callback_send", inbound_id, countdown=wait)
        return False
    rows.update(
        callback_state=InboundMessage.Callback.FAILED,
        callback_attempts=F("callback_attempts") + 1,
        callback_error=result.error,
        callback_lease_until=None,
    )
    return False


def bridges_sweep() -> dict[str, int]:
    """Beat: resend due answers whose task was lost, restart messages no worker took."""
    from bridges.outbox import endpoints_sweep

    now = timezone.now()
    callbacks = list(
        InboundMessage.objects.filter(callback_state=InboundMessage.Callback.PENDING)
        .filter(Q(callback_lease_until__isnull=True) | Q(callback_lease_until__lt=now))
        .filter(Q(callback_next_at__isnull=True) | Q(callback_next_at__lte=now))
        .values_list("pk", flat=True)[:500]
    )
    for inbound_id in callbacks:
        queue_job("bridges.callback_send", inbound_id)
    stuck = list(
        InboundMessage.objects.filter(
            state=InboundMessage.State.RECEIVED,
            received_at__lt=now - timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS),
        ).values_list("pk", flat=True)[:500]
    )
    for inbound_id in stuck:
        queue_job("bridges.inbound_process", inbound_id)
    return {"callbacks": len(callbacks), "inbound": len(stuck), "endpoints": endpoints_sweep()}


# --- Outgoing-event endpoints ---------------------------------------------------


def endpoint_create(
    *,
    owner: User,
    url: str,
    event_types: list[str],
    description: str = "",
    organization: Organization | None = None,
) -> tuple[EventEndpoint, str]:
    """Register an endpoint; returns it with its signing secret, shown to the person once."""
    _check_url(url)
    unknown = set(event_types) - set(EventEndpoint.EventType.values)
    if unknown or not event_types:
        raise BridgeRefused(gettext("Pick at least one of the listed event types."))
    if (
        organization is not None
        and not organization.membership_set.filter(user=owner, role="admin").exists()
    ):
        raise BridgeRefused(
            gettext("Only an admin of the organization can register its endpoints.")
        )
    secret = new_secret()
    endpoint = EventEndpoint(
        owner=owner,
        organization=organization,
        url=url,
        description=" ".join(description.split())[:200],
        event_types=sorted(set(event_types)),
    )
    endpoint.secret = secret
    with transaction.atomic(durable=True):
        endpoint.save()
    return endpoint, secret


def endpoint_delete(*, endpoint: EventEndpoint) -> None:
    with transaction.atomic(durable=True):
        EventEndpoint.objects.filter(pk=endpoint.pk).delete()
