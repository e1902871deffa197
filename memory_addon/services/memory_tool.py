"""Backend for Anthropic's memory tool (B2): view, create, str_replace, insert, delete, rename.

The model addresses files as `/memories/<relative path>` (.md; in a bank also .txt and
.xml). With a project key the commands act on that project's bank (M17); without one,
on the person's own notes (M1). Every write goes through the same services as every other write:

- a bank write is one change set (`change_set_apply`): path rules, limits, the
  secret guard and undo apply exactly as for `write_memory`/`edit_memory`;
- a write to the person's notes is a `propose_change` (`write_topic` /
  `delete_topic`), so the save mode (ask / auto / never), the notes-per-reply cap,
  the long-note rule, the secret guard and the protection of the person's own text
  apply. `index.md` is only readable here: its entries change through
  `propose_change`. `rename` and folder deletes of the person's notes are refused
  (several proposals that could be confirmed apart); banks do them in one change set.

Outputs and errors follow the SDK's reference tool (`BetaLocalFilesystemMemoryTool`);
the differences left are listed in docs/memory-tool.md and pinned by
tests/memory_addon/test_memory_tool_parity.py. Refusals come back as text with
ok=False; nothing is written on a refusal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from django.db import transaction
from django.db.models import QuerySet
from pydantic import JsonValue

from host.core.secret_guard import mask_outbound
from host.errors import ChangeRefused, NotAllowed, NothingToChange, Refusal
from memory_addon.core.paths import BANK_TYPES, MARKDOWN
from memory_addon.core.shown_match import shown_spans
from memory_addon.core.tool_arguments import arguments_refusal
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope
from memory_addon.services.changes import FileWrite, change_set_apply, clean_path
from memory_addon.services.context import memory_readable, neutralize
from memory_addon.services.locks import memory_lock
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import INDEX_PATH
from memory_addon.services.tools import ToolArgs, _bank
from memory_addon.turns import Turn

ROOT = "/memories"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")

_PATH: dict[str, JsonValue] = {"type": "string", "description": f"e.g. {ROOT}/notes.md"}
_TEXT: dict[str, JsonValue] = {"type": "string"}
_LINE: dict[str, JsonValue] = {"type": "integer", "description": "0 inserts at the top"}
_RANGE: dict[str, JsonValue] = {
    "type": "array",
    "items": {"type": "integer"},
    "minItems": 2,
    "maxItems": 2,
    "description": "[first line, last line]; -1 means the end",
}


def _command(
    name: str, fields: dict[str, JsonValue], optional: tuple[str, ...] = ()
) -> dict[str, JsonValue]:
    return {
        "type": "object",
        "properties": {"command": {"const": name}, **fields},
        "required": ["command", *(f for f in fields if f not in optional)],
        "additionalProperties": False,
    }


# Each command's input as Anthropic's memory tool sends it (served at
# GET /api/memory/memory-tool/commands); the argument gate checks every call against it.
COMMAND_SCHEMAS: dict[str, dict[str, JsonValue]] = {
    "view": _command("view", {"path": _PATH, "view_range": _RANGE}, optional=("view_range",)),
    "create": _command("create", {"path": _PATH, "file_text": _TEXT}),
    "str_replace": _command("str_replace", {"path": _PATH, "old_str": _TEXT, "new_str": _TEXT}),
    "insert": _command("insert", {"path": _PATH, "insert_line": _LINE, "insert_text": _TEXT}),
    "delete": _command("delete", {"path": _PATH}),
    "rename": _command("rename", {"old_path": _PATH, "new_path": _PATH}),
}


@dataclass(frozen=True)
class MemoryToolResult:
    ok: bool
    output: str
    change_id: int | None = None
    proposal_id: int | None = None


class ContractError(ChangeRefused):
    """An error Anthropic's reference tool gives in the same words (a missing path, an
    existing file): sent without our "Refused:" prefix, so clients see the same text."""


def _relative(raw: object, turn: Turn) -> str:
    """`/memories/a/b.md` → `a/b.md`, a folder `/memories/a/` → `a`, the root → ""."""
    path = str(raw).strip()
    if path.rstrip("/") == ROOT:
        return ""
    if not path.startswith(ROOT + "/"):
        raise ChangeRefused(f"Path must start with {ROOT}, got: {path}")
    rest = path[len(ROOT) + 1 :].strip("/")
    bank = bool(turn.project_key)
    if rest.lower().endswith(BANK_TYPES if bank else MARKDOWN):
        return clean_path(rest, bank=bank)
    # A folder: the same rules as a file path inside it.
    return clean_path(rest + "/x.md", bank=bank).removesuffix("/x.md")


def _whole(value: object) -> int:
    """A number the argument gate let through as an integer (JSON may spell it 3.0)."""
    return int(cast(float, value))


def _missing(given: str) -> ContractError:
    return ContractError(f"The path {given} does not exist. Please provide a valid path.")


def _human_size(size: int) -> str:
    """Bytes as the reference tool shows them: 0B, 512B, 1.5K, 2M."""
    unit = min((size.bit_length() - 1) // 10, 3) if size else 0
    value = size / 1024**unit
    return f"{value:.0f}{'BKMG'[unit]}" if value == int(value) else f"{value:.1f}{'BKMG'[unit]}"


# --- where the files are ------------------------------------------------------


def _read_scope(turn: Turn) -> MemoryScope | None:
    if turn.project_key:
        return _bank(turn)
    reason = memory_readable(turn)
    if reason:
        raise NotAllowed(reason)
    # A read never creates the person's scope.
    return MemoryScope.objects.filter(kind=MemoryScope.Kind.USER, owner=turn.user).first()


def _row(scope: MemoryScope | None, path: str) -> MemoryFile | None:
    return MemoryFile.objects.filter(scope=scope, path=path).first() if scope and path else None


def _under(scope: MemoryScope | None, folder: str) -> QuerySet[MemoryFile]:
    """The files inside a folder ("" is the root), at any depth; a folder exists while it
    holds a file, since files are rows and folders only their path prefixes."""
    rows = MemoryFile.objects.filter(scope=scope).order_by("path")
    if scope is None:
        return rows.none()
    return rows.filter(path__startswith=folder + "/") if folder else rows


def _exists(scope: MemoryScope | None, path: str) -> bool:
    return _row(scope, path) is not None or bool(path and _under(scope, path).exists())


def _file(turn: Turn, given: str) -> tuple[str, MemoryFile]:
    """The file a str_replace or insert names, with the reference tool's errors."""
    path = _relative(given, turn)
    scope = _read_scope(turn)
    row = _row(scope, path)
    if row is None:
        if not path or _under(scope, path).exists():
            raise ContractError(f"The path {given} is not a file.")
        raise _missing(given)
    return path, row


