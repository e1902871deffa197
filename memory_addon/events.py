"""Live updates: HTML fragments pushed to a user's websocket group after commit."""

from __future__ import annotations

from typing import TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction


class FragmentEvent(TypedDict):
    type: str
    html: str


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


def push_fragment(user_id: int, html: str) -> None:
    """Send an out-of-band htmx fragment (it carries its own element id)."""
    layer = get_channel_layer()
    if layer is None:
        return
    event: FragmentEvent = {"type": "fragment", "html": html}
    async_to_sync(layer.group_send)(user_group(user_id), event)


def push_fragment_on_commit(user_id: int, html: str) -> None:
    """Push only once the surrounding transaction has committed, never for a rollback."""
    transaction.on_commit(lambda: push_fragment(user_id, html))
