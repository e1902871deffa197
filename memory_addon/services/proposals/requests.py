"""The model's requests: every model-initiated change goes through memory_change_request
(M8, M9, M10), which refuses it, proposes it or saves it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.models import User
from host.compiled import CompiledQuery
from host.core.secret_guard import find_secret
from host.core.untrusted import normalise_untrusted
from host.errors import ChangeRefused, LimitExceeded, NotAllowed, SecretRefused
from host.read_once import reads_once
from host.secret_text import secret_refusal
from host.stored_secrets import stored_secrets
from memory_addon.addons import SaveMode
from memory_addon.core import entries
from memory_addon.core.conflicts import same_note
from memory_addon.core.operations import ModelAction, Operation, Provenance, text_argument
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope, Proposal
from memory_addon.services.changes import (
    FileWrite,
    change_set_apply,
    change_set_undo_locked,
    clean_path,
)
from memory_addon.services.context import readable_scopes
from memory_addon.services.locks import memory_lock
from memory_addon.services.policy import Policy, kill_switch_on, policy_for
from memory_addon.services.proposals.conflicts import embed_ahead, find_conflict
from memory_addon.services.proposals.decisions import _count_changed_on_commit
from memory_addon.services.proposals.planning import (
    REVERT,
    _summary,
    _writes_topic,
    entry_fingerprint,
    plan_writes,
)
from memory_addon.services.scopes import (
    ensure_agent_scope,
    ensure_channel_scope,
    ensure_user_scope,
    index_path,
)
from memory_addon.signals import (
    proposal_added,
    proposal_created,
    proposal_removed,
    proposal_resolved,
    send_on_commit,
)
from memory_addon.turns import TEMPORARY_REFUSAL, Turn

ACTIONS: tuple[ModelAction, ...] = ("add", "replace", "remove", "write_topic", "delete_topic")


@dataclass(frozen=True)
class Outcome:
    kind: Literal["saved", "proposed", "already"]
    message: str
    proposal: Proposal | None = None
    change_set: ChangeSet | None = None


def check_may_change(turn: Turn) -> Policy:
    """Refuse model-initiated changes the rules never allow, whatever the save mode; the
    policy read for it (with the person's save mode) is returned."""
    if turn.temporary:  # first: it is the reason the person chose, whatever else holds
        raise NotAllowed(TEMPORARY_REFUSAL)
    if kill_switch_on():
        raise NotAllowed("Memory is switched off on this server (MEMORY_AI_MEMORY=off).")
    if turn.memory_off:
        raise NotAllowed("Memory is switched off for this request.")
    policy = policy_for(turn.user)
    if policy.memory_mode == "off":
        raise NotAllowed("Your organization has turned memory off.")
    if policy.memory_mode == "read_only":
        raise NotAllowed("Your organization made memory read-only; nothing can be saved.")
    if not policy.addon_enabled:
        raise NotAllowed("The Short memory add-on is disabled; nothing can be saved.")
    if turn.is_background:
        raise NotAllowed("Scheduled and background runs cannot save notes.")
    if turn.agent and not turn.agent.memory_allowed:
        raise NotAllowed("The Memory add-on is not allowed for this agent.")
    if turn.agent and not turn.agent.may_propose:
        raise NotAllowed("This agent has not been given the right to propose memory changes.")
    return policy


def target_scope(turn: Turn, name: str) -> MemoryScope:
    if name in ("", "user"):
        return ensure_user_scope(turn.user)
    if name == "agent":
        if not turn.agent:
            raise ChangeRefused("This chat has no saved agent; use scope 'user'.")
        return ensure_agent_scope(turn.agent)
    if name == "conversation":
        if not turn.binding:
            raise ChangeRefused("This chat is not a messaging conversation; use scope 'user'.")
        return ensure_channel_scope(turn.binding, turn.chat_key)
    raise ChangeRefused("scope must be one of: user, agent, conversation.")


def _normalize_operation(raw: Mapping[str, object]) -> Operation:
    action = next((a for a in ACTIONS if a == raw.get("action")), None)
    if action is None:
        raise ChangeRefused(f"action must be one of: {', '.join(ACTIONS)}.")
    op: Operation = {
        "action": action,
        "scope": text_argument(raw, "scope") or "user",
        "created": timezone.localdate().isoformat(),
    }
    if action in ("add", "replace"):
        try:
            # What the person approves must be what is stored: hidden and direction-
            # changing characters become visible markers first.
            text = normalise_untrusted(text_argument(raw, "text"))
            op["text"] = entries.validate_entry_text(text)
        except entries.EntryRefused as error:
            raise ChangeRefused(str(error)) from error
    if action in ("replace", "remove"):
        raw_id = raw.get("entry_id")
        # Ids are hex; one of only digits may come back from a model as a number.
        entry_id = str(raw_id) if type(raw_id) is int else text_argument(raw, "entry_id")
        if not entry_id:
            raise ChangeRefused(f"{action} needs the entry_id of the entry to change.")
        op["entry_id"] = entry_id
    if action == "add":
        op["entry_id"] = entries.new_entry_id()
    if raw.get("topic") or action in ("write_topic", "delete_topic"):
        op["topic"] = clean_path(text_argument(raw, "topic"))
        if op["topic"] == "index.md":
            raise ChangeRefused(
                "index.md is the index; change its entries with add/replace/remove."
            )
    if action == "write_topic" or (action == "add" and raw.get("topic_content")):
        op["topic_content"] = normalise_untrusted(text_argument(raw, "topic_content"))
        if not op["topic_content"].strip():
            raise ChangeRefused("topic_content is empty; use delete_topic to remove a topic.")
    return op


class _DryRun(Exception):
    pass


def _validate(
    turn: Turn,
    scope: MemoryScope,
    writes: list[FileWrite],
    bases: dict[str, str],
    *,
    machine: bool = True,
) -> None:
    """Run every check of a real apply, then roll it back."""
    try:
        with transaction.atomic():
            change_set_apply(
                user=turn.user,
                scope=scope,
                writes=writes,
                origin=ChangeSet.Origin.AUTOMATIC,
                source=turn.source,
                machine=machine,
                base_hashes=bases,
            )
            raise _DryRun
    except _DryRun:
        pass


def _notes_in_reply_query(ref: Q, user_id: int) -> QuerySet[Proposal, tuple[int]]:
    proposals = Proposal.objects.filter(ref, user_id=user_id).order_by().values_list("pk")
    automatic = (
        ChangeSet.objects.filter(ref, user_id=user_id, origin=ChangeSet.Origin.AUTOMATIC)
        .exclude(scope__kind=MemoryScope.Kind.PROJECT)
        .order_by()
        .values_list("pk")
    )
    return proposals.union(automatic, all=True)


def _reply_query(
    user_id: int, conversation_ref: int | str, message_ref: int | str
) -> QuerySet[Proposal, tuple[int]]:
    ref = Q(conversation_ref=str(conversation_ref), message_ref=str(message_ref))
    # Ordered by a selected column: a union cannot take the models' default ordering.
    return _notes_in_reply_query(ref, user_id).order_by("pk")


# The host's own chat asks this for every note it saves: compiled once per process.
_IN_REPLY = CompiledQuery(_reply_query, "user_id", "conversation_ref", "message_ref")


def _notes_in_reply(turn: Turn) -> int:
    """Notes the model asked for in this reply, counted by the host.

    A reply reference is only trusted when the host made it (its own chat and bridge
    runners); a client could send a fresh one with every call. Without a trusted
    reference, every note of the person in the last few minutes counts.
    """
    if turn.reply_ref_trusted and turn.message_ref:
        return len(
            _IN_REPLY.rows(
                user_id=turn.user.pk,
                conversation_ref=turn.conversation_ref,
                message_ref=turn.message_ref,
            )
        )
    since = timezone.now() - timedelta(seconds=settings.MEMORY_REPLY_WINDOW_SECONDS)
    return _notes_in_reply_query(Q(created_at__gte=since), turn.user.pk).count()


def _refuse_over_reply_cap(turn: Turn) -> None:
    """At most N memory changes per reply: notes, topic writes and reverts alike."""
    if _notes_in_reply(turn) >= settings.MEMORY_MAX_NOTES_PER_REPLY:
        raise LimitExceeded(
            f"At most {settings.MEMORY_MAX_NOTES_PER_REPLY} memory changes can be made per "
            "reply; this one was not made."
        )


def _refuse_secrets(parts: dict[str, str], *, user_id: int) -> None:
    known = stored_secrets(user_id)
    for name, text in parts.items():
        finding = find_secret(text, known=known)
        if finding:
            raise SecretRefused(
                f"{name}: {secret_refusal(finding)}", line=finding.line, kind=finding.kind
            )


def _save_mode(policy: Policy) -> SaveMode:
    save_mode = policy.save_mode
    if save_mode == "never":
        raise NotAllowed(
            "Saving to memory is off: the person chose 'Never'. Tell them that saving is off "
            "and that they can change it on the Short memory page."
        )
    return save_mode


def _why_auto_waits(scope: MemoryScope, op: Operation, scope_files: dict[str, MemoryFile]) -> str:
    """In auto mode a long change still waits; every part of it is measured. So does one
    that may contradict a saved note: only the person can say which one holds (M23)."""
    if len(op.get("text", "")) > settings.MEMORY_AUTO_MAX_NOTE_CHARS:
        return "Long notes wait for your confirmation."
    if _writes_topic(op):
        after = len(str(op.get("topic_content") or "").encode("utf-8"))
        topic = scope_files.get(op["topic"])
        before = topic.size if topic else 0
        if max(after, before) > settings.MEMORY_AUTO_MAX_TOPIC_BYTES:
            return "Long topic files wait for your confirmation."
    conflict = find_conflict(scope, op, scope_files)
    if conflict is not None and conflict["kind"] != "duplicate":
        return (
            f"This may contradict a note saved on {conflict['date']}; it waits for you to "
            "choose Replace, Keep both or Discard."
        )
    return ""


def _already_there(
    scope: MemoryScope, op: Operation, scope_files: dict[str, MemoryFile], *, proposing: bool
) -> str:
    """Why an add changes nothing: its note is saved, or (for a proposal) waits already (M9).

    A regenerated answer, a retried turn or a redelivered job asks again for what the
    first run saved; the same text in the same scope is not added twice.
    """
    if op["action"] != "add":
        return ""
    if op.get("topic_content") is not None:
        topic = scope_files.get(op["topic"])
        if topic is None or topic.content != op["topic_content"]:
            return ""
    index = scope_files.get(index_path(scope))
    wanted = same_note(op["text"])
    if index and any(same_note(item.text) == wanted for item in entries.parse_items(index.content)):
        return "This note is already saved in memory; nothing was added."
    if not proposing:
        return ""
    waiting = (
        Proposal.objects.filter(
            scope=scope,
            state=Proposal.State.PENDING,
            expires_at__gt=timezone.now(),
            operations__action="add",
            operations__text=op["text"],
        )
        .values_list("pk", flat=True)
        .first()
    )
    if waiting:
        return (
            f"This note already waits for the person's confirmation (proposal {waiting}); "
            "nothing was proposed again."
        )
    return ""


def memory_change_request(
    *, turn: Turn, operation: Mapping[str, object], reason: str = ""
) -> Outcome:
    """Refuse, propose or save a change the model asked for."""
    # The person's stored secrets and event endpoints are read once for the whole save:
    # the check of its text here, each written file's check, the outbox.
    with reads_once():
        return _change_request(turn=turn, operation=operation, reason=reason)


def _change_request(*, turn: Turn, operation: Mapping[str, object], reason: str) -> Outcome:
    save_mode = _save_mode(check_may_change(turn))
    op = _normalize_operation(operation)
    _refuse_secrets(
        {
            "text": op.get("text", ""),
            "topic_content": op.get("topic_content", ""),
            "reason": reason,
        },
        user_id=turn.user.pk,
    )
    scope = target_scope(turn, op["scope"])
    auto = save_mode == "auto" and turn.binding is None
    why_waiting = "Messages from messaging apps always ask first." if turn.binding else ""
    if op["action"] == "add":
        embed_ahead(scope, [op["text"]])
    with transaction.atomic(durable=True):
        memory_lock(turn.user.pk)
        # The files this change touches, read once for every check and the plan.
        scope_files = {
            f.path: f
            for f in MemoryFile.objects.filter(
                scope=scope, path__in=[index_path(scope), op.get("topic") or index_path(scope)]
            )
        }
        if auto:
            why_waiting = _why_auto_waits(scope, op, scope_files)
            auto = not why_waiting
        already = _already_there(scope, op, scope_files, proposing=not auto)
        if already:
            return Outcome("already", already)
        _refuse_over_reply_cap(turn)
        origin = ChangeSet.Origin.AUTOMATIC if auto else ChangeSet.Origin.ASSISTANT
        writes, bases = plan_writes(
            scope, op, origin=origin, source=turn.source, scope_files=scope_files
        )
        if auto:
            change_set = change_set_apply(
                user=turn.user,
                scope=scope,
                writes=writes,
                origin=origin,
                source=turn.source,
                machine=True,
                base_hashes=bases,
                summary=reason or _summary(op),
                conversation_ref=turn.conversation_ref,
                message_ref=turn.message_ref,
                agent=turn.agent,
            )
            return Outcome(
                "saved",
                f"Saved to memory (change {change_set.pk}). The person sees it with an Undo; "
                "revert_change can take it back.",
                change_set=change_set,
            )
        _validate(turn, scope, writes, bases)
        if op["action"] in ("replace", "remove"):
            current = scope_files.get(index_path(scope))
            op["entry_sha256"] = entry_fingerprint(
                current.content if current else "", op["entry_id"]
            )
        proposal = _proposal_create(
            turn, scope, op, bases, reason=reason, why_waiting=why_waiting, scope_files=scope_files
        )
    message = (
        f"Proposed (proposal {proposal.pk}); nothing is saved until the person confirms it "
        f"within {settings.MEMORY_PROPOSAL_TTL_HOURS} hours."
    )
    if proposal.conflict:
        message += (
            f" It may contradict a note saved on {proposal.conflict['date']} "
            f"({proposal.conflict['path']}): {proposal.conflict['text'][:300]!r}. The person "
            "chooses Replace, Keep both or Discard."
        )
    return Outcome("proposed", message, proposal=proposal)


def _proposal_create(
    turn: Turn,
    scope: MemoryScope,
    op: Operation,
    bases: dict[str, str],
    *,
    reason: str,
    why_waiting: str,
    scope_files: dict[str, MemoryFile] | None = None,
    provenance: Provenance | None = None,
) -> Proposal:
    """Every proposal is made here, and here it learns which saved note it may
    contradict (M23); `scope_files` are the files of the scope it touches, if read."""
    if provenance is None:
        _expire_beyond_cap(turn.user)
    if scope_files is None:
        paths = [index_path(scope), *([op["topic"]] if op.get("topic") else [])]
        scope_files = {f.path: f for f in MemoryFile.objects.filter(scope=scope, path__in=paths)}
    proposal = Proposal.objects.create(
        user=turn.user,
        scope=scope,
        operations=op,
        base_hashes=bases,
        reason=reason[:500],
        why_waiting=why_waiting,
        conflict=find_conflict(scope, op, scope_files),
        provenance=provenance,
        source=ChangeSet.Source.IMPORT if provenance else turn.source,
        conversation_ref=turn.conversation_ref,
        message_ref=turn.message_ref,
        agent=turn.agent,
        expires_at=timezone.now() + timedelta(hours=settings.MEMORY_PROPOSAL_TTL_HOURS),
    )
    _count_changed_on_commit(turn.user)
    send_on_commit(proposal_added, user_id=turn.user.pk, proposal_id=proposal.pk)
    proposal_created.send(
        sender=Proposal,
        user_id=turn.user.pk,
        proposal_id=proposal.pk,
        scope_id=scope.pk,
        action=str(op.get("action", "")),
        source=proposal.source,
    )
    return proposal


def _expire_beyond_cap(user: User) -> None:
    """Keep room for one more pending proposal: the oldest ones beyond the cap expire."""
    keep = settings.MEMORY_MAX_PENDING_PROPOSALS - 1
    # An import has its own bound (MEMORY_IMPORT_MAX_ITEMS); the model's proposals do not
    # push its items out, nor it theirs.
    pending = Proposal.objects.filter(
        user=user, state=Proposal.State.PENDING, provenance__isnull=True
    )
    oldest = list(pending.order_by("-created_at", "-id").values_list("pk", flat=True)[keep:])
    if oldest:
        Proposal.objects.filter(pk__in=oldest).update(
            state=Proposal.State.EXPIRED, decided_at=timezone.now()
        )
        for proposal_id in oldest:
            send_on_commit(proposal_removed, user_id=user.pk, proposal_id=proposal_id)
            proposal_resolved.send(
                sender=Proposal,
                user_id=user.pk,
                proposal_id=proposal_id,
                state=Proposal.State.EXPIRED,
            )


def memory_revert_request(*, turn: Turn, change_id: int) -> Outcome:
    """revert_change: a revert is a change, under the same save mode and rules as any other."""
    save_mode = _save_mode(check_may_change(turn))
    readable = [scope.pk for _, scope in readable_scopes(turn)]
    target = (
        ChangeSet.objects.select_related("scope")
        .filter(
            pk=change_id,
            user=turn.user,
            scope_id__in=readable,
            origin__in=[ChangeSet.Origin.AUTOMATIC, ChangeSet.Origin.ASSISTANT],
        )
        .first()
    )
    if target is None:
        raise ChangeRefused(
            "There is no memory change with that id that the assistant made in the notes "
            "this chat may read."
        )
    auto = save_mode == "auto" and turn.binding is None
    with transaction.atomic(durable=True):
        memory_lock(turn.user.pk)
        _refuse_over_reply_cap(turn)
        if auto:
            undo = change_set_undo_locked(
                user=turn.user,
                change_set=target,
                source=turn.source,
                origin=ChangeSet.Origin.AUTOMATIC,
                conversation_ref=turn.conversation_ref,
                message_ref=turn.message_ref,
            )
            return Outcome(
                "saved",
                f"Reverted change {target.pk} (new change {undo.pk}); the earlier text is back.",
                change_set=undo,
            )
        if ChangeSet.objects.filter(undoes=target).exists():
            raise ChangeRefused("This change was already undone.")
        op: Operation = {
            "action": REVERT,
            "change_id": target.pk,
            "created": timezone.localdate().isoformat(),
        }
        writes, bases = plan_writes(
            target.scope, op, origin=ChangeSet.Origin.ASSISTANT, source=turn.source
        )
        _validate(turn, target.scope, writes, bases, machine=False)
        why_waiting = (
            "Messages from messaging apps always ask first."
            if turn.binding
            else "You chose to be asked before memory changes."
        )
        proposal = _proposal_create(
            turn,
            target.scope,
            op,
            bases,
            reason=f"Undo change #{target.pk}: {target.summary}",
            why_waiting=why_waiting,
        )
    return Outcome(
        "proposed",
        f"Proposed undoing change {target.pk} (proposal {proposal.pk}); nothing changes until "
        "the person confirms it.",
        proposal=proposal,
    )
