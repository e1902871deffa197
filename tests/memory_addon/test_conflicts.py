"""Reviewed conflicts (M23): a proposal that contradicts a saved note shows both, and the
person chooses Replace, Keep both or Discard, from the Inbox, the chat card and REST."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from accounts.services import api_token_create
from addons.services import addon_setting_put
from chat.models import Conversation, Message
from chat.runner import turn_run
from host.errors import ChangeRefused, StaleBase
from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import (
    memory_change_request,
    proposal_confirm,
    proposals_decide_all,
)
from memory_addon.turns import Turn
from tests.config.test_mcp import mcp
from tests.factories import AIProfileFactory

pytestmark = pytest.mark.django_db

OLD_HOME = "- home: lives in Rome -> home.md"
NEW_HOME = "- home: lives in Milan -> home.md"
OLD_DRINK = "My favourite drink is green tea."
NEW_DRINK = "My favourite drink is black coffee."
ADD_HOME_TOPIC = {"action": "add", "text": NEW_HOME, "topic": "home.md", "topic_content": "Milan"}


def _index(scope) -> str:
    row = MemoryFile.objects.filter(scope=scope, path="index.md").first()
    return row.content if row else ""


def _saved(turn, text):
    """A note the assistant saved earlier (a fenced entry with its date)."""
    addon_setting_put(user=turn.user, addon="memory", key="save-mode", value="auto")
    outcome = memory_change_request(turn=turn, operation={"action": "add", "text": text})
    assert outcome.kind == "saved", outcome.message
    addon_setting_put(user=turn.user, addon="memory", key="save-mode", value="ask")


def _machine_topic(turn, content):
    """A topic file the assistant wrote earlier (the person's own it may not replace)."""
    addon_setting_put(user=turn.user, addon="memory", key="save-mode", value="auto")
    op = {"action": "write_topic", "topic": "home.md", "topic_content": content}
    assert memory_change_request(turn=turn, operation=op).kind == "saved"
    addon_setting_put(user=turn.user, addon="memory", key="save-mode", value="ask")


def _propose(turn, text, message_ref="msg-2"):
    later = Turn(
        user=turn.user,
        conversation_ref=turn.conversation_ref,
        message_ref=message_ref,
        reply_ref_trusted=True,
    )
    return memory_change_request(turn=later, operation={"action": "add", "text": text})


def test_a_note_with_the_same_topic_key_is_flagged_with_the_old_note_and_its_date(turn, scope):
    _saved(turn, OLD_HOME)
    (old,) = entries.machine_entries(_index(scope))
    outcome = _propose(turn, NEW_HOME)
    conflict = outcome.proposal.conflict
    assert conflict["kind"] == "topic"
    assert conflict["text"] == OLD_HOME and conflict["entry_id"] == old.entry_id
    assert conflict["date"] == old.created and conflict["path"] == "index.md"
    assert "may contradict a note saved on" in outcome.message


def test_a_note_close_in_meaning_is_flagged_and_an_unrelated_one_is_not(turn, scope, user):
    file_write(user=user, scope=scope, path="index.md", content=f"{OLD_DRINK}\n", base_sha256="")
    close = _propose(turn, NEW_DRINK).proposal
    assert close.conflict["kind"] == "meaning" and close.conflict["text"] == OLD_DRINK
    assert close.conflict["similarity"] >= 0.65
    unrelated = _propose(turn, "Works as a nurse in Berlin.", message_ref="msg-3").proposal
    assert unrelated.conflict is None


def test_a_note_for_an_existing_topic_file_with_other_text_is_flagged(turn, scope, user):
    _machine_topic(turn, "Rome\n")
    proposal = memory_change_request(turn=turn, operation=ADD_HOME_TOPIC).proposal
    assert proposal.conflict["kind"] == "topic" and proposal.conflict["path"] == "home.md"
    assert proposal.conflict["text"] == "Rome\n"


def test_auto_mode_holds_a_conflicting_note_in_the_inbox_with_the_reason(turn, scope):
    _saved(turn, OLD_HOME)
    addon_setting_put(user=turn.user, addon="memory", key="save-mode", value="auto")
    outcome = _propose(turn, NEW_HOME)
    assert outcome.kind == "proposed"
    assert "may contradict a note saved on" in outcome.proposal.why_waiting
    assert "Milan" not in _index(scope)


def test_replace_takes_the_old_note_out_in_the_same_change_set(turn, scope, user):
    _saved(turn, OLD_HOME)
    proposal = _propose(turn, NEW_HOME).proposal
    change_set = proposal_confirm(user=user, proposal=proposal, decision="replace")
    assert [e.text for e in entries.machine_entries(_index(scope))] == [NEW_HOME]
    assert change_set.changes.count() == 1 and change_set.summary == "Replaced a saved note"


def test_replace_can_take_out_the_persons_own_line(turn, scope, user):
    file_write(
        user=user, scope=scope, path="index.md", content=f"{OLD_DRINK}\n\nOther.\n", base_sha256=""
    )
    proposal = _propose(turn, NEW_DRINK).proposal
    proposal_confirm(user=user, proposal=proposal, decision="replace")
    index = _index(scope)
    assert OLD_DRINK not in index and NEW_DRINK in index and "Other." in index


def test_keep_both_keeps_the_old_note_next_to_the_new_one(turn, scope, user):
    _saved(turn, OLD_HOME)
    proposal = _propose(turn, NEW_HOME).proposal
    proposal_confirm(user=user, proposal=proposal, decision="keep_both")
    assert [e.text for e in entries.machine_entries(_index(scope))] == [OLD_HOME, NEW_HOME]


@pytest.mark.parametrize(
    ("decision", "after"), [("replace", "Milan"), ("keep_both", "Rome\n\nMilan")]
)
def test_a_topic_file_is_replaced_or_keeps_both_texts(turn, scope, user, decision, after):
    _machine_topic(turn, "Rome\n")
    proposal = memory_change_request(turn=turn, operation=ADD_HOME_TOPIC).proposal
    proposal_confirm(user=user, proposal=proposal, decision=decision)
    assert MemoryFile.objects.get(scope=scope, path="home.md").content == after


@pytest.mark.parametrize(
    ("decision", "lines", "topic"),
    [("replace", [NEW_HOME], "Milan"), ("keep_both", [OLD_HOME, NEW_HOME], "Rome\n\nMilan")],
)
def test_a_note_with_its_topic_file_settles_the_index_line_and_the_file_together(
    turn, scope, user, decision, lines, topic
):
    _machine_topic(turn, "Rome\n")
    _saved(turn, OLD_HOME)
    proposal = memory_change_request(turn=turn, operation=ADD_HOME_TOPIC).proposal
    assert proposal.conflict["path"] == "index.md" and proposal.conflict["text"] == OLD_HOME
    proposal_confirm(user=user, proposal=proposal, decision=decision)
    assert [e.text for e in entries.machine_entries(_index(scope))] == lines
    assert MemoryFile.objects.get(scope=scope, path="home.md").content == topic


def test_replace_after_the_old_note_changed_is_refused_and_nothing_is_saved(turn, scope, user):
    file_write(user=user, scope=scope, path="index.md", content=f"{OLD_DRINK}\n", base_sha256="")
    proposal = _propose(turn, NEW_DRINK).proposal
    file_write(
        user=user, scope=scope, path="index.md", content="I drink water.\n", base_sha256=None
    )
    with pytest.raises(StaleBase, match="Keep both or Discard"):
        proposal_confirm(user=user, proposal=proposal, decision="replace")
    assert _index(scope) == "I drink water.\n"


def test_replace_on_a_proposal_without_a_conflict_is_refused(turn, user):
    proposal = _propose(turn, NEW_HOME).proposal
    with pytest.raises(ChangeRefused, match="decision"):
        proposal_confirm(user=user, proposal=proposal, decision="replace")


def test_confirm_all_keeps_both_for_a_conflicting_proposal(turn, scope, user):
    _saved(turn, OLD_HOME)
    proposal = _propose(turn, NEW_HOME).proposal
    result = proposals_decide_all(user=user, proposal_ids=[proposal.pk], decision="confirm")
    assert result.decided == [proposal]
    assert [e.text for e in entries.machine_entries(_index(scope))] == [OLD_HOME, NEW_HOME]


def test_the_inbox_shows_the_old_note_its_date_and_the_three_decisions(client, turn, user):
    _saved(turn, OLD_HOME)
    proposal = _propose(turn, NEW_HOME).proposal
    client.force_login(user)
    html = client.get(reverse("inbox")).content.decode()
    card = html.split(f'id="proposal-{proposal.pk}"')[1]
    assert 'data-conflict="topic"' in card and "lives in Rome" in card
    assert f'datetime="{proposal.conflict["date"]}"' in card
    for decision in ("replace", "keep_both", "discard"):
        assert f'data-decision="{decision}"' in card


@pytest.mark.parametrize(
    ("decision", "url_name", "notes", "state"),
    [
        ("replace", "inbox_confirm", [NEW_HOME], Proposal.State.CONFIRMED),
        ("keep_both", "inbox_confirm", [OLD_HOME, NEW_HOME], Proposal.State.CONFIRMED),
        ("", "inbox_reject", [OLD_HOME], Proposal.State.REJECTED),
    ],
)
def test_each_decision_from_the_inbox(client, turn, scope, user, decision, url_name, notes, state):
    _saved(turn, OLD_HOME)
    proposal = _propose(turn, NEW_HOME).proposal
    client.force_login(user)
    answer = client.post(
        reverse(url_name, args=[proposal.pk]), {"decision": decision}, HTTP_HX_REQUEST="true"
    )
    assert answer.status_code == 302
    assert [e.text for e in entries.machine_entries(_index(scope))] == notes
    proposal.refresh_from_db()
    assert proposal.state == state


def test_a_bad_decision_from_the_inbox_is_an_error_naming_the_field(client, turn, scope, user):
    _saved(turn, OLD_HOME)
    proposal = _propose(turn, NEW_HOME).proposal
    client.force_login(user)
    answer = client.post(
        reverse("inbox_confirm", args=[proposal.pk]), {"decision": "both"}, follow=True
    )
    assert "decision must be one of: replace, keep_both" in answer.content.decode()
    proposal.refresh_from_db()
    assert proposal.state == Proposal.State.PENDING


def test_rest_shows_the_conflict_and_confirms_with_the_decision(api, turn, scope):
    _saved(turn, OLD_HOME)
    proposal = _propose(turn, NEW_HOME).proposal
    (listed,) = api.get("/api/memory/proposals").json()
    assert listed["conflict"]["text"] == OLD_HOME and listed["conflict"]["kind"] == "topic"
    assert listed["conflict"]["date"] == proposal.conflict["date"]
    answer = api.post(f"/api/memory/proposals/{proposal.pk}/confirm", {"decision": "replace"})
    assert answer.status_code == 200, answer.content
    assert [e.text for e in entries.machine_entries(_index(scope))] == [NEW_HOME]


def test_rest_refuses_a_bad_decision_naming_the_field(api, turn):
    _saved(turn, OLD_HOME)
    proposal = _propose(turn, NEW_HOME).proposal
    answer = api.post(f"/api/memory/proposals/{proposal.pk}/confirm", {"decision": "merge"})
    assert answer.status_code == 422 and "decision" in json.dumps(answer.json())
    plain = _propose(turn, "- tea: likes green tea -> tea.md", message_ref="msg-3").proposal
    answer = api.post(f"/api/memory/proposals/{plain.pk}/confirm", {"decision": "replace"})
    assert answer.status_code == 400 and answer.json()["field"] == "decision"


def test_the_chat_card_shows_the_conflict_and_replace_works(client, user, scope, fake_openai):
    profile = AIProfileFactory(owner=user, base_url=fake_openai.base_url, is_default=True)
    conversation = Conversation.objects.create(owner=user, ai_profile=profile, title="Chat")
    answer = Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        content="Noted.",
        tool_calls=[{"id": "a", "name": "propose_change", "ok": True, "result": "Proposed"}],
    )
    turn = Turn(user=user, conversation_ref=str(conversation.pk), message_ref="old")
    _saved(turn, OLD_HOME)
    proposal = _propose(turn, NEW_HOME, message_ref=str(answer.pk)).proposal
    client.force_login(user)
    page = reverse("chat_conversation", args=[conversation.pk])
    html = client.get(page).content.decode()
    assert 'data-conflict="topic"' in html and 'data-decision="replace"' in html
    done = client.post(
        reverse("inbox_confirm", args=[proposal.pk]), {"decision": "replace", "next": page}
    )
    assert done.status_code == 302 and done["Location"] == page
    assert [e.text for e in entries.machine_entries(_index(scope))] == [NEW_HOME]
    assert ChangeSet.objects.filter(proposal=proposal).exists()


