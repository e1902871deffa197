"""The file writes a memory operation means, planned against the files as they are now."""

from __future__ import annotations

from typing import Final

from host.errors import ChangeRefused, StaleBase
from memory_addon.core import entries
from memory_addon.core.operations import Operation
from memory_addon.models import ChangeSet, FileChange, MemoryFile, MemoryScope
from memory_addon.services.changes import ABSENT, FileWrite
from memory_addon.services.scopes import index_path

# Not a model action: a revert_change that waits for the person becomes this operation.
REVERT: Final = "revert"


def plan_writes(
    scope: MemoryScope,
    op: Operation,
    *,
    origin: str,
    source: str,
    scope_files: dict[str, MemoryFile] | None = None,
) -> tuple[list[FileWrite], dict[str, str]]:
    """The file writes an operation means, against the files as they are now.

    `scope_files` (path → file of this scope) saves the query when the caller has them.
    """
    if op["action"] == REVERT:
        return _plan_revert(op)
    index = index_path(scope)
    paths = [index] if op["action"] in ("add", "replace", "remove") else []
    if _writes_topic(op):
        paths.append(op["topic"])
    if scope_files is None:
        scope_files = {f.path: f for f in MemoryFile.objects.filter(scope=scope, path__in=paths)}
    files = {path: scope_files[path] for path in paths if path in scope_files}
    bases = {path: files[path].sha256 if path in files else ABSENT for path in paths}
    writes: list[FileWrite] = []
    if op["action"] in ("add", "replace", "remove"):
        current = files[index].content if index in files else ""
        block = None
        if op["action"] != "remove":
            block = entries.render_entry(
                op["text"],
                entry_id=op["entry_id"],
                origin=origin,
                created=op["created"],
                source=source,
            )
        try:
            if op["action"] == "add":
                new_index = entries.append_entry(current, block or "")
            else:
                new_index = entries.replace_entry(current, op["entry_id"], block)
        except entries.EntryRefused as error:
            raise ChangeRefused(str(error)) from error
        writes.append(FileWrite(index, new_index))
    if op.get("topic") and op.get("topic_content") is not None:
        writes.append(FileWrite(op["topic"], op["topic_content"]))
    if op["action"] == "delete_topic":
        if op["topic"] not in files:
            raise ChangeRefused(f"There is no topic file {op['topic']}.")
        writes.append(FileWrite(op["topic"], None))
    return writes, bases


def _writes_topic(op: Operation) -> bool:
    return bool(op.get("topic")) and (
        op.get("topic_content") is not None or op["action"] == "delete_topic"
    )


def _plan_revert(op: Operation) -> tuple[list[FileWrite], dict[str, str]]:
    changes = list(FileChange.objects.filter(change_set_id=op["change_id"]))
    if not changes:
        raise ChangeRefused("The change to undo has no file changes left in the history.")
    return (
        [FileWrite(change.path, change.before) for change in changes],
        {change.path: change.after_sha256 for change in changes},
    )


def entry_fingerprint(content: str, entry_id: str) -> str:
    """Hash of an intact machine entry's text, or "" when the entry is not there."""
    for item in entries.machine_entries(content):
        if item.entry_id == entry_id:
            return entries.sha256_text(item.text)
    return ""


def plan_proposal(
    scope: MemoryScope,
    op: Operation,
    base_hashes: dict[str, str],
    *,
    source: str,
    scope_files: dict[str, MemoryFile] | None = None,
) -> tuple[list[FileWrite], dict[str, str]]:
    """A pending proposal planned against the files as they are now.

    Other changes to the same file since the proposal was made do not matter (several
    proposals on one index must each stay confirmable); only a change to what this
    proposal touches does: the entry it replaces or removes, or its topic file.
    """
    if op["action"] == REVERT:
        return plan_writes(scope, op, origin=ChangeSet.Origin.ASSISTANT, source=source)
    if scope_files is None:
        paths = [index_path(scope)] + ([op["topic"]] if _writes_topic(op) else [])
        scope_files = {f.path: f for f in MemoryFile.objects.filter(scope=scope, path__in=paths)}
    way_forward = (
        "Nothing was saved. Reject this proposal and ask the assistant again if it is still "
        "needed, or edit the file yourself."
    )
    if _writes_topic(op):
        topic_now = scope_files[op["topic"]].sha256 if op["topic"] in scope_files else ABSENT
        if op["topic"] in base_hashes and base_hashes[op["topic"]] != topic_now:
            raise StaleBase(
                f"{op['topic']} changed since this was proposed. {way_forward}", path=op["topic"]
            )
    if op["action"] in ("replace", "remove"):
        index = scope_files.get(index_path(scope))
        now = entry_fingerprint(index.content if index else "", op["entry_id"])
        if not now or now != op.get("entry_sha256", now):
            raise StaleBase(
                f"The note this proposal changes was edited or removed since. {way_forward}",
                path=index_path(scope),
            )
    return plan_writes(
        scope, op, origin=ChangeSet.Origin.ASSISTANT, source=source, scope_files=scope_files
    )


def _summary(op: Operation) -> str:
    return {
        "add": "Added a note",
        "replace": "Replaced a note",
        "remove": "Removed a note",
        "write_topic": f"Wrote {op.get('topic')}",
        "delete_topic": f"Deleted {op.get('topic')}",
        REVERT: f"Undid change #{op.get('change_id')}",
    }[op["action"]]
