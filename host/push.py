"""Live push: HTML fragments sent to one person's websocket group, from sync code.

A fragment with words in it is given as a function that renders it: it is rendered once
per site language and every socket shows the one in its page's language
(host/consumers.py). Plain markup (a streamed answer's body, a count) is a string."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, NotRequired, TypedDict

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.utils import translation
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


class FragmentEvent(TypedDict):
    type: str
    html: str  # in the site's default language
    by_language: NotRequired[dict[str, str]]


Fragment = str | Callable[[], str]


def fragment_event(fragment: Fragment) -> FragmentEvent:
    if isinstance(fragment, str):
        return {"type": "fragment", "html": fragment}
    by_language: dict[str, str] = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            by_language[code] = fragment()
    default = by_language.get(settings.LANGUAGE_CODE) or next(iter(by_language.values()), "")
    return {"type": "fragment", "html": default, "by_language": by_language}


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


def push_fragment(user_id: int, fragment: Fragment) -> None:
    """Send an out-of-band htmx fragment (it carries its own element id) to the person's
    open pages; with none open, nothing is rendered or sent."""
    push_fragment_to_many([user_id], fragment)


def push_fragment_to_many(user_ids: Iterable[int], fragment: Fragment) -> None:
    """The same fragment to several people: only to those with a page open, rendered once,
    one group send each."""
    ids = sorted(set(user_ids))
    layer = get_channel_layer()
    if layer is None or not ids:
        return
    groups = [user_group(user_id) for user_id in ids]
    try:
        listening = _on_push_loop(_listening_groups(layer, groups))
        if not listening:
            return
        event = fragment_event(fragment)
        if event["html"]:
            _on_push_loop(_send_to_groups(layer, listening, event))
    except (TimeoutError, ConnectionError, RedisError) as error:
        # A push is best effort: the change is committed, and open pages resync when their
        # socket comes back. A Redis hiccup must not turn a saved change into an error page.
        who = ", ".join(str(user_id) for user_id in ids)
        logger.warning("Live push to user %s dropped: %r", who, error)


async def _listening_groups(layer: Any, groups: list[str]) -> list[str]:
    found = await asyncio.gather(*(_has_listeners(layer, group) for group in groups))
    return [group for group, listening in zip(groups, found, strict=True) if listening]


async def _send_to_groups(layer: Any, groups: list[str], event: FragmentEvent) -> None:
    await asyncio.gather(*(layer.group_send(group, event) for group in groups))


def _on_push_loop[T](work: Coroutine[Any, Any, T]) -> T:
    future = asyncio.run_coroutine_threadsafe(work, _loop_for_pushes())
    try:
        return future.result(PUSH_TIMEOUT_SECONDS)
    except BaseException:
        future.cancel()
        raise


async def _has_listeners(layer: Any, group: str) -> bool:
    """Whether any socket is in the group. channels_redis keeps a group as a sorted set
    of channel names scored by when they joined, and group_send skips members older
    than group_expiry; the same count here spares rendering for nobody (a memory change
    renders the Memory tab's fragments in every language). Another layer: assume yes."""
    group_key = getattr(layer, "_group_key", None)
    if group_key is None:
        return True
    now = time.monotonic()
    if _listening_until.get(group, 0.0) > now:
        return True
    connection = layer.connection(layer.consistent_hash(group))
    joined_since = int(time.time()) - int(layer.group_expiry)
    listening = bool(await connection.zcount(group_key(group), joined_since, "+inf"))
    if listening:
        if len(_listening_until) >= LISTENERS_REMEMBERED:
            for name in [name for name, until in _listening_until.items() if until <= now]:
                del _listening_until[name]
        _listening_until[group] = now + LISTENERS_REMEMBERED_SECONDS
    return listening


# A "yes" is kept a moment so a streamed answer's chunks do not each ask again; only a
# "yes" is kept, so a page that just opened is never skipped. Read and written on the
# push loop's one thread only.
LISTENERS_REMEMBERED_SECONDS = 2.0
LISTENERS_REMEMBERED = 10_000
_listening_until: dict[str, float] = {}


def push_fragment_on_commit(user_id: int, fragment: Fragment) -> None:
    """Push only once the surrounding transaction has committed, never for a rollback."""
    transaction.on_commit(functools.partial(push_fragment, user_id, fragment), robust=True)


def push_fragment_to_many_on_commit(user_ids: Iterable[int], fragment: Fragment) -> None:
    transaction.on_commit(
        functools.partial(push_fragment_to_many, list(user_ids), fragment), robust=True
    )
