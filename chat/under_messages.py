"""What an app above the chat shows under its messages (the rule cards of M13).

The chat defines the hook and the app fills it from its AppConfig.ready(), so the chat
reads no model of that app and never imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from chat.models import Conversation, Message
from memory_addon.services.policy import Policy


@dataclass(frozen=True)
class UnderMessages:
    cards: Mapping[int, Sequence[object]] = field(default_factory=dict)  # by message id
    off_reason: str = ""  # why the feature is off for this conversation ("" when on)
    choices: Sequence[object] = ()  # Save to of "Remember as rule…", the same for every message


class UnderMessagesSource(Protocol):
    def __call__(
        self,
        conversation: Conversation,
        messages: Sequence[Message],
        policy: Policy | None,
        *,
        with_cards: bool,
    ) -> UnderMessages: ...


_source: list[UnderMessagesSource] = []  # one at most: learning's


def under_messages_register(source: UnderMessagesSource) -> None:
    _source[:] = [source]


def under_messages(
    conversation: Conversation,
    messages: Sequence[Message],
    policy: Policy | None,
    *,
    with_cards: bool,
) -> UnderMessages:
    """The registered app's cards and reason; nothing when no app registered one."""
    if not _source:
        return UnderMessages()
    return _source[0](conversation, messages, policy, with_cards=with_cards)
