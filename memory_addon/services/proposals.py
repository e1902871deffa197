"""Every model-initiated change goes through memory_change_request (M8, M9, M10)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from memory_addon import events
from memory_addon.addons import MEMORY_ADDON
from memory_addon.core import entries
from memory_addon.core.secret_guard import find_secret
from memory_addon.errors import ChangeRefused, NotAllowed, ProposalClosed, SecretRefused
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope, Proposal
from memory_addon.services.changes import ABSENT, FileWrite, change_set_apply, clean_path
from memory_addon.services.policy import kill_switch_on, policy_for
from memory_addon.services.scopes import agent_scope, channel_scope, index_path, user_scope
from memory_addon.services.user_settings import addon_enabled, save_mode_for
from memory_addon.turns import Turn

ACTIONS = ("add", "replace", "remove", "write_topic", "delete_topic")


@dataclass(frozen=True)
class Outcome:
    kind: Literal["saved", "proposed"]
    message: str
    proposal: Proposal | None = None
    change_set: ChangeSet | None = None


def check_may_change(turn: Turn) -> None:
    """Refuse model-initiated changes the rules never allow, whatever the save mode."""
    if kill_switch_on():
        raise NotAllowed("Memory is switched off on this server (MEMORY_AI_MEMORY=off).")
    if turn.memory_off:
        raise NotAllowed("Memory is switched off for this request.")
    policy = policy_for(turn.user)
    if policy.memory_mode == "off":
        raise NotAllowed("Your organization has turned memory off.")
    if policy.memory_mode == "read_only":
        raise NotAllowed("Your organization made memory read-only; nothing can be saved.")
    if not addon_enabled(user=turn.user, addon=MEMORY_ADDON):
        raise NotAllowed("The Short memory add-on is disabled; nothing can be saved.")
    if turn.is_background:
        raise NotAllowed("Scheduled and background runs cannot save notes.")
    if turn.agent and not turn.agent.memory_allowed:
        raise NotAllowed("The Memory add-on is not allowed for this agent.")
    if turn.agent and not turn.agent.may_propose:
        raise NotAllowed("This agent has not been given the right to propose memory changes.")


def target_scope(turn: Turn, name: str) -> MemoryScope:
    if name in ("", "user"):
        return user_scope(turn.user)
    if name == "agent":
        if not turn.agent:
            raise ChangeRefused("This chat has no saved agent; use scope 'user'.")
        return agent_scope(turn.agent)
    if name == "conversation":
        if not turn.binding:
            raise ChangeRefused("This chat is not a messaging conversation; use scope 'user'.")
        return channel_scope(turn.binding)
    raise ChangeRefused("scope must be one of: user, agent, conversation.")


def _normalize_operation(raw: dict[str, Any]) -> dict[str, Any]:
    action = raw.get("action")
    if action not in ACTIONS:
        raise ChangeRefused(f"action must be one of: {', '.join(ACTIONS)}.")
    op: dict[str, Any] = {"action": action, "scope": raw.get("scope") or "user"}
    if action in ("add", "replace"):
        op["text"] = entries.validate_entry_text(str(raw.get("text") or ""))
    if action in ("replace", "remove"):
        if not raw.get("entry_id"):
            raise ChangeRefused(f"{action} needs the entry_id of the entry to change.")
        op["entry_id"] = str(raw["entry_id"])
    if action == "add":
        op["entry_id"] = entries.new_entry_id()
    if raw.get("topic") or action in ("write_topic", "delete_topic"):
        op["topic"] = clean_path(str(raw.get("topic") or ""))
        if op["topic"] == "index.md":
            raise ChangeRefused(
                "index.md is the index; change its entries with add/replace/remove."
            )
    if action == "write_topic" or (action == "add" and raw.get("topic_content")):
        op["topic_content"] = str(raw.get("topic_content") or "")
        if not op["topic_content"].strip():
            raise ChangeRefused("topic_content is empty; use delete_topic to remove a topic.")
    op["created"] = timezone.localdate().isoformat()
    return op


def plan_writes(
    scope: MemoryScope,
    op: dict[str, Any],
    *,
    origin: str,
    source: str,
    scope_files: dict[str, MemoryFile] | None = None,
) -> tuple[list[FileWrite], dict[str, str]]:
    """The file writes an operation means, against the files as they are now.

    `scope_files` (path → file of this scope) saves the query when the caller has them.
    """
    index = index_path(scope)
    paths = [index] if op["action"] in ("add", "replace", "remove") else []
    if op.get("topic") and (op.get("topic_content") is not None or op["action"] == "delete_topic"):
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


class _DryRun(Exception):
    pass


def _validate(
    turn: Turn, scope: MemoryScope, writes: list[FileWrite], bases: dict[str, str]
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
                machine=True,
                base_hashes=bases,
            )
            raise _DryRun
    except _DryRun:
        pass


def _notes_in_reply(turn: Turn) -> int:
    if not turn.message_ref:
        return 0
    lookup = {
        "user": turn.user,
        "conversation_ref": turn.conversation_ref,
        "message_ref": turn.message_ref,
    }
    proposals = Proposal.objects.filter(**lookup).count()
    automatic = ChangeSet.objects.filter(origin=ChangeSet.Origin.AUTOMATIC, **lookup).count()
    return proposals + automatic


def memory_change_request(*, turn: Turn, operation: dict[str, Any], reason: str = "") -> Outcome:
    """Refuse, propose or save a change the model asked for."""
    check_may_change(turn)
    save_mode = save_mode_for(turn.user)
    if save_mode == "never":
        raise NotAllowed(
            "Saving to memory is off: the person chose 'Never'. Tell them that saving is off "
            "and that they can change it on the Short memory page."
        )
    if _notes_in_reply(turn) >= settings.MEMORY_MAX_NOTES_PER_REPLY:
        raise ChangeRefused(
            f"At most {settings.MEMORY_MAX_NOTES_PER_REPLY} notes can be saved per reply; "
            "this one was not saved."
        )
    op = _normalize_operation(operation)
    scope = target_scope(turn, op["scope"])
    text = op.get("text", "") + "\n" + op.get("topic_content", "")
    finding = find_secret(text)
    if finding:
        raise SecretRefused(finding.message(), line=finding.line, kind=finding.kind)
    auto = save_mode == "auto" and turn.binding is None
    why_waiting = ""
    if auto and len(op.get("text", "")) > settings.MEMORY_AUTO_MAX_NOTE_CHARS:
        auto, why_waiting = False, "Long notes wait for your confirmation."
    elif turn.binding is not None:
        why_waiting = "Messages from messaging apps always ask first."
    origin = ChangeSet.Origin.AUTOMATIC if auto else ChangeSet.Origin.ASSISTANT
    with transaction.atomic(durable=True):
        writes, bases = plan_writes(scope, op, origin=origin, source=turn.source)
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
        proposal = Proposal.objects.create(
            user=turn.user,
            scope=scope,
            operations=op,
            base_hashes=bases,
            reason=reason[:500],
            why_waiting=why_waiting,
            source=turn.source,
            conversation_ref=turn.conversation_ref,
            message_ref=turn.message_ref,
            agent=turn.agent,
            expires_at=timezone.now() + timedelta(hours=settings.MEMORY_PROPOSAL_TTL_HOURS),
        )
        _count_changed_on_commit(turn.user)
        events.proposal_added_on_commit(turn.user.pk, proposal.pk)
    return Outcome(
        "proposed",
        f"Proposed (proposal {proposal.pk}); nothing is saved until the person confirms it "
        f"within {settings.MEMORY_PROPOSAL_TTL_HOURS} hours.",
        proposal=proposal,
    )


def _summary(op: dict[str, Any]) -> str:
    return {
        "add": "Added a note",
        "replace": "Replaced a note",
        "remove": "Removed a note",
        "write_topic": f"Wrote {op.get('topic')}",
        "delete_topic": f"Deleted {op.get('topic')}",
    }[op["action"]]


def _count_changed_on_commit(user: User) -> None:
    pending = Proposal.objects.filter(user=user, state=Proposal.State.PENDING).count()
    events.proposals_changed_on_commit(user.pk, pending)


def proposal_confirm(
    *, user: User, proposal: Proposal, edited_text: str | None = None
) -> ChangeSet:
    """Apply a pending proposal (optionally with the person's edited text) as a change set."""
    expired = False
    with transaction.atomic(durable=True):
        locked = Proposal.objects.select_for_update().get(pk=proposal.pk, user=user)
        if locked.state != Proposal.State.PENDING:
            raise ProposalClosed(f"This proposal is already {locked.state}.")
        if locked.expires_at <= timezone.now():
            locked.state, locked.decided_at = Proposal.State.EXPIRED, timezone.now()
            locked.save(update_fields=["state", "decided_at"])
            _count_changed_on_commit(user)
            events.proposal_removed_on_commit(user.pk, locked.pk)
            expired = True
        else:
            op = dict(locked.operations)
            if edited_text is not None:
                if op["action"] not in ("add", "replace"):
                    raise ChangeRefused(
                        "Only a proposal that adds or replaces an entry has text to edit."
                    )
                try:
                    op["text"] = entries.validate_entry_text(edited_text)
                except entries.EntryRefused as error:
                    raise ChangeRefused(str(error)) from error
            writes, _ = plan_writes(
                locked.scope, op, origin=ChangeSet.Origin.ASSISTANT, source=locked.source
            )
            change_set = change_set_apply(
                user=user,
                scope=locked.scope,
                writes=writes,
                origin=ChangeSet.Origin.ASSISTANT,
                source=locked.source,
                machine=True,
                base_hashes=locked.base_hashes,
                summary=locked.reason or _summary(op),
                conversation_ref=locked.conversation_ref,
                message_ref=locked.message_ref,
                agent=locked.agent,
            )
            locked.state, locked.decided_at = Proposal.State.CONFIRMED, timezone.now()
            locked.change_set = change_set
            locked.save(update_fields=["state", "decided_at", "change_set"])
            _count_changed_on_commit(user)
            events.proposal_removed_on_commit(user.pk, locked.pk)
    if expired:
        raise ProposalClosed(
            "This proposal expired; it was not saved. Ask the assistant to propose it again."
        )
    return change_set


def proposal_reject(*, user: User, proposal: Proposal) -> Proposal:
    with transaction.atomic(durable=True):
        locked = Proposal.objects.select_for_update().get(pk=proposal.pk, user=user)
        if locked.state != Proposal.State.PENDING:
            raise ProposalClosed(f"This proposal is already {locked.state}.")
        locked.state, locked.decided_at = Proposal.State.REJECTED, timezone.now()
        locked.save(update_fields=["state", "decided_at"])
        _count_changed_on_commit(user)
        events.proposal_removed_on_commit(user.pk, locked.pk)
    return locked


def proposals_expire() -> int:
    """Mark pending proposals past their expiry; each affected user's pages are updated."""
    now = timezone.now()
    with transaction.atomic(durable=True):
        due = Proposal.objects.filter(state=Proposal.State.PENDING, expires_at__lte=now)
        expiring = list(due.values_list("pk", "user_id"))
        count = due.update(state=Proposal.State.EXPIRED, decided_at=now)
        for user in User.objects.filter(pk__in={user_id for _, user_id in expiring}):
            _count_changed_on_commit(user)
        for proposal_id, user_id in expiring:
            events.proposal_removed_on_commit(user_id, proposal_id)
    return count
