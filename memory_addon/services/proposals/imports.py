"""Imports (M23): memory exported from other tools becomes Inbox proposals, one per item,
each with its provenance. Nothing is written until the person confirms an item, in any
save mode; each proposal is made by _proposal_create, so duplicates and conflicts with
saved notes are marked as for the model's own proposals."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from accounts.models import User
from host.errors import ChangeRefused, LimitExceeded, NotAllowed
from memory_addon.core import entries
from memory_addon.core.conflicts import same_note
from memory_addon.core.imports import KINDS, ImportRefused, parse_import
from memory_addon.core.operations import ImportKind, Operation, Provenance
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.locks import memory_lock
from memory_addon.services.policy import kill_switch_on, policy_for
from memory_addon.services.proposals.conflicts import embed_ahead
from memory_addon.services.proposals.planning import plan_writes
from memory_addon.services.proposals.requests import _proposal_create, _refuse_secrets
from memory_addon.services.scopes import ensure_user_scope, index_path
from memory_addon.turns import Turn

_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class ImportResult:
    proposals: list[Proposal]
    duplicates: int  # of them, marked as already saved
    conflicts: int  # of them, that may contradict a saved note
    repeated: int  # items the file held twice: proposed once


def import_kind_of(value: str) -> ImportKind:
    kind = next((k for k in KINDS if k == value), None)
    if kind is None:
        raise ChangeRefused(
            _("kind must be one of: %(kinds)s.") % {"kinds": ", ".join(KINDS)}, field="kind"
        )
    return kind


def memory_import(*, user: User, kind: ImportKind, text: str, file_name: str = "") -> ImportResult:
    """Propose every item of an export to the person's own memory."""
    if kill_switch_on():
        raise NotAllowed(_("Memory is switched off on this server."))
    if policy_for(user).memory_mode != "on":
        raise NotAllowed(_("Your organization made memory read-only; nothing can be imported."))
    size = len(text.encode("utf-8"))
    if size > settings.MEMORY_IMPORT_MAX_BYTES:
        raise LimitExceeded(
            _("The file has %(size)s bytes; an import takes at most %(max)s.")
            % {"size": size, "max": settings.MEMORY_IMPORT_MAX_BYTES},
            field="file",
        )
    try:
        items = parse_import(kind, text)
    except ImportRefused as error:
        raise ChangeRefused(_refusal_text(error), field="file", where=error.where) from error
    if not items:
        raise ChangeRefused(_("The file holds no memories to import."), field="file")
    if len(items) > settings.MEMORY_IMPORT_MAX_ITEMS:
        raise LimitExceeded(
            _(
                "The file holds %(count)s memories; an import takes at most %(max)s. "
                "Split the file and import the parts one after the other."
            )
            % {"count": len(items), "max": settings.MEMORY_IMPORT_MAX_ITEMS},
            field="file",
        )
    for item in items:
        _refuse_secrets({f"item {item.item}": item.text}, user_id=user.pk)
    file_name = file_name[:200]
    scope = ensure_user_scope(user)
    turn = Turn(user=user)
    proposals: list[Proposal] = []
    seen: set[str] = set()
    embed_ahead(scope, [item.text for item in items])
    with transaction.atomic(durable=True):
        memory_lock(user.pk)
        index = index_path(scope)
        scope_files = {f.path: f for f in MemoryFile.objects.filter(scope=scope, path=index)}
        for item in items:
            if same_note(item.text) in seen:
                continue
            seen.add(same_note(item.text))
            op: Operation = {
                "action": "add",
                "scope": "user",
                "created": _entry_date(item.original_date),
                "text": item.text,
                "entry_id": entries.new_entry_id(),
            }
            _writes, bases = plan_writes(
                scope,
                op,
                origin=ChangeSet.Origin.ASSISTANT,
                source=ChangeSet.Source.IMPORT,
                scope_files=scope_files,
            )
            provenance: Provenance = {
                "kind": kind,
                "file": file_name,
                "item": item.item,
                "line": item.line,
                "original_id": item.original_id,
                "original_date": item.original_date,
            }
            proposals.append(
                _proposal_create(
                    turn,
                    scope,
                    op,
                    bases,
                    reason="",
                    why_waiting="",
                    scope_files=scope_files,
                    provenance=provenance,
                )
            )
    conflicts = [p.conflict for p in proposals if p.conflict]
    duplicates = sum(1 for c in conflicts if c["kind"] == "duplicate")
    return ImportResult(
        proposals, duplicates, len(conflicts) - duplicates, len(items) - len(proposals)
    )


def _refusal_text(error: ImportRefused) -> str:
    """The refusal in the person's language: where, then why."""
    reason = gettext(error.template)
    if error.values:
        reason %= error.values
    if error.line:
        return _("line %(line)s: %(reason)s") % {"line": error.line, "reason": reason}
    return _("item %(item)s: %(reason)s") % {"item": error.item, "reason": reason}


def _entry_date(original: str) -> str:
    """The export's date when it starts with an ISO day, else today (an entry's fence
    holds the date as one word)."""
    day = original[:10]
    return day if _ISO_DAY.fullmatch(day) else timezone.localdate().isoformat()
