"""The answer as it arrives: deltas collected, pushed to the page and persisted.

A side thread pushes the rendered text (batched) and writes it every
CHAT_PERSIST_INTERVAL_MS, so a reload mid-answer shows everything that arrived.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from chat import events
from chat.models import Message
from chat.selectors import message_html
from chat.services import stop_requested
from host.core.storable import storable
from memory_addon.services.policy import Policy

logger = logging.getLogger(__name__)


class Streamer:
    """Collects deltas; a side thread pushes the rendered text (batched) and persists it.

    The side thread also keeps the heartbeat fresh while the model is silent, and it
    flushes the tail of a burst, so a reload mid-answer shows everything that arrived.
    """

    HEARTBEAT_SECONDS = 5.0

    def __init__(self, message: Message, user_id: int) -> None:
        self.message = message
        self.user_id = user_id
        self.parts: list[str] = []
        self.length = 0
        self.max_chars = settings.CHAT_MAX_ANSWER_CHARS
        # Set once the answer reached CHAT_MAX_ANSWER_CHARS: reading stops, the text stays.
        self.capped = False
        # A server that sends a chunk now and then, forever, would hold this worker
        # thread: the whole answer, every round and tool call in it, has a time limit.
        self.max_seconds = settings.CHAT_MAX_ANSWER_SECONDS
        self.deadline = time.monotonic() + self.max_seconds
        self.timed_out = False
        self.lock = threading.Lock()
        self.version = 0
        self.pushed_version = 0
        self.persisted_version = 0
        self.first_token_at: datetime | None = None
        self.stop_checked_at = 0.0
        self.stopped = False
        self.done = threading.Event()
        self.thread: threading.Thread | None = None
        self.announce: Callable[[], None] | None = None
        self.policy: Policy | None = None  # the turn's policy, read once, for its pushes

    @property
    def text(self) -> str:
        with self.lock:
            return "".join(self.parts)

    def start(self, announce: Callable[[], None] | None = None) -> None:
        """`announce` runs first on the side thread, while the model thinks."""
        self.announce = announce
        self.thread = threading.Thread(
            target=self._loop, name=f"chat-flush-{self.message.pk}", daemon=True
        )
        self.thread.start()

    def finish(self) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join(timeout=10)

    def new_paragraph(self) -> None:
        """Text of a later round starts a new paragraph instead of running on."""
        with self.lock:
            if self.parts and not self.parts[-1].endswith("\n"):
                self.parts.append("\n\n")
                self.length += 2

    def add(self, delta: str) -> None:
        delta = storable(delta)
        with self.lock:
            if self.capped:
                return
            room = self.max_chars - self.length
            if len(delta) > room:
                delta = delta[: max(room, 0)]
                self.capped = True
            self.parts.append(delta)
            self.length += len(delta)
            self.version += 1
            if self.first_token_at is None:
                self.first_token_at = timezone.now()

    def _loop(self) -> None:
        push_every = settings.CHAT_PUSH_INTERVAL_MS / 1000
        persist_every = settings.CHAT_PERSIST_INTERVAL_MS / 1000
        persisted_at = heartbeat_at = time.monotonic()
        if self.announce is not None:
            try:
                self.announce()
            except Exception:
                logger.exception("Announcing message %s failed", self.message.pk)
                connection.close()
        while not self.done.wait(push_every):
            with self.lock:
                version, text = self.version, "".join(self.parts)
            now = time.monotonic()
            # One failed push or write (a busy pool, a Redis hiccup) is retried next time
            # round; it never ends the live updates of the answer.
            try:
                pushed_now = version != self.pushed_version
                if pushed_now:
                    self._push(text)
                    self.pushed_version = version
                if self.done.is_set():
                    break  # the end state is written and pushed by the runner
                due = now - persisted_at >= persist_every and version != self.persisted_version
                if due or now - heartbeat_at >= self.HEARTBEAT_SECONDS:
                    persisted_at = heartbeat_at = now
                    self._persist(text)
                    self.persisted_version = version
                    # A page loaded between the last push and this write showed the
                    # older stored text; the model may stay silent for long, so it gets
                    # what is stored now (unless this round pushed it already).
                    if not pushed_now:
                        self._push(text)
            except Exception:
                logger.exception("A live update of message %s failed", self.message.pk)
                connection.close()
        connection.close()

    def _push(self, text: str) -> None:
        shown = Message(pk=self.message.pk, role=Message.Role.ASSISTANT, content=text)
        shown.citations = self.message.citations
        html = message_html(shown)
        # Once the answer is done the runner pushes the end state; a body pushed after
        # it would show a shorter text, and waiting for this one would delay the end.
        if not self.done.is_set():
            events.push_body(self.user_id, self.message.pk, html)

    def _persist(self, text: str) -> None:
        updates: dict[str, Any] = {"content": text, "heartbeat_at": timezone.now()}
        if self.first_token_at is not None:
            updates["first_token_at"] = self.first_token_at
        Message.objects.filter(pk=self.message.pk, state=Message.State.STREAMING).update(**updates)
        connection.close()

    def should_stop(self) -> bool:
        if self.capped or self.timed_out:
            return True
        # Redis is asked at most every 100 ms: Stop still answers well within a second.
        now = time.monotonic()
        if now >= self.deadline:
            self.timed_out = True
            return True
        if not self.stopped and now - self.stop_checked_at >= 0.1:
            self.stop_checked_at = now
            self.stopped = stop_requested(self.message)
        return self.stopped
