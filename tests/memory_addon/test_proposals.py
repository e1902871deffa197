from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Membership, Organization
from addons.models import AddonSetting
from addons.services import addon_setting_put
from host.errors import (
    ChangeRefused,
    NotAllowed,
    ProposalClosed,
    SecretRefused,
    StaleBase,
)
from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import (
    memory_change_request,
    proposal_confirm,
    proposal_reject,
    proposals_expire,
)
from memory_addon.services.scopes import ensure_agent_scope, ensure_channel_scope
from tests.factories import AgentFactory, OrganizationFactory

pytestmark = pytest.mark.django_db

ADD = {"action": "add", "text": "- home: lives in Rome -> home.md"}


def _mode(user, value):
    addon_setting_put(user=user, addon="memory", key="save-mode", value=value)


def _index(scope):
    row = MemoryFile.objects.filter(scope=scope, path="index.md").first()
    return row.content if row else ""


def test_ask_mode_creates_a_pending_proposal_and_saves_nothing(turn, scope):
    outcome = memory_change_request(turn=turn, operation=ADD, reason="they said so")
    assert outcome.kind == "proposed"
    assert outcome.proposal.state == Proposal.State.PENDING
    assert _index(scope) == ""


def test_confirming_applies_the_proposal_as_one_change_set(turn, scope, user):
    proposal = memory_change_request(turn=turn, operation=ADD).proposal
    change_set = proposal_confirm(user=user, proposal=proposal)
    (entry,) = entries.machine_entries(_index(scope))
    assert entry.text == ADD["text"]
    assert change_set.origin == ChangeSet.Origin.ASSISTANT
    proposal.refresh_from_db()
    assert proposal.state == Proposal.State.CONFIRMED and proposal.change_set == change_set


def test_confirming_with_edited_text_saves_the_edited_text(turn, scope, user):
    proposal = memory_change_request(turn=turn, operation=ADD).proposal
    proposal_confirm(user=user, proposal=proposal, edited_text="- home: lives in Milan -> home.md")
    assert [e.text for e in entries.machine_entries(_index(scope))] == [
        "- home: lives in Milan -> home.md"
    ]


def test_edited_text_over_300_characters_is_refused(turn, user):
    proposal = memory_change_request(turn=turn, operation=ADD).proposal
    with pytest.raises(ChangeRefused, match="at most 300"):
        proposal_confirm(user=user, proposal=proposal, edited_text="x" * 301)


def test_rejecting_drops_the_proposal(turn, scope, user):
    proposal = memory_change_request(turn=turn, operation=ADD).proposal
    proposal_reject(user=user, proposal=proposal)
    proposal.refresh_from_db()
    assert proposal.state == Proposal.State.REJECTED
    with pytest.raises(ProposalClosed):
        proposal_confirm(user=user, proposal=proposal)
    assert _index(scope) == ""


