"""The shape of a memory change the model asks for, as a proposal stores it (M8, M9).

Pure: no Django. `memory_change_request` normalises what the model sent into an
`Operation`; the planner, the proposal row and the API all read this one shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NotRequired, TypedDict

from host.errors import ChangeRefused

# What a model may ask for; "revert" is made by the host when a revert_change waits.
ModelAction = Literal["add", "replace", "remove", "write_topic", "delete_topic"]
Action = ModelAction | Literal["revert"]
# Whose notes an operation changes; the model names one of these (default "user").
ScopeName = Literal["user", "agent", "conversation"]


class Operation(TypedDict):
    """One normalised change; only the keys its action needs are present."""

    action: Action
    created: str  # ISO date the entry carries
    scope: NotRequired[str]
    text: NotRequired[str]  # add, replace: the entry text (at most 300 characters)
    entry_id: NotRequired[str]  # replace, remove: the entry to change; add: the new id
    entry_sha256: NotRequired[str]  # replace, remove: the entry's hash when proposed
    topic: NotRequired[str]  # a topic file's path
    topic_content: NotRequired[str]  # write_topic, add with a topic: the file's content
    change_id: NotRequired[int]  # revert: the change set to undo


def text_argument(args: Mapping[str, object], name: str, default: str = "") -> str:
    """A text argument the model sent: missing or null is `default`; any other non-string
    is refused, so a list or an object never reaches a note as its Python spelling."""
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ChangeRefused(f"{name} must be a string, not {json_kind(value)}.")
    return value


def json_kind(value: object) -> str:
    """How a JSON value reads in a refusal: "a list", "null" …"""
    if value is None:
        return "null"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


ImportKind = Literal["chatgpt", "claude", "mem0", "agents_md"]


class Provenance(TypedDict):
    """Where an imported item came from (M23), shown on its Inbox card."""

    kind: ImportKind
    file: str  # the uploaded file's name, or "" for pasted text
    item: int  # 1-based position in the file
    line: int  # the line it starts on (0 when the format has no lines, as JSON)
    original_id: str  # the exporting tool's id, when it gave one
    original_date: str  # the exporting tool's date, when it gave one
