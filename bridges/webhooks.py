"""The inbound webhook: one URL per binding, three formats, each with its own verification.

Order of checks: the binding exists (404), the body is at most BRIDGE_MAX_BODY_BYTES
(413), the signature and time are right (401), the binding is enabled (403), the
binding's rate is not exceeded (429), the body is well formed (400). Only then is the
message stored, and the answer is 202 at once; a Celery task runs the turn.
"""

from __future__ import annotations

import json
import time
import unicodedata
import uuid
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from accounts.models import MessagingBinding
from bridges.services import BridgeRefused, Incoming, inbound_accept
from bridges.signing import SignatureInvalid, verify_slack, verify_standard, verify_telegram


def _error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def _rate_limited(binding: MessagingBinding) -> int:
    """Seconds to wait when this binding sent too many messages this minute, else 0."""
    window = int(time.time() // 60)
    key = f"bridges:rate:{binding.pk}:{window}"
    cache.add(key, 0, timeout=120)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=120)
        count = 1
    if count > settings.BRIDGE_RATE_LIMIT_PER_MINUTE:
        return max(1, 60 - int(time.time()) % 60)
    return 0


def _read_body(request: HttpRequest) -> bytes | None:
    limit = settings.BRIDGE_MAX_BODY_BYTES
    try:
        declared = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return None
    try:
        body = request.body
    except RequestDataTooBig:
        return None
    return body if len(body) <= limit else None