def test_a_proposal_confirmed_after_24_hours_is_refused_as_expired(turn, scope, user):
    proposal = memory_change_request(turn=turn, operation=ADD).proposal
    Proposal.objects.filter(pk=proposal.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(ProposalClosed, match="expired"):
        proposal_confirm(user=user, proposal=proposal)
    proposal.refresh_from_db()
    assert proposal.state == Proposal.State.EXPIRED
    assert _index(scope) == ""


def test_expiry_job_marks_old_pending_proposals(turn):
    proposal = memory_change_request(turn=turn, operation=ADD).proposal
    Proposal.objects.filter(pk=proposal.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    assert proposals_expire() == 1
    proposal.refresh_from_db()
    assert proposal.state == Proposal.State.EXPIRED


def test_a_proposal_still_applies_after_the_person_edited_other_parts_of_the_index(
    turn, scope, user
):
    proposal = memory_change_request(turn=turn, operation=ADD).proposal
    file_write(
        user=user, scope=scope, path="index.md", content="I edited this myself.\n", base_sha256=None
    )
    proposal_confirm(user=user, proposal=proposal)
    assert _index(scope).startswith("I edited this myself.\n")
    assert [e.text for e in entries.machine_entries(_index(scope))] == [ADD["text"]]


def test_a_proposal_is_refused_when_the_entry_it_replaces_changed_since(turn, scope, user):
    _mode(user, "auto")
    memory_change_request(turn=turn, operation=ADD)
    (entry,) = entries.machine_entries(_index(scope))
    _mode(user, "ask")
    replace_op = {"action": "replace", "entry_id": entry.entry_id, "text": "- home: Milan -> h.md"}
    proposal = memory_change_request(
        turn=replace(turn, message_ref="m2"), operation=replace_op
    ).proposal
    edited = _index(scope).replace("lives in Rome", "lives in Turin")
    file_write(user=user, scope=scope, path="index.md", content=edited, base_sha256=None)
    with pytest.raises(StaleBase, match=r"edited or removed since.*Reject this proposal"):
        proposal_confirm(user=user, proposal=proposal)
    assert "lives in Turin" in _index(scope)
    assert entries.machine_entries(_index(scope)) == []  # the person's text now (M5)


def test_auto_mode_saves_at_once_in_the_persons_own_chat(turn, scope, user):
    _mode(user, "auto")
    outcome = memory_change_request(turn=turn, operation=ADD)
    assert outcome.kind == "saved"
    assert outcome.change_set.origin == ChangeSet.Origin.AUTOMATIC
    assert len(entries.machine_entries(_index(scope))) == 1


def test_auto_mode_in_a_messaging_chat_still_asks(turn, user, binding):
    _mode(user, "auto")
    outcome = memory_change_request(turn=replace(turn, binding=binding), operation=ADD)
    assert outcome.kind == "proposed"
    assert "messaging" in outcome.proposal.why_waiting


def test_never_mode_refuses_with_a_message_the_model_can_relay(turn, user):
    _mode(user, "never")
    with pytest.raises(NotAllowed, match="saving is off"):
        memory_change_request(turn=turn, operation=ADD)
    assert not Proposal.objects.exists()


@pytest.mark.parametrize("run_kind", ["scheduled", "background"])
def test_background_and_scheduled_runs_cannot_save(turn, user, run_kind):
    _mode(user, "auto")
    with pytest.raises(NotAllowed, match="background runs cannot save"):
        memory_change_request(turn=replace(turn, run_kind=run_kind), operation=ADD)


def test_a_sixth_note_in_one_reply_is_refused(turn, user):
    _mode(user, "auto")
    for i in range(5):
        memory_change_request(
            turn=turn, operation={"action": "add", "text": f"- n{i}: note {i} -> n{i}.md"}
        )
    with pytest.raises(ChangeRefused, match="At most 5"):
        memory_change_request(turn=turn, operation={"action": "add", "text": "- n6: six -> n6.md"})
    # The next reply may save again.
    assert (
        memory_change_request(turn=replace(turn, message_ref="msg-2"), operation=ADD).kind
        == "saved"
    )


def test_a_long_note_waits_for_confirmation_even_in_auto(turn, user):
    _mode(user, "auto")
    outcome = memory_change_request(
        turn=turn, operation={"action": "add", "text": "- diet: " + "a" * 250}
    )
    assert outcome.kind == "proposed"
    assert "Long notes" in outcome.proposal.why_waiting


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("- aws: key AKIAQ3EGT7PLX2M4VNRD", "known token format"),
        ("- db: db_password=hunter22", "password assignment"),
        ("- wifi: the password is swordfish", "password in prose"),
        ("- blob: aZ3k9Qx7Lm2Pq8Rt5Vw1Yb4Nc6Hd0Jf2Gs", "random-looking string"),
    ],
)
def test_a_secret_note_is_refused_with_line_and_kind_and_the_value_is_nowhere(
    turn, user, caplog, text, kind
):
    _mode(user, "auto")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(SecretRefused) as refusal:
        memory_change_request(turn=turn, operation={"action": "add", "text": text})
    assert refusal.value.details == {"line": 1, "kind": kind}
    value = text.split()[-1]
    assert value not in refusal.value.message
    assert value not in caplog.text
    assert not Proposal.objects.exists() and not ChangeSet.objects.exists()


