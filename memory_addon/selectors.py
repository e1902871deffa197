"""Reads that pages and the API share, each with a fixed number of queries."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from typing import Literal, NotRequired, TypedDict

from django.db.models import Count, Exists, OuterRef, QuerySet, Sum
from django.db.models.functions import Coalesce, Lower
from django.http import Http404
from django.shortcuts import get_object_or_404

from accounts.models import User
from host.core.ids import row_id
from host.errors import Refusal
from memory_addon.core import entries
from memory_addon.core.conflicts import Conflict
from memory_addon.core.diffs import unified_diff
from memory_addon.core.operations import Operation, Provenance
from memory_addon.core.readable_diff import NoteRow, readable_diff
from memory_addon.models import ChangeSet, FileChange, MemoryFile, MemoryScope, Proposal
from memory_addon.services.notes import note_key
from memory_addon.services.proposals import plan_proposal
from memory_addon.services.scopes import index_path, scope_folder, user_scope_find


def scopes_for_user(user: User) -> QuerySet[MemoryScope]:
    return (
        MemoryScope.objects.filter(owner=user)
        .select_related("agent", "binding")
        .order_by("kind", "id")
    )


def banks_for_user(user: User) -> QuerySet[MemoryScope]:
    """The person's project banks with their file count and size, in one query."""
    return (
        MemoryScope.objects.filter(owner=user, kind=MemoryScope.Kind.PROJECT)
        .annotate(file_count=Count("files"), total_bytes=Coalesce(Sum("files__size"), 0))
        .order_by(Lower("project_name"), "project_key", "id")
    )


# The owner checks, one per resource, for pages and the API alike: a foreign or missing id
# is a 404, never a hint that the row exists.

PERSON_KINDS = (MemoryScope.Kind.USER, MemoryScope.Kind.AGENT, MemoryScope.Kind.CHANNEL)


def scope_for_user(
    user: User, scope_id: int | str, kinds: tuple[str, ...] | None = None
) -> MemoryScope:
    """One of the person's scopes; `kinds` narrows it (the Memory tab shows no banks)."""
    rows = MemoryScope.objects.select_related("agent", "binding").filter(owner=user)
    if kinds is not None:
        rows = rows.filter(kind__in=kinds)
    return get_object_or_404(rows, pk=scope_id)


def person_scope_for_user(user: User, scope_id: int | str | None) -> MemoryScope:
    """The person's own scope when no id is given, else one of their non-bank scopes."""
    if not scope_id:
        own = user_scope_find(user)
        if own is None:  # made with the person; only a row removed by hand lacks it
            raise Http404("Your memory scope is missing; ask an administrator to run migrate.")
        return own
    if isinstance(scope_id, str) and not scope_id.isdecimal():
        # A hand-edited ?scope= is just a scope that does not exist, not a server error.
        raise Http404("There is no memory scope with that number.")
    return scope_for_user(user, scope_id, PERSON_KINDS)


def version_for_user(user: User, version_id: int) -> FileChange:
    return get_object_or_404(
        FileChange.objects.select_related("scope", "change_set"),
        pk=version_id,
        scope__owner=user,
    )


def proposal_for_user(user: User, proposal_id: int) -> Proposal:
    return get_object_or_404(Proposal, pk=proposal_id, user=user)


def bank_for_user(user: User, bank_id: int) -> MemoryScope:
    """The access check for a bank by id: another person's bank (or any other scope) is a 404."""
    return get_object_or_404(banks_for_user(user), pk=bank_id)


class ChangeSummary(TypedDict):
    id: int
    scope_id: int
    origin: str  # a ChangeSet.Origin value
    source: str  # a ChangeSet.Source value
    summary: str
    created_at: datetime
    paths: list[str]
    undone: bool
    undoes_id: int | None


class FileDiff(TypedDict):
    path: str
    diff: str
    before_sha256: str
    after_sha256: str
    notes: NotRequired[list[NoteRow]]  # pages show these; the API leaves them out


class ChangeDetail(ChangeSummary):
    changes: list[FileDiff]


