"""Live updates: HTML fragments pushed to a user's websocket group after commit."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from typing import TypedDict

from channels.layers import get_channel_layer
from django.db import transaction
from django.utils.html import format_html
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


class FragmentEvent(TypedDict):
    type: str
    html: str


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


PUSH_TIMEOUT_SECONDS = 5.0
_push_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
_push_loop_lock = threading.Lock()


def _loop_for_pushes() -> asyncio.AbstractEventLoop:
    """One event loop per process, in a daemon thread, for every push from sync code.

    async_to_sync made a new loop (and with it a new Redis connection) for every push;
    a push per streamed chunk or indexed file then cost more than the work it reported.
    The pid check gives a forked worker child its own loop.
    """
    global _push_loop
    with _push_loop_lock:
        if _push_loop is None or _push_loop[0] != os.getpid() or _push_loop[1].is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="live-push", daemon=True).start()
            _push_loop = (os.getpid(), loop)
        return _push_loop[1]


def push_fragment(user_id: int, html: str) -> None:
    """Send an out-of-band htmx fragment (it carries its own element id)."""
    layer = get_channel_layer()
    if layer is None:
        return
    event: FragmentEvent = {"type": "fragment", "html": html}
    send = layer.group_send(user_group(user_id), event)
    future = asyncio.run_coroutine_threadsafe(send, _loop_for_pushes())
    try:
        future.result(PUSH_TIMEOUT_SECONDS)
    except (TimeoutError, ConnectionError, RedisError) as error:
        # A push is best effort: the change is committed, and open pages resync when their
        # socket comes back. A Redis hiccup must not turn a saved change into an error page.
        future.cancel()
        logger.warning("Live push to user %s dropped: %r", user_id, error)


def push_fragment_on_commit(user_id: int, html: str) -> None:
    """Push only once the surrounding transaction has committed, never for a rollback."""
    transaction.on_commit(functools.partial(push_fragment, user_id, html))


def memory_changed_on_commit(user_id: int, change_set_id: int, origin: str) -> None:
    """Tell the person's open pages what changed and where, and refresh their Memory tab.

    `origin` is kept for callers; the fragments are rendered from the stored change set
    after commit. A failure to render or push is logged and never undoes the save.
    """

    def push() -> None:
        from memory_addon.live import memory_change_fragments

        person, html = memory_change_fragments(change_set_id)
        if html:
            push_fragment(person or user_id, html)

    transaction.on_commit(push, robust=True)


def proposals_changed_on_commit(user_id: int, pending_count: int) -> None:
    """Update the inbox count in the navigation of every open page."""
    html = format_html(
        '<span id="inbox-count" class="badge" hx-swap-oob="true" aria-live="polite">{}</span>',
        pending_count or "",
    )
    push_fragment_on_commit(user_id, str(html))


def proposal_added_on_commit(user_id: int, proposal_id: int) -> None:
    """Put the new proposal's card at the top of every open inbox of the person."""

    def push() -> None:
        from django.template.loader import render_to_string

        from memory_addon.models import Proposal
        from memory_addon.selectors import proposals_with_diffs

        proposal = Proposal.objects.select_related("scope__agent", "scope__binding").filter(
            pk=proposal_id, state=Proposal.State.PENDING
        )
        rows = proposals_with_diffs(list(proposal))
        if not rows:
            return
        card = render_to_string("memory/_proposal_card.html", {"proposal": rows[0]})
        # The ws extension swaps this out of band: the card goes first in the list.
        push_fragment(user_id, f'<div hx-swap-oob="afterbegin:#proposal-list">{card}</div>')

    transaction.on_commit(push)


def proposal_removed_on_commit(user_id: int, proposal_id: int) -> None:
    push_fragment_on_commit(
        user_id, f'<article id="proposal-{int(proposal_id)}" hx-swap-oob="delete"></article>'
    )