def test_the_model_hears_of_the_conflict_through_the_rest_tool_call(api, turn, user):
    _saved(turn, OLD_HOME)
    answer = api.post(
        "/api/memory/tools/call",
        {
            "turn": {"conversation_ref": "c", "message_ref": "m"},
            "name": "propose_change",
            "arguments": {"action": "add", "text": NEW_HOME},
        },
    )
    assert answer.status_code == 200, answer.content
    assert "may contradict a note saved on" in answer.json()["output"]
    assert Proposal.objects.get(user=user, message_ref="m").conflict["kind"] == "topic"


@pytest.mark.django_db(transaction=True)
def test_the_model_hears_of_the_conflict_through_mcp(live_asgi_server, user):
    _saved(Turn(user=user), OLD_HOME)
    token = api_token_create(user=user, name="mcp")[1]
    [(ok, answer)] = mcp(
        live_asgi_server, token, [("propose_change", {"action": "add", "text": NEW_HOME})]
    )
    assert ok and "may contradict a note saved on" in answer and "lives in Rome" in answer
    assert Proposal.objects.get(user=user, state=Proposal.State.PENDING).conflict["kind"] == "topic"


def test_a_chat_turn_flags_the_conflict_and_its_card_offers_the_decisions(
    client, user, fake_openai
):
    profile = AIProfileFactory(owner=user, base_url=fake_openai.base_url, is_default=True)
    conversation = Conversation.objects.create(owner=user, ai_profile=profile, title="Chat")
    _saved(Turn(user=user), OLD_HOME)
    Message.objects.create(conversation=conversation, role=Message.Role.USER, content="I moved")
    answer = Message.objects.create(
        conversation=conversation, role=Message.Role.ASSISTANT, state=Message.State.STREAMING
    )
    arguments = json.dumps({"action": "add", "text": NEW_HOME})
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "a", "name": "propose_change", "arguments": arguments}]},
        {"content": "Noted."},
    ]
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    assert "may contradict a note saved on" in answer.tool_calls[0]["result"]
    client.force_login(user)
    html = client.get(reverse("chat_conversation", args=[conversation.pk])).content.decode()
    assert 'data-conflict="topic"' in html and "lives in Rome" in html
    assert 'data-decision="keep_both"' in html and 'data-decision="discard"' in html


def test_an_edit_that_names_what_it_changes_is_not_a_conflict(turn, scope, user):
    _machine_topic(turn, "Rome\n")
    rewrite = {"action": "write_topic", "topic": "home.md", "topic_content": "Milan\n"}
    assert memory_change_request(turn=turn, operation=rewrite).proposal.conflict is None
