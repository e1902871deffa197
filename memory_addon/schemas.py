from __future__ import annotations

from datetime import datetime
from typing import Literal, Self

from ninja import Schema
from pydantic import Field, JsonValue, model_validator

from host.schemas import ErrorOut as ErrorOut
from memory_addon.core.operations import Operation
from memory_addon.turns import RunKind


class ScopeOut(Schema):
    id: int
    kind: str
    label: str
    folder: str
    enabled: bool


class FileOut(Schema):
    path: str
    sha256: str
    size: int
    updated_at: datetime


class SecretFlagOut(Schema):
    line: int
    kind: str


class FileContentOut(FileOut):
    content: str
    secret_flag: SecretFlagOut | None = None


class FileWriteIn(Schema):
    content: str
    base_sha256: str | None = Field(
        None,
        description="Hash of the version you edited; '' for a new file. A mismatch is a 409.",
    )


class ChangeSummaryOut(Schema):
    id: int
    scope_id: int
    origin: str
    source: str
    summary: str
    created_at: datetime
    paths: list[str]
    undone: bool
    undoes_id: int | None


class FileDiffOut(Schema):
    path: str
    diff: str
    before_sha256: str
    after_sha256: str


class ChangeDetailOut(ChangeSummaryOut):
    changes: list[FileDiffOut]


class VersionOut(Schema):
    id: int
    change_set_id: int
    origin: str
    source: str
    path: str
    created_at: datetime
    deleted: bool
    diff_to_current: str


class TurnIn(Schema):
    agent_id: int | None = None
    binding_id: int | None = None
    chat_id: str = Field(
        "",
        max_length=200,
        pattern=r"^[^\x00-\x1f\x7f]*$",
        description="With binding_id: the platform's chat; the turn reads and proposes into "
        "that chat's conversation notes (none: the binding's first conversation).",
    )
    thread_id: str = Field(
        "",
        max_length=200,
        pattern=r"^[^\x00-\x1f\x7f]*$",
        description="A thread of chat_id, with conversation notes of its own.",
    )
    run_kind: RunKind = "interactive"
    context_window: int = Field(8192, ge=256, le=10_000_000)
    memory_off: bool = False
    conversation_ref: str = Field("", max_length=200)
    message_ref: str = Field("", max_length=200)
    project_key: str = Field("", max_length=128)
    strict_tools: bool = Field(
        False,
        description="The model was offered the strict tool schemas (GET /tools?strict=true): "
        "a null for an optional argument counts as not given.",
    )

    @model_validator(mode="after")
    def _thread_in_a_chat(self) -> Self:
        if self.thread_id and not self.chat_id:
            raise ValueError("a thread_id needs a chat_id: a thread belongs to a chat")
        return self


class TurnContextIn(TurnIn):
    known_hash: str = Field(
        "",
        pattern=r"^(?:[0-9a-f]{64})?$",
        description="The hash of the memory block the client holds (a turn-context answer's "
        "`hash`, lowercase hex SHA-256). The same as now: the answer says unchanged and "
        "leaves the block out. An earlier block the host still knows: a delta against it. "
        "Else the whole block.",
        examples=["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"],
    )


class BlockDeltaOut(Schema):
    base_hash: str = Field(description="The known_hash the delta is against.")
    added: list[str] = Field(description="Lines of the new block the held one lacks.")
    removed: list[str] = Field(description="Lines of the held block that are gone.")


class SentItemOut(Schema):
    origin: str
    scope: str
    kind: str
    entry_id: str
    tokens: int


class SentAlongOut(Schema):
    items: list[SentItemOut]
    omitted: int
    tokens: int
    hash: str


class SentSkillOut(Schema):
    addon: str
    name: str
    tokens: int
    rules: int
    tools: list[str]


class SentFileOut(Schema):
    addon: str
    path: str
    tokens: int


class AddonsSentOut(Schema):
    skills: list[SentSkillOut]
    context_files: list[SentFileOut]
    omitted: list[str]
    tokens: int
    budget: int
    hash: str


class SentReferenceOut(Schema):
    name: str
    tokens: int
    cut: bool


class NotSentReferenceOut(Schema):
    name: str
    why: str


class ReferenceFilesSentOut(Schema):
    files: list[SentReferenceOut]
    not_sent: list[NotSentReferenceOut]
    off: str = Field(
        description="Why no reference file was sent (kill switch, policy, or a token whose "
        "client reads its own rule files); empty when they were considered."
    )


class TurnContextOut(Schema):
    block: str = Field(
        description="The memory block; empty when unchanged is true or a delta is given."
    )
    hash: str = Field(description="The SHA-256 of the current memory block, for known_hash.")
    unchanged: bool = Field(
        False, description="known_hash is the current block: keep sending the one you hold."
    )
    delta: BlockDeltaOut | None = Field(
        None,
        description="What changed since the block of known_hash: send it as a short "
        "reminder after the history and keep the held block at its place, or re-fetch "
        "without known_hash to place the new block.",
    )
    sent_along: SentAlongOut
    memory_off_reason: str
    addons_block: str = Field(
        description="Skills and add-on context files: put the skills before the memory block "
        "and the context files after it (see docs/addons.md)."
    )
    addons: AddonsSentOut
    reference_block: str = Field(
        description="The approved reference files (M14), wrapped as reference data: put it "
        "right after the memory block. Empty when none is sent; reference_files says why."
    )
    reference_files: ReferenceFilesSentOut


class ToolCallIn(Schema):
    turn: TurnIn
    name: str
    arguments: dict[str, JsonValue] | str = Field(default_factory=dict)


class ToolCallOut(Schema):
    ok: bool
    output: str


class ProposalOut(Schema):
    id: int
    state: str
    scope_id: int
    folder: str
    operation: Operation
    reason: str
    why_waiting: str
    source: str
    created_at: datetime
    expires_at: datetime
    diffs: list[FileDiffOut]


class ConfirmIn(Schema):
    text: str | None = Field(None, description="Edited entry text (at most 300 characters).")


class NoteOut(Schema):
    key: str = Field(description="Names this note in this version of the index (line:hash).")
    text: str
    kind: Literal["person", "machine"] = Field(
        description="person: written by the person; machine: a fenced entry an AI saved."
    )
    origin: str = ""
    created: str = ""


class NotesOut(Schema):
    index_path: str
    index_sha256: str = Field(description="Send it back as base_sha256 to edit or delete a note.")
    notes: list[NoteOut]


class NoteIn(Schema):
    text: str = Field(description="One note, at most 300 characters, added at the end.")


class NoteEditIn(Schema):
    text: str
    base_sha256: str
