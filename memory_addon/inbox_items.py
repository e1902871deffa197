"""What an app above the memory add-on lists in the Inbox (M20's waiting triage cards).

The add-on defines the hook and the app fills it from its AppConfig.ready(), so the
Inbox reads no model of that app and never imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from accounts.models import User


@dataclass(frozen=True)
class InboxItem:
    text: str  # one line, shown escaped
    url: str  # where the person answers it
    link: str  # the link's text


_sources: list[Callable[[User], Sequence[InboxItem]]] = []


def inbox_items_register(source: Callable[[User], Sequence[InboxItem]]) -> None:
    if source not in _sources:
        _sources.append(source)


def inbox_items(user: User) -> list[InboxItem]:
    return [item for source in _sources for item in source(user)]