def test_a_machine_change_that_touches_the_persons_paragraph_is_refused(turn, scope, user):
    file_write(user=user, scope=scope, path="home.md", content="I wrote this.\n", base_sha256="")
    with pytest.raises(ChangeRefused, match="alter text you wrote"):
        memory_change_request(
            turn=turn,
            operation={
                "action": "write_topic",
                "topic": "home.md",
                "topic_content": "Replaced by the model.\n",
            },
        )
    assert MemoryFile.objects.get(scope=scope, path="home.md").content == "I wrote this.\n"


def test_the_machine_may_rewrite_a_topic_file_it_wrote_itself(turn, scope, user):
    _mode(user, "auto")
    memory_change_request(
        turn=turn,
        operation={"action": "write_topic", "topic": "food.md", "topic_content": "Likes pasta.\n"},
    )
    memory_change_request(
        turn=replace(turn, message_ref="msg-2"),
        operation={
            "action": "write_topic",
            "topic": "food.md",
            "topic_content": "Likes risotto.\n",
        },
    )
    assert MemoryFile.objects.get(scope=scope, path="food.md").content == "Likes risotto.\n"


def test_removing_an_entry_keeps_the_persons_text(turn, scope, user):
    _mode(user, "auto")
    file_write(user=user, scope=scope, path="index.md", content="My own line.\n", base_sha256="")
    memory_change_request(turn=turn, operation=ADD)
    (entry,) = entries.machine_entries(_index(scope))
    memory_change_request(
        turn=replace(turn, message_ref="m2"),
        operation={"action": "remove", "entry_id": entry.entry_id},
    )
    assert _index(scope).strip() == "My own line."


def test_an_edited_entry_cannot_be_replaced_by_the_machine(turn, scope, user):
    _mode(user, "auto")
    memory_change_request(turn=turn, operation=ADD)
    (entry,) = entries.machine_entries(_index(scope))
    edited = _index(scope).replace("lives in Rome", "lives in Turin")
    file_write(user=user, scope=scope, path="index.md", content=edited, base_sha256=None)
    assert entries.machine_entries(_index(scope)) == []
    with pytest.raises(ChangeRefused, match="no machine entry"):
        memory_change_request(
            turn=replace(turn, message_ref="m2"),
            operation={
                "action": "replace",
                "entry_id": entry.entry_id,
                "text": "- home: Naples -> home.md",
            },
        )


def test_over_cap_proposals_are_refused_listing_current_entries(turn, scope, user, settings):
    settings.MEMORY_INDEX_MAX_LINES = 2
    file_write(
        user=user,
        scope=scope,
        path="index.md",
        content="- a: one -> a.md\n- b: two -> b.md\n",
        base_sha256="",
    )
    with pytest.raises(ChangeRefused) as refusal:
        memory_change_request(turn=turn, operation=ADD)
    assert (
        "- a: one -> a.md" in refusal.value.message and "- b: two -> b.md" in refusal.value.message
    )


def test_an_unreadable_setting_means_ask(turn, user):
    AddonSetting.objects.create(user=user, addon="memory", key="save-mode", value={"broken": True})
    assert memory_change_request(turn=turn, operation=ADD).kind == "proposed"


def test_an_agent_without_memory_cannot_propose(turn, user):
    agent = AgentFactory(owner=user, memory_allowed=False, may_propose=True)
    with pytest.raises(NotAllowed, match="not allowed for this agent"):
        memory_change_request(turn=replace(turn, agent=agent), operation=ADD)