def _json(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise BridgeRefused("The body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise BridgeRefused("The body must be a JSON object.")
    return data


def _platform_id(value: object, field: str) -> str:
    """A chat, thread or sender id as text: a string or a whole number, at most 200
    characters, no control characters (a chat's key joins two ids with a newline)."""
    if value is None or value == "":
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise BridgeRefused(f'"{field}" must be a string or a whole number.')
    # A huge number is refused before it is turned into text (which costs its length).
    if isinstance(value, int) and abs(value) >= 10**199:
        raise BridgeRefused(f'"{field}" can have at most 200 characters.')
    text = str(value)
    if len(text) > 200:
        raise BridgeRefused(f'"{field}" can have at most 200 characters.')
    if any(unicodedata.category(c) == "Cc" for c in text):
        raise BridgeRefused(f'"{field}" must not contain control characters.')
    return text


def _standard(data: dict[str, Any], webhook_id: str) -> Incoming:
    text = data.get("text")
    if not isinstance(text, str):
        raise BridgeRefused('The body needs a "text" string.')
    sender = data.get("sender")
    chat_id = _platform_id(data.get("chat_id"), "chat_id")
    thread_id = _platform_id(data.get("thread_id"), "thread_id")
    if thread_id and not chat_id:
        raise BridgeRefused('"thread_id" needs a "chat_id": a thread belongs to a chat.')
    return Incoming(
        webhook_id,
        text,
        sender if isinstance(sender, str) else "",
        sender_id=_platform_id(data.get("sender_id"), "sender_id"),
        chat_id=chat_id,
        thread_id=thread_id,
    )


def _telegram(data: dict[str, Any]) -> Incoming | None:
    update_id = data.get("update_id")
    if not isinstance(update_id, int) or isinstance(update_id, bool) or not 0 <= update_id < 2**63:
        raise BridgeRefused("A Telegram update needs an update_id number.")
    message = data.get("message") or data.get("edited_message")
    if not isinstance(message, dict) or not isinstance(message.get("text"), str):
        return None  # stickers, joins, edits without text: acknowledged, nothing to answer
    sender = message.get("from")
    sender = sender if isinstance(sender, dict) else {}
    name = sender.get("username") or sender.get("first_name") or ""
    chat = message.get("chat")
    chat_id = _platform_id(chat.get("id") if isinstance(chat, dict) else None, "message.chat.id")
    if not chat_id:
        raise BridgeRefused("A Telegram message needs message.chat.id.")
    return Incoming(
        f"tg_{update_id}",
        message["text"],
        name if isinstance(name, str) else "",
        sender_id=_platform_id(sender.get("id"), "message.from.id"),
        chat_id=chat_id,
        thread_id=_platform_id(message.get("message_thread_id"), "message.message_thread_id"),
    )


def _slack(data: dict[str, Any]) -> Incoming | None:
    event = data.get("event")
    event_id = data.get("event_id")
    if data.get("type") != "event_callback" or not isinstance(event, dict):
        return None
    if not isinstance(event_id, str) or not event_id or len(event_id) > 200:
        raise BridgeRefused("A Slack event needs an event_id.")
    # Our own answers posted by a bot (or edits, joins …) must not start another turn.
    if event.get("bot_id") or event.get("subtype") or not isinstance(event.get("text"), str):
        return None
    user = _platform_id(event.get("user"), "event.user")
    channel = _platform_id(event.get("channel"), "event.channel")
    if not channel:
        raise BridgeRefused("A Slack message event needs event.channel.")
    return Incoming(
        event_id,
        event["text"],
        user,
        sender_id=user,
        chat_id=channel,
        thread_id=_platform_id(event.get("thread_ts"), "event.thread_ts"),
    )


def _verify(binding: MessagingBinding, request: HttpRequest, body: bytes) -> str:
    """Check the request's signature the binding's way; the standard bridge's message id."""
    candidates = binding.inbound_secrets(timezone.now())
    tolerance = settings.BRIDGE_TIMESTAMP_TOLERANCE_SECONDS
    if binding.bridge == MessagingBinding.Kind.TELEGRAM:
        verify_telegram(candidates, request.headers.get("X-Telegram-Bot-Api-Secret-Token"))
        return ""
    if binding.bridge == MessagingBinding.Kind.SLACK:
        verify_slack(
            candidates,
            body,
            timestamp=request.headers.get("X-Slack-Request-Timestamp"),
            signature=request.headers.get("X-Slack-Signature"),
            tolerance=tolerance,
        )
        return ""
    return verify_standard(candidates, body, dict(request.headers.items()), tolerance=tolerance)


def _incoming(binding: MessagingBinding, data: dict[str, Any], webhook_id: str) -> Incoming | None:
    """The message in a verified body, or None for an event that starts no turn."""
    if binding.bridge == MessagingBinding.Kind.TELEGRAM:
        return _telegram(data)
    if binding.bridge == MessagingBinding.Kind.SLACK:
        return _slack(data)
    return _standard(data, webhook_id)


@csrf_exempt
@require_POST
def webhook(request: HttpRequest, public_id: uuid.UUID) -> JsonResponse:
    binding = (
        MessagingBinding.objects.select_related("owner")
        .filter(public_id=public_id, deleted_at__isnull=True)
        .first()
    )
    if binding is None:
        return _error(404, "There is no messaging binding at this address.")
    body = _read_body(request)
    if body is None:
        return _error(413, f"The body is larger than {settings.BRIDGE_MAX_BODY_BYTES} bytes.")
    try:
        webhook_id = _verify(binding, request, body)
    except SignatureInvalid as invalid:
        return _error(401, str(invalid))
    if not binding.enabled:
        return _error(403, "This messaging binding is disabled.")
    wait = _rate_limited(binding)
    if wait:
        response = _error(
            429,
            f"More than {settings.BRIDGE_RATE_LIMIT_PER_MINUTE} messages a minute for this "
            f"binding; try again in {wait} seconds.",
        )
        response["Retry-After"] = str(wait)
        return response
    try:
        data = _json(body)
        if binding.bridge == MessagingBinding.Kind.SLACK and data.get("type") == "url_verification":
            challenge = data.get("challenge")
            if not isinstance(challenge, str):
                raise BridgeRefused("The URL verification has no challenge.")
            return JsonResponse({"challenge": challenge})
        incoming = _incoming(binding, data, webhook_id)
        if incoming is None:
            return JsonResponse({"accepted": False, "ignored": True}, status=200)
        row, new = inbound_accept(binding=binding, incoming=incoming)
    except BridgeRefused as refusal:
        return _error(400, refusal.message)
    return JsonResponse(
        {"accepted": True, "id": row.webhook_id, "duplicate": not new}, status=202 if new else 200
    )
