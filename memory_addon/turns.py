"""What the host knows about the turn a model call belongs to."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.models import Agent, MessagingBinding, User

RUN_KINDS = ("interactive", "scheduled", "background")


@dataclass(frozen=True)
class Turn:
    user: User
    agent: Agent | None = None
    binding: MessagingBinding | None = None
    run_kind: str = "interactive"
    conversation_ref: str = ""
    message_ref: str = ""
    # True only when the host itself made conversation_ref/message_ref (its chat and
    # bridge runners): then notes per reply are counted per message, else per window.
    reply_ref_trusted: bool = False
    memory_off: bool = False  # the per-request switch
    context_window: int = 8192
    project_key: str = ""

    @property
    def source(self) -> str:
        return "bridge" if self.binding else "chat"

    @property
    def is_background(self) -> bool:
        return self.run_kind != "interactive"
