"""Backend for Anthropic's memory tool (B2): view, create, str_replace, insert, delete, rename.

The model addresses files as `/memories/<relative .md path>`. With a project key the
commands act on that project's bank (M17); without one, on the person's own notes
(M1). Every write goes through the same services as every other write:

- a bank write is one change set (`change_set_apply`): path rules, limits, the
  secret guard and undo apply exactly as for `write_memory`/`edit_memory`;
- a write to the person's notes is a `propose_change` (`write_topic` /
  `delete_topic`), so the save mode (ask / auto / never), the notes-per-reply cap,
  the long-note rule, the secret guard and the protection of the person's own text
  apply. `index.md` is only readable here: its entries change through
  `propose_change`. `rename` of the person's notes is refused (it would be two
  proposals that could be confirmed apart); banks rename in one change set.

Refusals come back as text with ok=False; nothing is written on a refusal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from django.db import transaction
from pydantic import JsonValue

from host.core.secret_guard import mask_outbound
from host.errors import ChangeRefused, NotAllowed, Refusal
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope
from memory_addon.services.changes import FileWrite, change_set_apply, clean_path
from memory_addon.services.context import memory_readable, neutralize
from memory_addon.services.locks import memory_lock
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import INDEX_PATH
from memory_addon.services.tools import ToolArgs, _bank, arguments_refusal, replace_once
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


def _relative(raw: object) -> str:
    """`/memories/a/b.md` → `a/b.md`; anything outside /memories is refused."""
    path = str(raw or "").strip()
    if path.rstrip("/") == ROOT:
        return ""
    if not path.startswith(ROOT + "/"):
        raise ChangeRefused(f"Paths start with {ROOT}/, for example {ROOT}/notes.md.")
    return clean_path(path[len(ROOT) + 1 :])


def _dir_prefix(raw: object) -> str | None:
    """The folder a `view` names (\"\" for the root), or None when it names a file."""
    path = str(raw or ROOT).strip().rstrip("/")
    if path == ROOT:
        return ""
    if path.startswith(ROOT + "/") and not path.endswith(".md"):
        rest = path[len(ROOT) + 1 :]
        clean_path(rest + "/x.md")  # the same rules as a file path
        return rest.strip("/") + "/"
    return None


def _whole(value: object) -> int:
    """A number the argument gate let through as an integer (JSON may spell it 3.0)."""
    return int(cast(float, value))


# --- where the files are ------------------------------------------------------


def _read_scope(turn: Turn) -> MemoryScope | None:
    if turn.project_key:
        return _bank(turn)
    reason = memory_readable(turn)
    if reason:
        raise NotAllowed(reason)
    # A read never creates the person's scope.
    return MemoryScope.objects.filter(kind=MemoryScope.Kind.USER, owner=turn.user).first()


def _lines(content: str) -> list[str]:
    """The file's lines; a final newline ends the last line rather than starting one."""
    return (content[:-1] if content.endswith("\n") else content).split("\n")


def _row(scope: MemoryScope | None, path: str) -> MemoryFile | None:
    return MemoryFile.objects.filter(scope=scope, path=path).first() if scope else None


def _existing(turn: Turn, path: str) -> MemoryFile:
    row = _row(_read_scope(turn), path)
    if row is None:
        raise ChangeRefused(f"There is no file {ROOT}/{path}; nothing was written.")
    return row


# --- commands -----------------------------------------------------------------


def _view(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    scope = _read_scope(turn)
    folder = _dir_prefix(args.get("path"))
    if folder is not None:
        rows = (
            MemoryFile.objects.filter(scope=scope, path__startswith=folder).values_list(
                "path", "size"
            )
            if scope
            else []
        )
        listing = [f"{size}\t{ROOT}/{path}" for path, size in rows]
        where = f"{ROOT}/{folder}".rstrip("/")
        if not listing:
            return MemoryToolResult(True, f"{where} is empty.")
        return MemoryToolResult(True, f"Files in {where} (bytes, path):\n" + "\n".join(listing))
    path = _relative(args.get("path"))
    row = _row(scope, path)
    if row is None:
        return MemoryToolResult(False, f"There is no file {ROOT}/{path}.")
    lines = _lines(neutralize(row.content))
    start, end = 1, len(lines)
    view_range = args.get("view_range")
    if isinstance(view_range, list):  # two whole numbers: the argument gate checked it
        start, end = _whole(view_range[0]), _whole(view_range[1])
        end = len(lines) if end == -1 else min(end, len(lines))
        if start < 1 or start > max(end, 1):
            raise ChangeRefused(
                f"view_range {view_range} is outside the file's {len(lines)} lines."
            )
    numbered = "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(start, end + 1))
    return MemoryToolResult(
        True,
        f'<memory_file path="{ROOT}/{path}" trust="untrusted-observation">\n'
        f"{numbered}\n</memory_file>",
    )


def _write(turn: Turn, path: str, content: str | None, *, what: str) -> MemoryToolResult:
    """Write (or delete, content None) one file under the rules of its target."""
    if turn.project_key:
        scope = _bank(turn, write=True)
        assert scope is not None  # noqa: S101 - a write creates the bank
        return _bank_apply(turn, scope, [FileWrite(path, content)], summary=what)
    if path == INDEX_PATH:
        raise ChangeRefused(
            "index.md is the index of your notes; it is read-only here. "
            "Change its entries with propose_change, or write a topic file."
        )
    if content is None:
        operation: dict[str, str] = {"action": "delete_topic", "topic": path}
    else:
        operation = {"action": "write_topic", "topic": path, "topic_content": content}
    outcome = memory_change_request(turn=turn, operation=operation, reason=what)
    return MemoryToolResult(
        True,
        outcome.message,
        change_id=outcome.change_set.pk if outcome.change_set else None,
        proposal_id=outcome.proposal.pk if outcome.proposal else None,
    )


def _bank_apply(
    turn: Turn, scope: MemoryScope, writes: list[FileWrite], *, summary: str
) -> MemoryToolResult:
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
    return MemoryToolResult(True, f"{summary} (change {change_set.pk}).", change_id=change_set.pk)


def _create(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    path = _relative(args.get("path"))
    if not path:
        raise ChangeRefused(f"Name a file, for example {ROOT}/notes.md.")
    return _write(turn, path, str(args["file_text"]), what=f"Wrote {ROOT}/{path}")


def _str_replace(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    path = _relative(args.get("path"))
    old, new = str(args["old_str"]), str(args["new_str"])
    if not old:
        raise ChangeRefused("old_str is empty; give the exact text to replace.")
    row = _existing(turn, path)
    edited = replace_once(row.content, old, new, field="old_str", where=f"{ROOT}/{path}")
    return _write(turn, path, edited, what=f"Edited {ROOT}/{path}")


def _insert(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    path = _relative(args.get("path"))
    text = str(args["insert_text"])
    if not text:
        raise ChangeRefused("insert needs insert_text.")
    row = _existing(turn, path)
    lines = row.content.split("\n")
    count = len(_lines(row.content))
    at = _whole(args["insert_line"])
    if at < 0 or at > count:
        raise ChangeRefused(f"insert_line must lie between 0 and {count}.")
    new_lines = text[:-1] if text.endswith("\n") else text
    updated = "\n".join([*lines[:at], *new_lines.split("\n"), *lines[at:]])
    return _write(turn, path, updated, what=f"Inserted text into {ROOT}/{path}")


def _delete(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    path = _relative(args.get("path"))
    if not path:
        raise ChangeRefused("Name one file to delete; the whole folder cannot be deleted.")
    _existing(turn, path)
    return _write(turn, path, None, what=f"Deleted {ROOT}/{path}")


def _rename(turn: Turn, args: ToolArgs) -> MemoryToolResult:
    old = _relative(args.get("old_path"))
    new = _relative(args.get("new_path"))
    if not old or not new:
        raise ChangeRefused("rename needs old_path and new_path, both files under /memories.")
    if not turn.project_key:
        raise ChangeRefused(
            "Renaming your notes is not possible here: create the new file, then delete the old."
        )
    row = _existing(turn, old)
    if _row(_read_scope(turn), new) is not None:
        raise ChangeRefused(f"{ROOT}/{new} already exists; nothing was renamed.")
    scope = _bank(turn, write=True)
    assert scope is not None  # noqa: S101 - a write creates the bank
    return _bank_apply(
        turn,
        scope,
        [FileWrite(new, row.content), FileWrite(old, None)],
        summary=f"Renamed {ROOT}/{old} to {ROOT}/{new}",
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
    except Refusal as refusal:
        return MemoryToolResult(False, mask_outbound(f"Refused: {refusal.message}"))
    # Everything returned goes to a model: mask what looks like a secret.
    return MemoryToolResult(
        result.ok, mask_outbound(result.output), result.change_id, result.proposal_id
    )
