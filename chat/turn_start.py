"""What an app above the chat does at the start of a turn (the triage card of M20).

The chat defines the hook and the app fills it from its AppConfig.ready(), so the chat
never imports it. The hook may park the turn (the app queues it again later) or hand it
a plan the person chose, which the turn sends along as its plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from chat.models import Message


@dataclass(frozen=True)
class TurnStart:
    parked: bool = False  # the answer waits; the app queues the turn again
    plan: str = ""  # the plan the person chose for this turn ("" for none)


class TurnStartSource(Protocol):
    def __call__(self, message: Message) -> TurnStart: ...


_source: list[TurnStartSource] = []  # one at most: learning's


def turn_start_register(source: TurnStartSource) -> None:
    _source[:] = [source]


def turn_start(message: Message) -> TurnStart:
    """The registered app's decision; run as asked when no app registered one."""
    if not _source:
        return TurnStart()
    return _source[0](message)
