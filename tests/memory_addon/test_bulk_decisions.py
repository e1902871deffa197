"""Confirm all / Reject all: one step over the proposals the page showed, undone together."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.changes import change_sets_undo, file_write
from memory_addon.services.proposals import (
    memory_change_request,
    proposals_decide_all,
    proposals_reopen,
)
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _propose(user, text):
    return memory_change_request(
        turn=Turn(user=user), operation={"action": "add", "text": text}
    ).proposal


def _notes(user):
    row = MemoryFile.objects.filter(scope=ensure_user_scope(user), path="index.md").first()
    return [e.text for e in entries.machine_entries(row.content)] if row else []


def test_foreign_and_expired_proposals_are_skipped_and_left_untouched(user):
    other = UserFactory()
    mine, expired = _propose(user, "- a: one"), _propose(user, "- b: two")
    theirs = _propose(other, "- c: three")
    Proposal.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    result = proposals_decide_all(
        user=user, proposal_ids=[mine.pk, expired.pk, theirs.pk], decision="confirm"
    )
    assert [p.pk for p in result.decided] == [mine.pk]
    states = dict(Proposal.objects.values_list("pk", "state"))
    assert states == {mine.pk: "confirmed", expired.pk: "pending", theirs.pk: "pending"}
    assert _notes(other) == []


def test_a_proposal_that_no_longer_applies_is_reported_and_the_rest_saved(user):
    scope = ensure_user_scope(user)
    file_write(
        user=user,
        scope=scope,
        path="index.md",
        content=entries.render_entry(
            "- x: old", entry_id="e1", origin="assistant", created="2026-01-01", source="chat"
        )
        + "\n",
        base_sha256=None,
    )
    stale = memory_change_request(
        turn=Turn(user=user),
        operation={"action": "replace", "entry_id": "e1", "text": "- x: new"},
    ).proposal
    fine = _propose(user, "- y: fine")
    row = MemoryFile.objects.get(scope=scope, path="index.md")
    file_write(
        user=user,
        scope=scope,
        path="index.md",
        content=row.content.replace("- x: old", "- x: edited by me"),
        base_sha256=row.sha256,
    )
    result = proposals_decide_all(user=user, proposal_ids=[stale.pk, fine.pk], decision="confirm")
    assert [p.pk for p in result.decided] == [fine.pk]
    assert [p.pk for p, _ in result.refused] == [stale.pk]
    assert Proposal.objects.get(pk=stale.pk).state == "pending"
    assert _notes(user) == ["- y: fine"]


def test_undoing_a_confirm_all_undoes_every_change_or_none(user):
    proposals = [_propose(user, f"- n{i}: note {i}") for i in range(3)]
    result = proposals_decide_all(
        user=user, proposal_ids=[p.pk for p in proposals], decision="confirm"
    )
    assert len(_notes(user)) == 3
    undone = change_sets_undo(user=user, change_sets=result.change_sets)
    assert len(undone) == 3 and _notes(user) == []
    assert ChangeSet.objects.filter(undoes__isnull=False).count() == 3


def test_reopening_after_reject_all_only_brings_back_unexpired_rejections(user):
    first, second = _propose(user, "- a: one"), _propose(user, "- b: two")
    proposals_decide_all(user=user, proposal_ids=[first.pk, second.pk], decision="reject")
    Proposal.objects.filter(pk=second.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    reopened = proposals_reopen(user=user, proposal_ids=[first.pk, second.pk])
    assert [p.pk for p in reopened] == [first.pk]
    assert Proposal.objects.get(pk=second.pk).state == "rejected"


def test_the_bulk_view_refuses_a_made_up_decision_and_ignores_junk_ids(client, user):
    client.force_login(user)
    proposal = _propose(user, "- a: one")
    assert client.post("/inbox/all/", {"decision": "delete"}).status_code == 400
    response = client.post(
        "/inbox/all/",
        {"decision": "confirm", "proposal": ["x", "-1", "9" * 40, "١٢", str(proposal.pk)]},
    )
    assert response.status_code == 200
    assert Proposal.objects.get().state == "confirmed"


def test_the_bulk_undo_view_ignores_another_persons_change_sets(client, user):
    other = UserFactory()
    theirs = proposals_decide_all(
        user=other, proposal_ids=[_propose(other, "- z: theirs").pk], decision="confirm"
    ).change_sets[0]
    client.force_login(user)
    response = client.post("/inbox/all/undo/", {"decision": "confirm", "change_set": theirs.pk})
    assert response.status_code == 200
    assert _notes(other) == ["- z: theirs"]


def test_the_bulk_form_needs_a_csrf_token(user):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post("/inbox/all/", {"decision": "reject"}).status_code == 403


def test_a_huge_changed_number_on_the_memory_tab_is_ignored(client, user):
    client.force_login(user)
    assert client.get("/memory/", {"changed": "9" * 40}).status_code == 200
