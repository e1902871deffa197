"""Conflicts (M23): the saved note a new one may contradict, found when the proposal is
made, and what the person's decision on it writes.

A conflict is "same subject, different fact": the same topic file or topic key
(core/conflicts.topic_key), or a saved note close in meaning, by the owner's embedder
and MEMORY_CONFLICT_SIMILARITY. The old note is stored on the proposal as it was, so
the card can show it with its date even after the file moves on.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from django.conf import settings
from django.utils.translation import gettext as _

from host.embeddings import Embedder, EmbeddingUnavailable
from host.errors import ChangeRefused, StaleBase
from memory_addon.core import conflicts, entries
from memory_addon.core.conflicts import DECISIONS, Conflict, ConflictKind, Decision
from memory_addon.core.operations import Operation
from memory_addon.models import MemoryFile, MemoryScope
from memory_addon.services.changes import FileWrite
from memory_addon.services.note_search import note_embedder
from memory_addon.services.scopes import index_path

logger = logging.getLogger(__name__)

# Topic files can be long; the card shows their start, the decision reads the file itself.
SHOWN_TOPIC_CHARS = 2000


def decision_of(value: str | None) -> Decision | None:
    """A decision as a form or the API sends it; "" and None mean none was chosen."""
    if not value:
        return None
    chosen = next((d for d in DECISIONS if d == value), None)
    if chosen is None:
        raise ChangeRefused(
            _("decision must be one of: %(choices)s.") % {"choices": ", ".join(DECISIONS)},
            field="decision",
        )
    return chosen


def find_conflict(
    scope: MemoryScope, op: Operation, scope_files: dict[str, MemoryFile]
) -> Conflict | None:
    """The saved note `op` would contradict, or None.

    Only a new note is checked: a replace, remove or topic write names what it changes,
    and its card shows that change.
    """
    if op["action"] != "add":
        return None
    # The index first: when the new note's topic file exists too, Replace then also
    # takes out the index line that points to the old text.
    return _index_conflict(scope, op, scope_files) or _topic_file_conflict(op, scope_files)


def _topic_file_conflict(op: Operation, scope_files: dict[str, MemoryFile]) -> Conflict | None:
    topic = scope_files.get(op.get("topic") or "")
    new = op.get("topic_content")
    if topic is None or new is None or topic.content.strip() == new.strip():
        return None
    return {
        "kind": "topic",
        "path": topic.path,
        "text": topic.content[:SHOWN_TOPIC_CHARS],
        "date": topic.updated_at.date().isoformat(),
        "entry_id": "",
        "raw_sha256": topic.sha256,
        "similarity": None,
    }


def _index_conflict(
    scope: MemoryScope, op: Operation, scope_files: dict[str, MemoryFile]
) -> Conflict | None:
    index = scope_files.get(index_path(scope))
    items = entries.parse_items(index.content) if index else []
    if index is None or not items:
        return None
    text = op["text"]
    wanted, key = conflicts.same_note(text), conflicts.topic_key(text)
    for item in items:
        if conflicts.same_note(item.text) == wanted:
            return _conflict("duplicate", index, item)
    keys = [conflicts.topic_key(item.text) for item in items]
    if key:
        for item, item_key in zip(items, keys, strict=True):
            if item_key == key:
                return _conflict("topic", index, item)
    # Two notes that each name their subject, differently, are about different things
    # however alike their words ("n1: …" and "n2: …"); meaning decides the rest.
    unnamed = [item for item, item_key in zip(items, keys, strict=True) if not (key and item_key)]
    best = _closest_in_meaning(scope, text, unnamed) if unnamed else None
    if best is not None and best[1] >= settings.MEMORY_CONFLICT_SIMILARITY:
        return _conflict("meaning", index, best[0], similarity=round(best[1], 3))
    return None


def _conflict(
    kind: ConflictKind, index: MemoryFile, item: entries.Item, similarity: float | None = None
) -> Conflict:
    return {
        "kind": kind,
        "path": index.path,
        "text": item.text,
        # The person's lines carry no date of their own: the index's last change is
        # the latest they can be from.
        "date": item.created or index.updated_at.date().isoformat(),
        "entry_id": item.entry_id,
        "raw_sha256": entries.sha256_text(item.raw),
        "similarity": similarity,
    }


# Saved notes are compared with every new proposal: their vectors are kept per model and
# text, so an import of hundreds of items embeds each saved note once.
_VECTORS: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
_VECTORS_MAX = 4096
_vectors_lock = threading.Lock()


def _vectors(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    with _vectors_lock:
        missing = [t for t in dict.fromkeys(texts) if (embedder.model_name, t) not in _VECTORS]
    fresh = dict(zip(missing, embedder.embed(missing), strict=True)) if missing else {}
    with _vectors_lock:
        for text, vector in fresh.items():
            _VECTORS[(embedder.model_name, text)] = vector
        while len(_VECTORS) > _VECTORS_MAX:
            _VECTORS.popitem(last=False)
        return [fresh.get(t) or _VECTORS[(embedder.model_name, t)] for t in texts]


def embed_ahead(scope: MemoryScope, texts: list[str]) -> None:
    """Embed new notes and the scope's saved ones before the caller takes the memory lock,
    so find_conflict under the lock reads vectors instead of waiting on a model. Best
    effort: whatever is missing then is embedded there."""
    index = MemoryFile.objects.filter(scope=scope, path=index_path(scope)).first()
    saved = [item.text for item in entries.parse_items(index.content)] if index else []
    if not saved or not texts:
        return
    embedder = note_embedder(scope.owner_id, for_query=True)
    if embedder is None:
        return
    try:
        _vectors(embedder, [*texts, *saved])
    except EmbeddingUnavailable as error:
        logger.warning("Notes could not be embedded ahead: %s", error)


def _closest_in_meaning(
    scope: MemoryScope, text: str, items: list[entries.Item]
) -> tuple[entries.Item, float] | None:
    embedder = note_embedder(scope.owner_id, for_query=True)
    if embedder is None:
        return None
    try:
        new, *saved = _vectors(embedder, [text, *(item.text for item in items)])
    except EmbeddingUnavailable as error:
        # The topic-key check above still ran; meaning is a help, not a gate.
        logger.warning("Conflicts are checked by topic only: %s", error)
        return None
    scored = [
        (item, conflicts.cosine(new, vector)) for item, vector in zip(items, saved, strict=True)
    ]
    return max(scored, key=lambda pair: pair[1])


def settle_conflict(
    scope: MemoryScope, conflict: Conflict, writes: list[FileWrite], decision: Decision
) -> tuple[list[FileWrite], bool]:
    """The writes of a confirmed conflicting proposal, and whether they are the machine's
    alone: Replace takes the old note out in the same change set; Keep both keeps it (a
    topic file then holds the old text and the new one)."""
    settled: list[FileWrite] = []
    machine = True
    index = index_path(scope)
    for write in writes:
        new = write.content
        if new is None:
            settled.append(write)
        elif write.path == index:
            if decision == "replace" and conflict["path"] == index:
                new, was_person = _without_old_note(new, conflict)
                machine = machine and not was_person
            settled.append(FileWrite(write.path, new))
        elif decision == "keep_both":
            # The new note's topic file: the old text stays, the new one follows it.
            old = MemoryFile.objects.filter(scope=scope, path=write.path).first()
            before = old.content.rstrip("\n") if old else ""
            kept = before and before.strip() != new.strip()
            settled.append(FileWrite(write.path, f"{before}\n\n{new}" if kept else new))
        else:
            settled.append(write)
    return settled, machine


def _without_old_note(content: str, conflict: Conflict) -> tuple[str, bool]:
    """The index without the old note; True when that note was the person's own text."""
    old = next(
        (
            item
            for item in entries.parse_items(content)
            if entries.sha256_text(item.raw) == conflict["raw_sha256"]
        ),
        None,
    )
    if old is None:
        raise StaleBase(
            _(
                "The saved note this one would replace was changed or removed since. "
                "Choose Keep both or Discard."
            ),
            path=conflict["path"],
        )
    return conflicts.without_lines(content, old.start_line, old.end_line), not old.is_machine