def _check_parents_are_folders(scope: MemoryScope | None, path: str) -> None:
    parts = path.split("/")[:-1]
    parents = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    clash = MemoryFile.objects.filter(scope=scope, path__in=parents).first() if scope else None
    if clash is not None:
        raise ChangeRefused(f"{ROOT}/{clash.path} is a file, not a folder; nothing was written.")


# --- commands -----------------------------------------------------------------


def _listing(given: str, folder: str, rows: list[MemoryFile]) -> str:
    """Two levels below the folder, each folder followed by what it holds, by name."""
    sizes: dict[str, int] = {}
    for row in rows:
        parts = row.path[len(folder) + 1 if folder else 0 :].split("/")
        for depth in range(1, min(len(parts), 2) + 1):
            name = "/".join(parts[:depth]) + ("/" if depth < len(parts) else "")
            sizes[name] = sizes.get(name, 0) + row.size
    # Folders sort by their name without the slash, as a directory walk would.
    order = sorted(sizes, key=lambda name: name.rstrip("/").split("/"))
    lines = [f"{_human_size(sum(r.size for r in rows))}\t{given}"]
    lines += [f"{_human_size(sizes[name])}\t{given}/{name}" for name in order]
    return (
        f"Here're the files and directories up to 2 levels deep in {given}, "
        "excluding hidden items:\n" + "\n".join(lines)
    )


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, start=first))


def _shown(path: str, numbered: str) -> str:
    """File text goes to the model marked as an untrusted observation (M17)."""
    return (
        f'<memory_file path="{ROOT}/{path}" trust="untrusted-observation">\n'
        f"{numbered}\n</memory_file>"
    )