class VersionRow(TypedDict):
    id: int
    change_set_id: int
    origin: str  # a ChangeSet.Origin value
    source: str  # a ChangeSet.Source value
    path: str
    created_at: datetime
    deleted: bool
    diff_to_current: str
    notes_to_current: list[NoteRow]
    undoable: NotRequired[bool]  # the history page adds it


class ProposalOrigin(TypedDict):
    """Where a proposal came from, for the Inbox card."""

    source: str  # the source's label
    agent: str
    chat_title: str
    chat_id: str
    conversation_ref: str
    binding: str
    created_at: datetime


class ProposalRow(TypedDict):
    id: int
    state: str  # a Proposal.State value
    scope_id: int
    folder: str
    operation: Operation
    reason: str
    why_waiting: str
    source: str  # a ChangeSet.Source value
    created_at: datetime
    expires_at: datetime
    diffs: list[FileDiff]
    origin: ProposalOrigin
    forget_text: str
    conflict: Conflict | None
    provenance: Provenance | None


def change_sets_for_user(user: User) -> QuerySet[ChangeSet]:
    return (
        ChangeSet.objects.filter(user=user)
        .annotate(is_undone=Exists(ChangeSet.objects.filter(undoes=OuterRef("pk"))))
        .prefetch_related("changes")
    )


def change_set_for_user(user: User, change_set_id: int) -> ChangeSet:
    return get_object_or_404(change_sets_for_user(user).select_related("scope"), pk=change_set_id)


def change_summary(change_set: ChangeSet) -> ChangeSummary:
    return {
        "id": change_set.pk,
        "scope_id": change_set.scope_id,
        "origin": change_set.origin,
        "source": change_set.source,
        "summary": change_set.summary,
        "created_at": change_set.created_at,
        "paths": [change.path for change in change_set.changes.all()],
        "undone": bool(getattr(change_set, "is_undone", False)),
        "undoes_id": change_set.undoes_id,
    }


def change_detail(change_set: ChangeSet) -> ChangeDetail:
    return {
        **change_summary(change_set),
        "changes": [
            {
                "path": change.path,
                "diff": unified_diff(change.before or "", change.after or "", path=change.path),
                "before_sha256": change.before_sha256,
                "after_sha256": change.after_sha256,
            }
            for change in change_set.changes.all()
        ],
    }


def versions_for_scope(scope: MemoryScope, *, limit: int = 100) -> list[VersionRow]:
    """Newest first; each version's diff against the file as it is now."""
    versions = list(FileChange.objects.filter(scope=scope).select_related("change_set")[:limit])
    current = dict(MemoryFile.objects.filter(scope=scope).values_list("path", "content"))
    return [
        {
            "id": version.pk,
            "change_set_id": version.change_set_id,
            "origin": version.change_set.origin,
            "source": version.change_set.source,
            "path": version.path,
            "created_at": version.created_at,
            "deleted": version.after is None,
            "diff_to_current": unified_diff(
                version.after or "", current.get(version.path, ""), path=version.path
            ),
            "notes_to_current": readable_diff(version.after or "", current.get(version.path, "")),
        }
        for version in versions
    ]


