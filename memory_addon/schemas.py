from __future__ import annotations

from datetime import datetime
from typing import Literal, Self

from ninja import Schema
from pydantic import Field, JsonValue, model_validator

from host.schemas import ErrorOut as ErrorOut
from memory_addon.core.conflicts import ConflictKind, Decision
from memory_addon.core.operations import ImportKind, Operation
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
    title: str = ""  # what people see; older answers stored none
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


class ConflictOut(Schema):
    """The saved note a proposal may contradict, as it was when the proposal was made."""

    kind: ConflictKind = Field(
        description="duplicate: the same text; topic: the same topic key or topic file; "
        "meaning: close in meaning (MEMORY_CONFLICT_SIMILARITY)."
    )
    path: str = Field(description="The file the old note is in: the index or a topic file.")
    text: str = Field(description="The old note (a topic file: its first 2000 characters).")
    date: str = Field(description="The old note's date (ISO); the file's last change if none.")
    entry_id: str = Field(description="The old entry's id; empty for the person's own text.")
    similarity: float | None = None


class ProvenanceOut(Schema):
    """Where an imported item came from."""

    kind: ImportKind
    file: str
    item: int = Field(description="Its position in the import, from 1.")
    line: int = Field(description="The line it starts on; 0 for JSON.")
    original_id: str
    original_date: str


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
    conflict: ConflictOut | None = Field(
        None, description="Set when this contradicts a saved note: confirm with a decision."
    )
    provenance: ProvenanceOut | None = Field(None, description="Set for imported items.")


class ImportIn(Schema):
    kind: ImportKind = Field(
        description="chatgpt: saved memories (one per line, or a JSON list of strings or of "
        "objects with content); claude: its memory (Markdown); mem0: its JSON export (objects "
        "with memory); agents_md: CLAUDE.md / AGENTS.md text. docs/memory-imports.md."
    )
    text: str = Field(
        description="The exported file's text (at most MEMORY_IMPORT_MAX_BYTES).",
        examples=['[{"id": "2f1c6b7e", "memory": "Likes cricket", "created_at": "2024-07-26"}]'],
    )
    file_name: str = Field(
        "", max_length=200, description="Shown on each item's card.", examples=["mem0.json"]
    )


class ImportOut(Schema):
    proposals: list[ProposalOut] = Field(description="One per item, waiting in the Inbox.")
    duplicates: int = Field(description="Of them, the ones already saved (conflict: duplicate).")
    conflicts: int = Field(description="Of them, the ones that may contradict a saved note.")
    repeated: int = Field(description="Items the file held more than once, proposed once.")


class ConfirmIn(Schema):
    text: str | None = Field(None, description="Edited entry text (at most 300 characters).")
    decision: Decision | None = Field(
        None,
        examples=["replace"],
        description="For a proposal with a conflict: replace (the old note goes, in the same "
        "change set) or keep_both (the default). Discard is the reject endpoint.",
    )


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
