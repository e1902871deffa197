"""The person's decisions on proposals in the Inbox and the chat (M8): confirm, reject,
all at once, reopen; and the expiry of the ones left waiting."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from django.db import transaction
from django.utils import timezone

from accounts.models import User
from host.errors import ChangeRefused, ProposalClosed, Refusal
from memory_addon.core import entries
from memory_addon.core.conflicts import Conflict, Decision
from memory_addon.core.operations import Operation
from memory_addon.models import ChangeSet, Proposal
from memory_addon.services.changes import change_set_apply, change_set_undo_locked
from memory_addon.services.locks import memory_lock
from memory_addon.services.proposals.conflicts import settle_conflict
from memory_addon.services.proposals.planning import REVERT, _summary, plan_proposal
from memory_addon.signals import (
    proposal_added,
    proposal_created,
    proposal_removed,
    proposal_resolved,
    proposals_counted,
    send_on_commit,
)


def _count_changed_on_commit(user: User) -> None:
    pending = Proposal.objects.filter(user=user, state=Proposal.State.PENDING).count()
    send_on_commit(proposals_counted, user_id=user.pk, pending_count=pending)


def proposal_confirm(
    *,
    user: User,
    proposal: Proposal,
    edited_text: str | None = None,
    decision: Decision | None = None,
) -> ChangeSet:
    """Apply a pending proposal (optionally with the person's edited text) as a change set.

    For a proposal that conflicts with a saved note, `decision` says what happens to the
    old one: "replace" takes it out in the same change set, "keep_both" (also when no
    decision is given) keeps it. Discard is proposal_reject.
    """
    expired = False
    with transaction.atomic(durable=True):
        memory_lock(user.pk)
        locked = (
            Proposal.objects.select_for_update(of=("self",))
            .select_related("scope")
            .get(pk=proposal.pk, user=user)
        )
        if locked.state != Proposal.State.PENDING:
            raise ProposalClosed(f"This proposal is already {locked.state}.")
        if locked.expires_at <= timezone.now():
            locked.state, locked.decided_at = Proposal.State.EXPIRED, timezone.now()
            locked.save(update_fields=["state", "decided_at"])
            _count_changed_on_commit(user)
            send_on_commit(proposal_removed, user_id=user.pk, proposal_id=locked.pk)
            proposal_resolved.send(
                sender=Proposal, user_id=user.pk, proposal_id=locked.pk, state=locked.state
            )
            expired = True
        else:
            change_set = _confirm_locked(user, locked, edited_text, decision)
    if expired:
        raise ProposalClosed(
            "This proposal expired; it was not saved. Ask the assistant to propose it again."
        )
    return change_set


def _confirm_locked(
    user: User, locked: Proposal, edited_text: str | None, decision: Decision | None = None
) -> ChangeSet:
    """Confirm a pending proposal the caller locked (memory_lock, then the row)."""
    change_set = _apply_proposal(user, locked, edited_text, decision)
    locked.state, locked.decided_at = Proposal.State.CONFIRMED, timezone.now()
    locked.change_set = change_set
    locked.save(update_fields=["state", "decided_at", "change_set"])
    _count_changed_on_commit(user)
    send_on_commit(proposal_removed, user_id=user.pk, proposal_id=locked.pk)
    proposal_resolved.send(
        sender=Proposal,
        user_id=user.pk,
        proposal_id=locked.pk,
        state=locked.state,
        change_set_id=change_set.pk,
    )
    return change_set


def _apply_proposal(
    user: User, proposal: Proposal, edited_text: str | None, decision: Decision | None
) -> ChangeSet:
    op: Operation = proposal.operations.copy()  # a JSON column: stored by _proposal_create
    conflict: Conflict | None = proposal.conflict  # a JSON column: stored by _proposal_create
    if decision == "replace" and conflict is None:
        raise ChangeRefused(
            "decision: this proposal conflicts with no saved note; there is nothing to replace.",
            field="decision",
        )
    if edited_text is not None:
        if op["action"] not in ("add", "replace"):
            raise ChangeRefused("Only a proposal that adds or replaces an entry has text to edit.")
        try:
            op["text"] = entries.validate_entry_text(edited_text)
        except entries.EntryRefused as error:
            raise ChangeRefused(str(error)) from error
    if op["action"] == REVERT:
        target = ChangeSet.objects.filter(pk=op["change_id"], user=user).first()
        if target is None:
            raise ChangeRefused("The change this proposal would undo is no longer in the history.")
        return change_set_undo_locked(user=user, change_set=target, source=proposal.source)
    writes, bases = plan_proposal(proposal.scope, op, proposal.base_hashes, source=proposal.source)
    machine = True
    if conflict is not None:
        # Replacing the person's own line is the person's decision, not the machine's.
        writes, machine = settle_conflict(proposal.scope, conflict, writes, decision or "keep_both")
    return change_set_apply(
        user=user,
        scope=proposal.scope,
        writes=writes,
        origin=ChangeSet.Origin.ASSISTANT,
        source=proposal.source,
        machine=machine,
        base_hashes=bases,
        summary=proposal.reason
        or ("Replaced a saved note" if decision == "replace" else _summary(op)),
        conversation_ref=proposal.conversation_ref,
        message_ref=proposal.message_ref,
        agent=proposal.agent,
    )


def proposal_reject(*, user: User, proposal: Proposal) -> Proposal:
    with transaction.atomic(durable=True):
        locked = Proposal.objects.select_for_update().get(pk=proposal.pk, user=user)
        if locked.state != Proposal.State.PENDING:
            raise ProposalClosed(f"This proposal is already {locked.state}.")
        _reject_locked(user, locked)
    return locked


def _reject_locked(user: User, locked: Proposal) -> None:
    locked.state, locked.decided_at = Proposal.State.REJECTED, timezone.now()
    locked.save(update_fields=["state", "decided_at"])
    _count_changed_on_commit(user)
    send_on_commit(proposal_removed, user_id=user.pk, proposal_id=locked.pk)
    proposal_resolved.send(
        sender=Proposal, user_id=user.pk, proposal_id=locked.pk, state=locked.state
    )


@dataclass(frozen=True)
class BulkDecision:
    """What "Confirm all" or "Reject all" did: one step the person can undo as a whole."""

    decision: Literal["confirm", "reject"]
    decided: list[Proposal]
    change_sets: list[ChangeSet]
    refused: list[tuple[Proposal, str]]  # a proposal that could not be saved, and why


def proposals_decide_all(
    *, user: User, proposal_ids: Sequence[int], decision: Literal["confirm", "reject"]
) -> BulkDecision:
    """Confirm or reject the pending proposals the person saw, in one transaction.

    Only the ids the page listed are decided, so a proposal that arrived meanwhile is
    never confirmed unseen. Another person's, decided or expired proposals are skipped
    and left as they are. Each confirm goes through the same path as a single card's;
    one that cannot be applied (its note changed, a cap) is reported and the rest saved.
    """
    decided: list[Proposal] = []
    change_sets: list[ChangeSet] = []
    refused: list[tuple[Proposal, str]] = []
    with transaction.atomic(durable=True):
        memory_lock(user.pk)
        rows = (
            Proposal.objects.select_for_update(of=("self",))
            .select_related("scope")
            .filter(
                pk__in=list(proposal_ids),
                user=user,
                state=Proposal.State.PENDING,
                expires_at__gt=timezone.now(),
            )
            .order_by("created_at", "id")
        )
        for locked in rows:
            if decision == "reject":
                _reject_locked(user, locked)
                decided.append(locked)
                continue
            try:
                # A savepoint: a refused proposal leaves no write and no event behind.
                with transaction.atomic():
                    change_sets.append(_confirm_locked(user, locked, None))
            except Refusal as refusal:
                refused.append((locked, refusal.message))
            else:
                decided.append(locked)
    return BulkDecision(decision, decided, change_sets, refused)


def proposals_reopen(*, user: User, proposal_ids: Sequence[int]) -> list[Proposal]:
    """Undo of "Reject all": the rejected proposals wait again, while they have not expired."""
    with transaction.atomic(durable=True):
        memory_lock(user.pk)
        rows = list(
            Proposal.objects.select_for_update()
            .filter(
                pk__in=list(proposal_ids),
                user=user,
                state=Proposal.State.REJECTED,
                expires_at__gt=timezone.now(),
            )
            .order_by("created_at", "id")
        )
        for row in rows:
            row.state, row.decided_at = Proposal.State.PENDING, None
            row.save(update_fields=["state", "decided_at"])
            send_on_commit(proposal_added, user_id=user.pk, proposal_id=row.pk)
            proposal_created.send(
                sender=Proposal,
                user_id=user.pk,
                proposal_id=row.pk,
                scope_id=row.scope_id,
                action=str(row.operations.get("action", "")),
                source=row.source,
            )
        if rows:
            _count_changed_on_commit(user)
    return rows


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
            send_on_commit(proposal_removed, user_id=user_id, proposal_id=proposal_id)
            proposal_resolved.send(
                sender=Proposal,
                user_id=user_id,
                proposal_id=proposal_id,
                state=Proposal.State.EXPIRED,
            )
    return count
