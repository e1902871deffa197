"""Proposals (M8, M9, M10): the model's requests, their planning, the person's decisions."""

from memory_addon.services.proposals.conflicts import decision_of
from memory_addon.services.proposals.decisions import (
    BulkDecision,
    proposal_confirm,
    proposal_reject,
    proposals_decide_all,
    proposals_expire,
    proposals_reopen,
)
from memory_addon.services.proposals.planning import entry_fingerprint, plan_proposal, plan_writes
from memory_addon.services.proposals.requests import (
    Outcome,
    check_may_change,
    memory_change_request,
    memory_revert_request,
    target_scope,
)

__all__ = [
    "BulkDecision",
    "Outcome",
    "check_may_change",
    "decision_of",
    "entry_fingerprint",
    "memory_change_request",
    "memory_revert_request",
    "plan_proposal",
    "plan_writes",
    "proposal_confirm",
    "proposal_reject",
    "proposals_decide_all",
    "proposals_expire",
    "proposals_reopen",
    "target_scope",
]
