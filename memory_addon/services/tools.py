"""Model tools (M4, M17): OpenAI function schemas and one executor.

Every result is text the model can act on; memory comes back marked as untrusted
observations, and refusals say why and what to do instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Literal, NamedTuple, NotRequired, TypedDict, cast

from django.db import transaction
from pydantic import JsonValue

from accounts.models import User
from host.core.fulltext import snippet
from host.core.secret_guard import mask_outbound
from host.core.untrusted import wrap_untrusted
from host.errors import ChangeRefused, NotAllowed, Refusal
from memory_addon.core.operations import text_argument
from memory_addon.core.shown_match import shown_spans
from memory_addon.core.tool_arguments import (
    arguments_refusal,
    strict_arguments,
    strict_parameters,
)
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope
from memory_addon.services.changes import (
    ABSENT,
    FileWrite,
    change_set_apply,
    clean_path,
)
from memory_addon.services.context import memory_readable, neutralize, readable_scopes
from memory_addon.services.locks import memory_lock
from memory_addon.services.note_search import note_search
from memory_addon.services.proposals import (
    check_may_change,
    memory_change_request,
    memory_revert_request,
)
from memory_addon.services.scopes import BANK_INDEX_PATH, bank_find, ensure_bank, scope_folder
from memory_addon.turns import Turn

# A tool call's arguments as the model sent them: any JSON, checked by each tool.
ToolArgs = Mapping[str, object]


class ToolFunction(TypedDict):
    name: str
    description: str
    parameters: dict[str, JsonValue]  # a JSON Schema object
    strict: NotRequired[bool]  # only in the strict variant


class ToolSchema(TypedDict):
    """One tool in OpenAI function-calling format."""

    type: Literal["function"]
    function: ToolFunction


class ToolResult(NamedTuple):
    """What a tool call gives back; a refusal is ok=False with the reason, never an error."""

    ok: bool
    output: str  # text for the model


def _fn(
    name: str, description: str, properties: dict[str, JsonValue], required: list[str]
) -> ToolSchema:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list[JsonValue](required),
                "additionalProperties": False,
            },
        },
    }


_SCOPE: dict[str, JsonValue] = {
    "type": "string",
    "enum": ["user", "agent", "conversation"],
    "description": "Whose notes: the person's (default), this agent's, or this conversation's.",
}

CHAT_TOOLS = [
    _fn(
        "context_read",
        "Read one memory file (an index or a topic file named in the index).",
        {"path": {"type": "string", "description": "e.g. index.md or home.md"}, "scope": _SCOPE},
        ["path"],
    ),
    _fn(
        "propose_change",
        "Ask to save, replace or remove a note. Depending on the person's choice it is saved "
        "at once, waits for confirmation, or is refused; relay the answer to the person.",
        {
            "action": {
                "type": "string",
                "enum": ["add", "replace", "remove", "write_topic", "delete_topic"],
            },
            "scope": _SCOPE,
            "text": {
                "type": "string",
                "description": (
                    "The index line, at most 300 characters, "
                    "e.g. '- home: lives in Rome -> home.md'."
                ),
            },
            "entry_id": {
                "type": ["string", "integer"],
                "description": "For replace/remove: the id of an existing entry.",
            },
            "topic": {"type": "string", "description": "A topic file path such as home.md."},
            "topic_content": {
                "type": "string",
                "description": "The whole new text of the topic file.",
            },
            "reason": {
                "type": "string",
                "description": "Why this is worth remembering; shown to the person.",
            },
        },
        ["action"],
    ),
    _fn(
        "revert_change",
        "Undo a memory change saved in this chat "
        "(for example right after the person says 'forget that').",
        {"change_id": {"type": "integer"}},
        ["change_id"],
    ),
    _fn(
        "list_memory",
        "Search the notes you may read for words; returns matching files with a snippet.",
        {"query": {"type": "string"}},
        ["query"],
    ),
]

_PATH: dict[str, JsonValue] = {
    "type": "string",
    "description": "Relative .md path; default MEMORY.md",
}
BANK_TOOLS = [
    _fn("read_memory", "Read a file of the project memory bank.", {"path": _PATH}, []),
    _fn(
        "list_memory",
        "List the bank's files, or search them for words when a query is given.",
        {"query": {"type": ["string", "null"]}},
        [],
    ),
    _fn(
        "write_memory",
        "Create or overwrite one whole file of the bank.",
        {"content": {"type": "string"}, "path": _PATH},
        ["content"],
    ),
    _fn(
        "edit_memory",
        "Replace exactly one occurrence of old_string with new_string in a bank file.",
        {"old_string": {"type": "string"}, "new_string": {"type": "string"}, "path": _PATH},
        ["old_string", "new_string"],
    ),
    _fn("delete_memory", "Delete one file of the bank.", {"path": {"type": "string"}}, ["path"]),
]


def _strict(tool: ToolSchema) -> ToolSchema:
    function = tool["function"]
    return {
        "type": "function",
        "function": {
            "name": function["name"],
            "description": function["description"],
            "parameters": strict_parameters(function["parameters"]),
            "strict": True,
        },
    }


# The tools that change memory; a turn that may only read (a temporary chat) gets the rest.
WRITE_TOOLS = frozenset(
    {"propose_change", "revert_change", "write_memory", "edit_memory", "delete_memory"}
)


# Read tools of the apps above memory (the chat's past-chat search, B10): registered at
# start-up, offered and run with the chat tools through the same argument gate.
_REGISTERED: dict[str, tuple[ToolSchema, Callable[[Turn, ToolArgs], str]]] = {}


def chat_tool_register(schema: ToolSchema, handler: Callable[[Turn, ToolArgs], str]) -> None:
    """Add a reading tool to the chat tools (never to the bank tools); safe to call twice."""
    _REGISTERED[schema["function"]["name"]] = (schema, handler)


def _chat_tools() -> list[ToolSchema]:
    return [*CHAT_TOOLS, *(schema for schema, _ in _REGISTERED.values())]


def tool_schemas(
    *, bank: bool = False, strict: bool = False, read_only: bool = False
) -> list[ToolSchema]:
    """The chat tools or the bank tools; the two sets are never offered together (a turn
    with a project key runs the bank tools, any other the chat tools), so their two
    `list_memory` tools never meet. read_only leaves out WRITE_TOOLS (the gate refuses
    them anyway; not offering them keeps the model from trying)."""
    tools = BANK_TOOLS if bank else _chat_tools()
    if read_only:
        tools = [tool for tool in tools if tool["function"]["name"] not in WRITE_TOOLS]
    return [_strict(tool) for tool in tools] if strict else tools


def _wrap(folder: str, path: str, content: str) -> str:
    attrs = {"path": f"{folder}/{path}", "trust": "untrusted-observation"}
    return wrap_untrusted("memory_file", content, attrs=attrs).text


def _scope_by_name(turn: Turn, name: str) -> MemoryScope | None:
    """The scope a read names, or None when it has no files yet."""
    wanted = name or "user"
    allowed = (
        {"user"}
        | ({"agent"} if turn.agent else set())
        | ({"conversation"} if turn.binding else set())
    )
    if turn.agent and not turn.agent.memory_allowed:
        raise NotAllowed("The Memory add-on is not allowed for this agent.")
    if wanted not in allowed:
        raise NotAllowed(f"This chat cannot read the {wanted} memory.")
    return next((scope for origin, scope in readable_scopes(turn) if origin == wanted), None)


def _context_read(turn: Turn, args: ToolArgs) -> str:
    reason = memory_readable(turn)
    if reason:
        raise NotAllowed(reason)
    scope = _scope_by_name(turn, text_argument(args, "scope") or "user")
    path = clean_path(text_argument(args, "path") or "index.md")
    row = MemoryFile.objects.filter(scope=scope, path=path).first() if scope else None
    if row is None:
        listing = (
            ", ".join(MemoryFile.objects.filter(scope=scope).values_list("path", flat=True))
            if scope
            else ""
        )
        return f"There is no file {path}. Files here: {listing or 'none yet'}."
    return _wrap(scope_folder(scope), path, row.content)  # type: ignore[arg-type]


def _search(
    user: User, scopes: list[MemoryScope], query: str, limit: int = 10
) -> list[tuple[MemoryScope, str, str]]:
    """Keyword and meaning (note_search), fused; a snippet of each file.

    Snippets are cut in Python from the masked text: a snippet cut in SQL could
    separate a password cue from its value, and the value would then go out unmasked.
    """
    return [
        (hit.scope, hit.path, snippet(mask_outbound(hit.content), query))
        for hit in note_search(user=user, scopes=scopes, query=query, limit=limit)
    ]


def _list_memory(turn: Turn, args: ToolArgs) -> str:
    reason = memory_readable(turn)
    if reason:
        raise NotAllowed(reason)
    query = text_argument(args, "query").strip()
    if not query:
        raise ChangeRefused("Give a query: a few words to search for.")
    hits = _search(turn.user, [scope for _, scope in readable_scopes(turn)], query)
    if not hits:
        return f"No note matches {query!r}."
    return "\n".join(_wrap(scope_folder(scope), path, snippet) for scope, path, snippet in hits)


def _propose_change(turn: Turn, args: ToolArgs) -> str:
    outcome = memory_change_request(turn=turn, operation=args, reason=text_argument(args, "reason"))
    return outcome.message


def _revert_change(turn: Turn, args: ToolArgs) -> str:
    # A whole number: the argument gate checked it (JSON may spell it 3.0).
    change_id = int(cast(float, args["change_id"]))
    return memory_revert_request(turn=turn, change_id=change_id).message


# --- Project banks (M17) -----------------------------------------------------


def _bank(turn: Turn, *, write: bool = False) -> MemoryScope | None:
    """The turn's project bank under the same switches as all memory (M16, H9).

    Reads need memory to be readable; writes also need every rule a note needs
    (policy not read-only, not a background run). A read never creates the bank.
    """
    if not turn.project_key:
        raise ChangeRefused("No project identity was sent; bank tools need project_key.")
    if write:
        check_may_change(turn)
    else:
        reason = memory_readable(turn)
        if reason:
            raise NotAllowed(reason)
    scope = (
        ensure_bank(turn.user, turn.project_key)
        if write
        else bank_find(turn.user, turn.project_key)
    )
    if scope is not None and not scope.enabled:
        raise NotAllowed("Project memory is off for this project; the files are kept.")
    return scope


def _bank_row(scope: MemoryScope | None, path: str) -> MemoryFile | None:
    return MemoryFile.objects.filter(scope=scope, path=path).first() if scope else None


def _bank_read(turn: Turn, args: ToolArgs) -> str:
    scope = _bank(turn)
    path = clean_path(text_argument(args, "path") or BANK_INDEX_PATH, bank=True)
    row = _bank_row(scope, path)
    if row is None:
        return f"There is no file {path} in this project's memory."
    return _wrap("project", path, row.content)


def _bank_list(turn: Turn, args: ToolArgs) -> str:
    scope = _bank(turn)
    if scope is None:
        return "The bank is empty."
    query = text_argument(args, "query").strip()
    if query:
        hits = _search(turn.user, [scope], query, limit=20)
        return (
            "\n".join(_wrap("project", p, s) for _, p, s in hits) or f"Nothing matches {query!r}."
        )
    rows = MemoryFile.objects.filter(scope=scope).values_list("path", "size")
    return "\n".join(f"{path} ({size} bytes)" for path, size in rows) or "The bank is empty."


def _written_bank(turn: Turn) -> MemoryScope:
    scope = _bank(turn, write=True)
    assert scope is not None  # noqa: S101 - a write creates the bank
    return scope


def _bank_apply(
    turn: Turn, scope: MemoryScope, path: str, content: str | None, base: str
) -> ChangeSet:
    with transaction.atomic(durable=True):
        memory_lock(turn.user.pk)
        return change_set_apply(
            user=turn.user,
            scope=scope,
            writes=[FileWrite(path, content)],
            origin=ChangeSet.Origin.AUTOMATIC,
            source=ChangeSet.Source.API,
            machine=False,  # a bank is the agent's own notebook; no person text inside to guard
            base_hashes={path: base},
            summary=f"{'Deleted' if content is None else 'Wrote'} {path}",
        )


def _bank_write(turn: Turn, args: ToolArgs) -> str:
    scope = _written_bank(turn)
    path = clean_path(text_argument(args, "path") or BANK_INDEX_PATH, bank=True)
    row = _bank_row(scope, path)
    _bank_apply(turn, scope, path, text_argument(args, "content"), row.sha256 if row else ABSENT)
    return f"Wrote {path}."


def _bank_edit(turn: Turn, args: ToolArgs) -> str:
    scope = _written_bank(turn)
    path = clean_path(text_argument(args, "path") or BANK_INDEX_PATH, bank=True)
    old, new = text_argument(args, "old_string"), text_argument(args, "new_string")
    if not old:
        raise ChangeRefused("old_string is empty; give the exact text to replace.")
    row = _bank_row(scope, path)
    if row is None:
        raise ChangeRefused(f"There is no file {path}; nothing was written.")
    edited = replace_once(row.content, old, new, field="old_string", where=path)
    _bank_apply(turn, scope, path, edited, row.sha256)
    return f"Edited {path}."


def replace_once(content: str, old: str, new: str, *, field: str, where: str) -> str:
    """`content` with its one occurrence of `old` replaced by `new` (M4).

    `old` may be the text as stored or as a read showed it (reads normalise notes):
    text shown is mapped back to the stored span it came from, so exactly that span
    changes. No occurrence, or more than one, is refused.
    """
    count = content.count(old)
    if count == 1:
        start = content.index(old)
        return content[:start] + new + content[start + len(old) :]
    spans = shown_spans(content, old, neutralize) if count == 0 else []
    if len(spans) == 1:
        (start, end) = spans[0]
        return content[:start] + new + content[end:]
    raise ChangeRefused(
        f"{field} occurs {count or len(spans)} times in {where}; it must occur exactly once. "
        "Nothing was written; include more surrounding text."
    )


def _bank_delete(turn: Turn, args: ToolArgs) -> str:
    scope = _written_bank(turn)
    path = clean_path(text_argument(args, "path"), bank=True)
    row = _bank_row(scope, path)
    if row is None:
        raise ChangeRefused(f"There is no file {path}; nothing was deleted.")
    _bank_apply(turn, scope, path, None, row.sha256)
    return f"Deleted {path}."


_BANK_PARAMETERS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in BANK_TOOLS}
_CHAT: dict[str, Callable[[Turn, ToolArgs], str]] = {
    "context_read": _context_read,
    "propose_change": _propose_change,
    "revert_change": _revert_change,
    "list_memory": _list_memory,
}
_BANK: dict[str, Callable[[Turn, ToolArgs], str]] = {
    "read_memory": _bank_read,
    "list_memory": _bank_list,
    "write_memory": _bank_write,
    "edit_memory": _bank_edit,
    "delete_memory": _bank_delete,
}


def tool_call_execute(*, turn: Turn, name: str, arguments: str | ToolArgs) -> ToolResult:
    """Run one tool call; returns (ok, text for the model). Refusals are text, not exceptions."""
    table = _BANK if turn.project_key else _CHAT | {n: h for n, (_, h) in _REGISTERED.items()}
    handler = table.get(name)
    if handler is None:
        return ToolResult(False, f"Unknown tool {name!r}. Available: {', '.join(sorted(table))}.")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return ToolResult(False, "The arguments are not valid JSON; send a JSON object.")
    if not isinstance(arguments, dict):
        return ToolResult(False, "The arguments must be a JSON object.")
    parameters = (
        _BANK_PARAMETERS[name]
        if turn.project_key
        else {t["function"]["name"]: t["function"]["parameters"] for t in _chat_tools()}[name]
    )
    if turn.strict_tools:
        arguments = strict_arguments(parameters, arguments)
    problem = arguments_refusal(name, parameters, arguments)
    if problem:
        return ToolResult(False, f"Refused: {problem}")
    try:
        # Everything a tool returns goes to a model: mask what looks like a secret.
        return ToolResult(True, mask_outbound(handler(turn, arguments)))
    except Refusal as refusal:
        return ToolResult(False, f"Refused: {refusal.message}")
