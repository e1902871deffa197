"""Live chat fragments, pushed to the owner's websocket group (`user.<id>`) only."""

from __future__ import annotations

from django.template.loader import render_to_string

from chat.models import Message
from chat.selectors import message_view
from host.push import push_fragment
from memory_addon.services.policy import Policy


def body_fragment(message_id: int, html: str) -> str:
    return f'<div id="message-{int(message_id)}-body" class="md" hx-swap-oob="true">{html}</div>'


def push_body(user_id: int, message_id: int, html: str) -> None:
    """The answer so far, rendered; each push replaces the whole body (reload-safe)."""
    push_fragment(user_id, body_fragment(message_id, html))


def push_message(user_id: int, message: Message, policy: Policy | None = None) -> None:
    """An answer being written or just finished (state, cards, Sent along), replacing the
    one on the page. Rule cards come later: learning looks at an answer once it is done."""
    # Pushed messages are the conversation's newest answer: they carry its actions.
    view = message_view(message, policy, rule_cards=False)
    context = {"view": view, "oob": True, "last_answer_id": message.pk}
    push_fragment(user_id, lambda: render_to_string("chat/_message.html", context))


def push_memory(user_id: int, message: Message) -> None:
    """The proposal cards and "Saved to memory" lines under an answer, as they happen."""
    context = {"view": message_view(message), "oob": True}
    push_fragment(user_id, lambda: render_to_string("chat/_message.html#memory", context))