def test_an_agent_without_the_right_cannot_propose(turn, user):
    agent = AgentFactory(owner=user, memory_allowed=True, may_propose=False)
    with pytest.raises(NotAllowed, match="right to propose"):
        memory_change_request(turn=replace(turn, agent=agent), operation=ADD)


def test_an_agent_cannot_widen_ask_into_auto(turn, user):
    agent = AgentFactory(owner=user, memory_allowed=True, may_propose=True)
    outcome = memory_change_request(
        turn=replace(turn, agent=agent), operation={**ADD, "scope": "agent"}
    )
    assert outcome.kind == "proposed"
    assert outcome.proposal.scope == ensure_agent_scope(agent)


def test_conversation_scope_goes_to_the_bindings_own_notes(turn, user, binding):
    outcome = memory_change_request(
        turn=replace(turn, binding=binding), operation={**ADD, "scope": "conversation"}
    )
    assert outcome.proposal.scope == ensure_channel_scope(binding)
    assert outcome.proposal.source == "bridge"


def test_read_only_policy_refuses_proposals(turn, user):
    organization = OrganizationFactory(memory_mode=Organization.MemoryMode.READ_ONLY)
    Membership.objects.create(organization=organization, user=user)
    with pytest.raises(NotAllowed, match="read-only"):
        memory_change_request(turn=turn, operation=ADD)


def test_the_kill_switch_refuses_proposals(turn, settings):
    settings.MEMORY_AI_MEMORY = "off"
    with pytest.raises(NotAllowed, match="MEMORY_AI_MEMORY=off"):
        memory_change_request(turn=turn, operation=ADD)


def test_the_per_request_switch_refuses_proposals(turn):
    with pytest.raises(NotAllowed, match="off for this request"):
        memory_change_request(turn=replace(turn, memory_off=True), operation=ADD)


def test_every_automatic_note_is_in_the_audit(turn, user, api):
    _mode(user, "auto")
    saved = memory_change_request(turn=turn, operation=ADD).change_set
    audit = api.get("/api/chats/changes/audit?source=chat").json()
    assert [row["id"] for row in audit] == [saved.pk]
    assert api.get("/api/chats/changes/audit?source=bridge").json() == []


def test_a_proposal_lives_exactly_24_hours(turn):
    proposal = memory_change_request(turn=turn, operation=ADD).proposal
    lifetime = proposal.expires_at - proposal.created_at
    assert timedelta(hours=23, minutes=59) < lifetime <= timedelta(hours=24, seconds=1)


def test_the_expiry_job_runs_on_the_beat_schedule(settings):
    from config.celery import app

    entries_by_task = {e["task"]: e for e in settings.CELERY_BEAT_SCHEDULE.values()}
    assert float(entries_by_task["memory_addon.proposals_expire"]["schedule"]) <= 600
    assert "memory_addon.proposals_expire" in app.tasks


def test_the_machine_cannot_delete_a_topic_file_the_person_wrote(turn, scope, user):
    _mode(user, "auto")
    file_write(user=user, scope=scope, path="home.md", content="Mine.\n", base_sha256="")
    with pytest.raises(ChangeRefused, match="your own text"):
        memory_change_request(turn=turn, operation={"action": "delete_topic", "topic": "home.md"})
    assert MemoryFile.objects.get(scope=scope, path="home.md").content == "Mine.\n"


def test_an_agent_turn_follows_the_persons_save_mode(turn, user, scope):
    agent = AgentFactory(owner=user, memory_allowed=True, may_propose=True)
    agent_turn = replace(turn, agent=agent)
    assert memory_change_request(turn=agent_turn, operation=ADD).kind == "proposed"
    _mode(user, "auto")
    saved = memory_change_request(turn=replace(agent_turn, message_ref="m2"), operation=ADD)
    assert saved.kind == "saved"
    _mode(user, "never")
    with pytest.raises(NotAllowed, match="saving is off"):
        memory_change_request(turn=replace(agent_turn, message_ref="m3"), operation=ADD)