def _view(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    given = str(args["path"])
    path = _relative(given, turn)
    scope = _read_scope(turn)
    row = _row(scope, path)
    if row is None:
        rows = list(_under(scope, path).only("path", "size"))
        if path and not rows:
            raise _missing(given)
        return MemoryToolResult(True, _listing(given, path, rows))
    lines = neutralize(row.content).split("\n")
    first, shown = 1, lines
    view_range = args.get("view_range")
    if isinstance(view_range, list):  # two whole numbers: the argument gate checked it
        start, end = max(1, _whole(view_range[0])), _whole(view_range[1])
        shown = lines[start - 1 : len(lines) if end == -1 else end]
        first = start
    return MemoryToolResult(
        True,
        f"Here's the content of {given} with line numbers:\n"
        + _shown(path, _numbered(shown, first)),
    )


def _write(turn: Turn, writes: list[FileWrite], *, what: str, done: str) -> MemoryToolResult:
    """Apply writes (content None deletes) under the rules of their target."""
    if turn.project_key:
        scope = _bank(turn, write=True)
        assert scope is not None  # noqa: S101 - a write creates the bank
        return _bank_apply(turn, scope, writes, summary=what, done=done)
    if len(writes) != 1:
        raise ChangeRefused(
            "Moving or deleting a folder of your notes is not possible here: "
            "it would be several proposals that could be confirmed apart. Do it file by file."
        )
    (write,) = writes
    if write.path == INDEX_PATH:
        raise ChangeRefused(
            "index.md is the index of your notes; it is read-only here. "
            "Change its entries with propose_change, or write a topic file."
        )
    if write.content is None:
        operation: dict[str, str] = {"action": "delete_topic", "topic": write.path}
    else:
        operation = {"action": "write_topic", "topic": write.path, "topic_content": write.content}
    outcome = memory_change_request(turn=turn, operation=operation, reason=what)
    return MemoryToolResult(
        True,
        outcome.message,
        change_id=outcome.change_set.pk if outcome.change_set else None,
        proposal_id=outcome.proposal.pk if outcome.proposal else None,
    )


def _bank_apply(
    turn: Turn, scope: MemoryScope, writes: list[FileWrite], *, summary: str, done: str
) -> MemoryToolResult:
    try:
        with transaction.atomic(durable=True):
            memory_lock(turn.user.pk)
            current = {
                f.path: f.sha256
                for f in MemoryFile.objects.filter(scope=scope, path__in=[w.path for w in writes])
            }
            change_set = change_set_apply(
                user=turn.user,
                scope=scope,
                writes=writes,
                origin=ChangeSet.Origin.AUTOMATIC,
                source=ChangeSet.Source.API,
                machine=False,  # a bank is the agent's own notebook, as with write_memory
                base_hashes={w.path: current.get(w.path, "") for w in writes},
                summary=summary,
            )
    except NothingToChange:
        # The file already reads so (a str_replace of a text by itself): done, no change set.
        return MemoryToolResult(True, done)
    return MemoryToolResult(True, done, change_id=change_set.pk)


def _create(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    given = str(args["path"])
    path = _relative(given, turn)
    if not path:
        raise ChangeRefused(f"Name a file, for example {ROOT}/notes.md.")
    clean_path(path, bank=bool(turn.project_key))  # a folder-like name is refused here
    scope = _read_scope(turn)
    if _exists(scope, path):
        raise ContractError(f"File {given} already exists")
    _check_parents_are_folders(scope, path)
    return _write(
        turn,
        [FileWrite(path, str(args["file_text"]))],
        what=f"Wrote {ROOT}/{path}",
        done=f"File created successfully at: {given}",
    )


def _replaced(content: str, old: str, new: str, given: str) -> tuple[str, int]:
    """The text with its one occurrence of `old` replaced, and where it started. Text as a
    view showed it (normalised) is found too and maps back to the span it came from."""
    count = content.count(old)
    if count > 1:
        lines, at = [], content.find(old)
        while at != -1:
            lines.append(str(content.count("\n", 0, at) + 1))
            at = content.find(old, at + 1)
        raise ContractError(
            f"No replacement was performed. Multiple occurrences of old_str `{old}` in "
            f"lines: {', '.join(lines)}. Please ensure it is unique"
        )
    spans = [(content.index(old), content.index(old) + len(old))] if count else []
    spans = spans or shown_spans(content, old, neutralize)
    if len(spans) != 1:
        raise ContractError(
            f"No replacement was performed, old_str `{old}` did not appear verbatim in {given}."
        )
    ((start, end),) = spans
    return content[:start] + new + content[end:], start


def _str_replace(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    given = str(args["path"])
    old, new = str(args["old_str"]), str(args["new_str"])
    path, row = _file(turn, given)
    if not old:
        raise ChangeRefused("old_str is empty; give the exact text to replace.")
    edited, start = _replaced(row.content, old, new, given)
    changed = row.content.count("\n", 0, start)
    lines = neutralize(edited).split("\n")
    first = max(0, changed - 2)
    snippet = _numbered(lines[first : min(len(lines), changed + 3)], first + 1)
    return _write(
        turn,
        [FileWrite(path, edited)],
        what=f"Edited {ROOT}/{path}",
        done="The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n" + _shown(path, snippet),
    )


def _insert(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    given = str(args["path"])
    path, row = _file(turn, given)
    lines = row.content.split("\n")
    if lines[-1] == "":  # a final newline ends the last line rather than starting one
        lines.pop()
    at = _whole(args["insert_line"])
    if at < 0 or at > len(lines):
        raise ContractError(
            f"Invalid `insert_line` parameter: {at}. "
            f"It should be within the range [0, {len(lines)}]."
        )
    lines.insert(at, str(args["insert_text"]).rstrip("\n"))
    updated = "\n".join(lines)
    updated += "" if updated.endswith("\n") else "\n"
    return _write(
        turn,
        [FileWrite(path, updated)],
        what=f"Inserted text into {ROOT}/{path}",
        done=f"The file {given} has been edited.",
    )


def _delete(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    given = str(args["path"])
    path = _relative(given, turn)
    if not path:
        raise ContractError(f"Cannot delete the {ROOT} directory itself")
    scope = _read_scope(turn)
    row = _row(scope, path)
    rows = [row] if row else list(_under(scope, path).only("path"))
    if not rows:
        raise ContractError(f"The path {given} does not exist")
    return _write(
        turn,
        [FileWrite(r.path, None) for r in rows],
        what=f"Deleted {ROOT}/{path}",
        done=f"Successfully deleted {given}",
    )


def _rename(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    old_given, new_given = str(args["old_path"]), str(args["new_path"])
    old, new = _relative(old_given, turn), _relative(new_given, turn)
    if not old:
        raise ContractError(f"Cannot rename the {ROOT} directory itself")
    if not turn.project_key:
        raise ChangeRefused(
            "Renaming your notes is not possible here: create the new file, then delete the old."
        )
    scope = _read_scope(turn)
    if not new or _exists(scope, new):
        raise ContractError(f"The destination {new_given} already exists")
    row = _row(scope, old)
    if row is not None:
        moves = [(row, new)]
    else:
        if new.startswith(old + "/"):
            raise ChangeRefused(f"{old_given} cannot move into itself; nothing was renamed.")
        moves = [(r, new + r.path[len(old) :]) for r in _under(scope, old)]
    if not moves:
        raise ContractError(f"The path {old_given} does not exist")
    _check_parents_are_folders(scope, new)
    writes = [FileWrite(to, r.content) for r, to in moves]
    return _write(
        turn,
        writes + [FileWrite(r.path, None) for r, _ in moves],
        what=f"Renamed {ROOT}/{old} to {ROOT}/{new}",
        done=f"Successfully renamed {old_given} to {new_given}",
    )


_HANDLERS = {
    "view": _view,
    "create": _create,
    "str_replace": _str_replace,
    "insert": _insert,
    "delete": _delete,
    "rename": _rename,
}


def memory_tool_execute(*, turn: Turn, command: ToolArgs) -> MemoryToolResult:
    """Run one memory-tool command; refusals are results with ok=False, never exceptions."""
    name = command.get("command")
    handler = _HANDLERS.get(str(name))
    if handler is None:
        return MemoryToolResult(
            False, f"Unknown command {name!r}. Use one of: {', '.join(COMMANDS)}."
        )
    problem = arguments_refusal(str(name), COMMAND_SCHEMAS[str(name)], dict(command))
    if problem:
        return MemoryToolResult(False, f"Refused: {problem}")
    try:
        result = handler(turn, command)
    except ContractError as error:
        return MemoryToolResult(False, mask_outbound(error.message))
    except Refusal as refusal:
        return MemoryToolResult(False, mask_outbound(f"Refused: {refusal.message}"))
    # Everything returned goes to a model: mask what looks like a secret.
    return MemoryToolResult(
        result.ok, mask_outbound(result.output), result.change_id, result.proposal_id
    )