def proposals_with_diffs(proposals: list[Proposal]) -> list[ProposalRow]:
    """Each proposal with the diff it would make now; one query for all their files."""
    if not proposals:
        return []
    files_by_scope: dict[int, dict[str, MemoryFile]] = defaultdict(dict)
    for row in MemoryFile.objects.filter(scope_id__in={p.scope_id for p in proposals}):
        files_by_scope[row.scope_id][row.path] = row
    conversations = _chat_titles(proposals)
    result: list[ProposalRow] = []
    for proposal in proposals:
        scope_files = files_by_scope[proposal.scope_id]
        try:
            writes, _ = plan_proposal(
                proposal.scope,
                proposal.operations,
                proposal.base_hashes,
                source=proposal.source,
                scope_files=scope_files,
            )
        except Refusal as refusal:
            diffs: list[FileDiff] = [
                {
                    "path": "",
                    "diff": f"Cannot be applied any more: {refusal.message}",
                    "before_sha256": "",
                    "after_sha256": "",
                }
            ]
        else:
            diffs = []
            for write in writes:
                before_row = scope_files.get(write.path)
                diffs.append(
                    {
                        "path": write.path,
                        "diff": unified_diff(
                            before_row.content if before_row else "",
                            write.content or "",
                            path=write.path,
                        ),
                        "notes": readable_diff(
                            before_row.content if before_row else "", write.content or ""
                        ),
                        "before_sha256": before_row.sha256 if before_row else "",
                        "after_sha256": "",
                    }
                )
        result.append(
            {
                "id": proposal.pk,
                "state": proposal.state,
                "scope_id": proposal.scope_id,
                "folder": scope_folder(proposal.scope),
                "operation": proposal.operations,
                "reason": proposal.reason,
                "why_waiting": proposal.why_waiting,
                "source": proposal.source,
                "created_at": proposal.created_at,
                "expires_at": proposal.expires_at,
                "diffs": diffs,
                "origin": _origin(proposal, conversations),
                "forget_text": "\n".join(
                    row.before
                    for diff in diffs
                    for row in diff.get("notes", [])
                    if row.kind == "removed"
                ),
                "conflict": proposal.conflict,
                "provenance": proposal.provenance,
            }
        )
    return result


# (owner id, conversation id) pairs -> title by conversation id, for the person's own chats.
ConversationTitles = Callable[[set[tuple[int, int]]], dict[str, str]]
# Filled by the app that keeps the conversations (chat, in its AppConfig.ready()), which
# builds on this one: the memory add-on never reads chat's tables itself.
_title_lookups: list[ConversationTitles] = []


def conversation_titles_register(lookup: ConversationTitles) -> None:
    if lookup not in _title_lookups:
        _title_lookups.append(lookup)


def _chat_titles(proposals: list[Proposal]) -> dict[str, str]:
    """Titles of the host's own chat conversations the proposals came from."""
    refs = {
        (p.user_id, conversation_id)
        for p in proposals
        if p.source == ChangeSet.Source.CHAT
        and (conversation_id := row_id(p.conversation_ref)) is not None
    }
    titles: dict[str, str] = {}
    if refs:
        for lookup in _title_lookups:
            titles.update(lookup(refs))
    return titles


def _origin(proposal: Proposal, conversations: dict[str, str]) -> ProposalOrigin:
    """Where a proposal came from, for the Inbox card: chat, agent, conversation, when."""
    scope = proposal.scope
    chat_title = conversations.get(proposal.conversation_ref, "")
    return {
        "source": proposal.get_source_display(),
        "agent": proposal.agent.name if proposal.agent else "",
        "chat_title": chat_title,
        "chat_id": proposal.conversation_ref if chat_title else "",
        "conversation_ref": "" if chat_title else proposal.conversation_ref,
        "binding": scope.binding.title if scope.binding_id and scope.binding else "",
        "created_at": proposal.created_at,
    }


def pending_proposals(user: User) -> list[Proposal]:
    return list(
        Proposal.objects.filter(user=user, state=Proposal.State.PENDING)
        .select_related("scope__agent", "scope__binding", "agent")
        .order_by("-created_at", "-id")
    )


def memory_bytes(user_id: int) -> int:
    """What a person's memory files take (their share of the storage quota)."""
    total = MemoryFile.objects.filter(scope__owner_id=user_id).aggregate(total=Sum("size"))
    return int(total["total"] or 0)


class ListedNote(TypedDict):
    key: str
    text: str
    kind: Literal["person", "machine"]
    origin: str
    created: str


class ScopeNotes(TypedDict):
    index_path: str
    index_sha256: str
    notes: list[ListedNote]


def scope_notes(scope: MemoryScope) -> ScopeNotes:
    """The scope's notes in the order the model reads them, each with the key that names it."""
    path = index_path(scope)
    row = MemoryFile.objects.filter(scope=scope, path=path).first()
    items = entries.send_order(entries.parse_items(row.content if row else ""))
    return {
        "index_path": path,
        "index_sha256": row.sha256 if row else "",
        "notes": [
            {
                "key": note_key(item),
                "text": item.text,
                "kind": item.kind,
                "origin": item.origin,
                "created": item.created,
            }
            for item in items
        ],
    }
