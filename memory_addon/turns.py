"""What the host knows about the turn a model call belongs to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.utils.translation import gettext_noop

from accounts.models import Agent, MessagingBinding, User
from memory_addon.models import ChangeSet

# What a temporary chat's every write path answers (M22), for the model and the person.
TEMPORARY_REFUSAL = gettext_noop("This is a temporary chat; nothing is saved to memory.")

RunKind = Literal["interactive", "scheduled", "background"]
RUN_KINDS: tuple[RunKind, ...] = ("interactive", "scheduled", "background")


def run_kind_of(value: str) -> RunKind:
    """A stored run kind; an unknown one counts as background (it may not save notes)."""
    return next((kind for kind in RUN_KINDS if kind == value), "background")


def chat_key_of(chat: str, thread: str) -> str:
    """One external chat (and thread) as the key of its conversation notes.

    Bridges and the API refuse control characters in these ids: the newline is unforgeable.
    """
    return f"{chat}\n{thread}" if thread else chat


@dataclass(frozen=True)
class Turn:
    user: User
    agent: Agent | None = None
    binding: MessagingBinding | None = None
    # Which external chat of the binding (Conversation.chat_key): its own notes.
    chat_key: str = ""
    run_kind: RunKind = "interactive"
    conversation_ref: str = ""
    message_ref: str = ""
    # True only when the host itself made conversation_ref/message_ref (its chat and
    # bridge runners): then notes per reply are counted per message, else per window.
    reply_ref_trusted: bool = False
    memory_off: bool = False  # the per-request switch
    # A temporary chat (M22): it may read memory but never changes it, from any path.
    temporary: bool = False
    context_window: int = 8192
    project_key: str = ""
    # The model runs on this machine (its AI profile says so): what the turn sends it is
    # not masked. Off for every other model, and for clients the host does not know.
    model_local: bool = False
    # The model was offered the strict tool schemas: a null for an optional argument
    # means "not given" (strict mode makes the model send every field).
    strict_tools: bool = False
    # The model can call context_read, so the memory block points it at the topic files.
    # Off in the host's chat for a profile without tools: it has the index lines only.
    reads_files: bool = True
    # The client (per its API token) loads its own rule files (CLAUDE.md, AGENTS.md …),
    # so the approved copies are left out of its context. Never set by the host's chat.
    client_reads_rule_files: bool = False

    @property
    def source(self) -> ChangeSet.Source:
        return ChangeSet.Source.BRIDGE if self.binding else ChangeSet.Source.CHAT

    @property
    def is_background(self) -> bool:
        return self.run_kind != "interactive"
