"""The triage card (M20) against the scripted model: the estimate, the card, Proceed, the
sweep, the Permanent rule and who gets no estimate at all."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Membership
from accounts.services import messaging_binding_create
from addons.services import addon_setting_put
from chat.models import Conversation, Message
from chat.prompt import PLAN_HEADING
from chat.runner import turn_run
from host.errors import ChangeRefused, NotAllowed, ProposalClosed, SecretRefused
from learning.core.triage import INSTRUCTION
from learning.models import RuleSuggestion, TriageCard
from learning.services import triage
from memory_addon.models import ChangeSet, MemoryFile
from tests.factories import AgentFactory, OrganizationFactory

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = "Move all my notes about the garden into a new project and tidy them up."


def judgement(*, complex_: bool = True) -> str:
    return json.dumps(
        {
            "complex": complex_,
            "reasons": ["Touches many notes", "Needs a new folder"],
            "options": [
                {
                    "title": "Ask first, then move",
                    "summary": "List the notes and confirm before moving.",
                    "feasibility": "medium",
                    "recommended": False,
                    "steps": ["List notes", "Confirm"],
                },
                {
                    "title": "Move in one go",
                    "summary": "Propose one change set with every move.",
                    "feasibility": "high",
                    "recommended": True,
                    "risks": ["A wrong note moves too"],
                    "prerequisites": ["Memory is on"],
                    "steps": ["Find garden notes", "Propose the moves"],
                    "alternatives": ["Do it by hand on the Memory page"],
                },
            ],
        }
    )


@pytest.fixture
def agent(person):
    return AgentFactory(owner=person, name="Gardener", memory_allowed=True, may_propose=True)


@pytest.fixture
def chat(conversation, agent) -> Conversation:
    conversation.agent = agent
    conversation.save(update_fields=["agent"])
    return conversation


@pytest.fixture
def queued(monkeypatch) -> list[tuple[object, ...]]:
    """The jobs triage queues, kept for the test to run (it plays the worker)."""
    jobs: list[tuple[object, ...]] = []
    monkeypatch.setattr(triage, "queue_job_on_commit", lambda *args, **_: jobs.append(args))
    return jobs


def set_mode(person, mode: str) -> None:
    person.estimate_complexity = mode
    person.save(update_fields=["estimate_complexity"])


def run(answer: Message) -> Message:
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    return answer


def parked(fake_openai, person, ask, chat, *, mode="automatic") -> tuple[Message, TriageCard]:
    set_mode(person, mode)
    fake_openai.chat_replies.append({"content": judgement()})
    answer = run(ask(REQUEST, chat))
    return answer, TriageCard.objects.get(answer=answer)


def test_automatic_parks_a_complex_request_under_a_card_with_the_recommended_option_first(
    fake_openai, person, ask, chat, client
):
    answer, card = parked(fake_openai, person, ask, chat)
    assert answer.state == Message.State.STREAMING and answer.content == ""
    assert card.state == TriageCard.State.WAITING and card.looks_complex
    assert [o["title"] for o in card.options] == ["Move in one go", "Ask first, then move"]
    assert len(fake_openai.chat_requests) == 1  # only the estimate so far
    sent = fake_openai.chat_requests[0]
    assert sent["messages"][0]["content"].startswith(INSTRUCTION)
    assert sent["messages"][-1] == {"role": "user", "content": REQUEST}
    assert "tools" not in sent
    client.force_login(person)
    page = client.get(f"/chat/{chat.pk}/").content.decode()
    assert f'id="triage-card-{card.pk}"' in page
    assert "Looks complex" in page and "Proceed with selection" in page
    assert "My own idea" in page and 'name="rule_target"' in page


def test_automatic_runs_a_simple_request_as_asked_without_a_card(
    fake_openai, person, ask, chat, client
):
    set_mode(person, "automatic")
    fake_openai.chat_replies += [{"content": judgement(complex_=False)}, {"content": "Done."}]
    answer = run(ask(REQUEST, chat))
    assert answer.state == Message.State.COMPLETE and answer.content == "Done."
    assert TriageCard.objects.get(answer=answer).state == TriageCard.State.SIMPLE
    assert fake_openai.chat_requests[-1]["messages"][-1] == {"role": "user", "content": REQUEST}
    client.force_login(person)
    assert "triage-card" not in client.get(f"/chat/{chat.pk}/").content.decode()


def test_always_shows_the_card_for_a_simple_request_too(fake_openai, person, ask, chat):
    set_mode(person, "always")
    fake_openai.chat_replies.append({"content": judgement(complex_=False)})
    answer = run(ask(REQUEST, chat))
    card = TriageCard.objects.get(answer=answer)
    assert card.state == TriageCard.State.WAITING and not card.looks_complex
    assert answer.state == Message.State.STREAMING


def test_proceed_with_an_option_runs_the_turn_with_that_option_as_its_plan(
    fake_openai, person, ask, chat, queued
):
    answer, card = parked(fake_openai, person, ask, chat)
    triage.triage_proceed(user=person, card=card, choice="0")
    assert queued == [("chat.turn_run", answer.pk)]
    fake_openai.chat_replies.append({"content": "Moved."})
    answer = run(answer)
    assert answer.state == Message.State.COMPLETE and answer.content == "Moved."
    assert len(fake_openai.chat_requests) == 2  # no second estimate
    messages = fake_openai.chat_requests[-1]["messages"]
    assert messages[-2] == {"role": "user", "content": REQUEST}
    assert messages[-1]["role"] == "user"
    assert messages[-1]["content"].startswith(PLAN_HEADING)
    assert "Move in one go" in messages[-1]["content"]
    assert "1. Find garden notes" in messages[-1]["content"]
    assert all(PLAN_HEADING not in m["content"] for m in messages if m["role"] == "system")
    assert answer.sent_along["plan"].startswith("Move in one go")


def test_proceed_with_my_own_idea_sends_the_idea_as_the_plan(
    fake_openai, person, ask, chat, queued
):
    answer, card = parked(fake_openai, person, ask, chat)
    triage.triage_proceed(
        user=person, card=card, choice="own", own_idea="Only move notes tagged #garden."
    )
    card.refresh_from_db()
    assert card.state == TriageCard.State.PROCEEDED and card.chosen == -1
    run(answer)
    last = fake_openai.chat_requests[-1]["messages"][-1]
    assert last == {
        "role": "user",
        "content": f"{PLAN_HEADING}\n\nOnly move notes tagged #garden.",
    }


@pytest.mark.parametrize(
    ("choice", "idea", "field"),
    [("own", "   ", "My own idea"), ("7", "", "Option"), ("-1", "", "Option"), ("x", "", "Option")],
)
def test_proceed_refuses_a_missing_idea_or_an_unknown_option_naming_the_field(
    fake_openai, person, ask, chat, queued, choice, idea, field
):
    _, card = parked(fake_openai, person, ask, chat)
    with pytest.raises(ChangeRefused, match=field):
        triage.triage_proceed(user=person, card=card, choice=choice, own_idea=idea)
    card.refresh_from_db()
    assert card.state == TriageCard.State.WAITING and queued == []


def test_a_card_without_an_answer_in_time_runs_the_turn_as_asked_when_the_sweep_comes(
    fake_openai, person, ask, chat, queued
):
    answer, card = parked(fake_openai, person, ask, chat)
    assert triage.triage_sweep() == 0  # still within its wait
    TriageCard.objects.filter(pk=card.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert triage.triage_sweep() == 1
    assert queued == [("chat.turn_run", answer.pk)]
    card.refresh_from_db()
    assert card.state == TriageCard.State.EXPIRED
    fake_openai.chat_replies.append({"content": "As asked."})
    answer = run(answer)
    assert answer.content == "As asked."
    assert fake_openai.chat_requests[-1]["messages"][-1] == {"role": "user", "content": REQUEST}
    with pytest.raises(ProposalClosed):
        triage.triage_proceed(user=person, card=card, choice="0")


def test_the_reaper_leaves_a_parked_answer_alone_while_its_card_waits(
    fake_openai, person, ask, chat, settings
):
    from chat.runner import messages_reap_stalled

    answer, _ = parked(fake_openai, person, ask, chat)
    assert messages_reap_stalled() == 0
    answer.refresh_from_db()
    assert answer.state == Message.State.STREAMING


@pytest.mark.parametrize(
    "reply",
    [
        {"status": 500, "message": "boom"},
        {"content": "Sure! It is complex."},
        {"content": json.dumps({"complex": True, "options": []})},
    ],
    ids=["model error", "not json", "no options"],
)
def test_a_failed_or_unusable_estimate_runs_the_turn_as_asked_and_says_so_in_one_line(
    fake_openai, person, ask, chat, client, reply
):
    set_mode(person, "always")
    fake_openai.chat_replies += [reply, {"content": "Answered."}]
    answer = run(ask(REQUEST, chat))
    assert answer.state == Message.State.COMPLETE and answer.content == "Answered."
    card = TriageCard.objects.get(answer=answer)
    assert card.state == TriageCard.State.FAILED and card.notice
    client.force_login(person)
    page = client.get(f"/chat/{chat.pk}/").content.decode()
    assert page.count("The complexity estimate failed, so the request ran as asked.") == 1


def _eligibility(case: str, person, chat, agent) -> None:
    if case == "scheduled":
        chat.run_kind = "scheduled"
    elif case == "background":
        chat.run_kind = "background"
    elif case == "bridge":
        chat.binding, _ = messaging_binding_create(
            owner=person, bridge="telegram", external_id="chat-1"
        )
    elif case == "planning off":
        agent.planning = False
        agent.save(update_fields=["planning"])
    elif case == "no agent":
        chat.agent = None
    elif case == "setting off":
        set_mode(person, "off")
    chat.save()


def _answers_a_card(answer: Message) -> Message:
    """An answer that resumes after a card (M19 parks a turn mid-run): it already ran."""
    answer.tool_calls = [{"round": 1, "id": "q1", "name": "ask_person", "ok": True}]
    answer.save(update_fields=["tool_calls"])
    return answer


@pytest.mark.parametrize(
    "case",
    [
        "scheduled",
        "background",
        "bridge",
        "planning off",
        "no agent",
        "setting off",
        "answers a card",
    ],
)
def test_turns_that_are_not_eligible_make_no_estimate_call(
    fake_openai, person, ask, chat, agent, case
):
    set_mode(person, "always")
    _eligibility(case, person, chat, agent)
    answer = ask(REQUEST, chat)
    if case == "answers a card":
        _answers_a_card(answer)
    answer = run(answer)
    assert answer.state == Message.State.COMPLETE
    assert len(fake_openai.chat_requests) == 1
    assert not fake_openai.chat_requests[0]["messages"][0]["content"].startswith(INSTRUCTION)
    assert not TriageCard.objects.exists()


def test_the_turn_a_card_queued_again_makes_no_second_estimate_call(
    fake_openai, person, ask, chat, queued
):
    answer, card = parked(fake_openai, person, ask, chat)
    triage.triage_proceed(user=person, card=card, choice="1")
    run(answer)
    assert len(fake_openai.chat_requests) == 2
    assert not fake_openai.chat_requests[1]["messages"][0]["content"].startswith(INSTRUCTION)


def index_text(user) -> str:
    row = MemoryFile.objects.filter(scope__owner=user, scope__kind="user", path="index.md").first()
    return row.content if row else ""


def test_a_permanent_rule_is_saved_on_proceed_as_one_undoable_change_set_in_the_audit(
    fake_openai, person, ask, chat, queued
):
    _, card = parked(fake_openai, person, ask, chat)
    assert index_text(person) == ""  # nothing before Proceed
    triage.triage_proceed(
        user=person,
        card=card,
        choice="0",
        rule_text="Always ask before moving notes.",
        rule_target="user",
    )
    card.refresh_from_db()
    assert card.rule is not None and card.rule.state == RuleSuggestion.State.SAVED
    assert "Always ask before moving notes." in index_text(person)
    change_set = ChangeSet.objects.get(pk=card.rule.change_set_id)
    assert change_set.user_id == person.pk
    from learning.services.rules import rule_undo

    rule_undo(user=person, suggestion=card.rule)
    assert "Always ask before moving notes." not in index_text(person)


def _refuse(how: str, person, settings) -> None:
    if how == "save mode never":
        addon_setting_put(user=person, addon="memory", key="save-mode", value="never")
    elif how == "kill switch":
        settings.MEMORY_AI_MEMORY = "off"
    else:
        organization = OrganizationFactory(learning_enabled=False)
        Membership.objects.create(organization=organization, user=person)


@pytest.mark.parametrize("how", ["save mode never", "kill switch", "organization policy"])
def test_a_permanent_rule_is_refused_and_the_card_stays_open(
    fake_openai, person, ask, chat, queued, settings, how
):
    _, card = parked(fake_openai, person, ask, chat)
    _refuse(how, person, settings)
    with pytest.raises(NotAllowed):
        triage.triage_proceed(
            user=person, card=card, choice="0", rule_text="Always ask before moving notes."
        )
    card.refresh_from_db()
    assert card.state == TriageCard.State.WAITING and queued == []
    assert index_text(person) == "" and not ChangeSet.objects.exists()


def test_a_permanent_rule_with_a_secret_keeps_the_card_open_naming_the_line(
    fake_openai, person, ask, chat, queued, client
):
    _, card = parked(fake_openai, person, ask, chat)
    secret = "db_password=Xk9#mQ2!vL7p"
    with pytest.raises(SecretRefused, match="Line 1"):
        triage.triage_proceed(user=person, card=card, choice="0", rule_text=secret)
    card.refresh_from_db()
    assert card.state == TriageCard.State.WAITING and queued == []
    client.force_login(person)
    response = client.post(
        f"/learning/triage/{card.pk}/proceed/",
        {"choice": "0", "rule_text": secret},
        follow=True,
    )
    page = response.content.decode()
    assert "Line 1" in page and f'id="triage-card-{card.pk}"' in page


def test_proceed_through_the_page_form_queues_the_turn_with_the_chosen_plan(
    fake_openai, person, ask, chat, queued, client
):
    answer, card = parked(fake_openai, person, ask, chat)
    client.force_login(person)
    response = client.post(f"/learning/triage/{card.pk}/proceed/", {"choice": "1"})
    assert response.status_code == 302
    card.refresh_from_db()
    assert card.state == TriageCard.State.PROCEEDED
    assert card.plan.startswith("Ask first, then move")
    assert queued == [("chat.turn_run", answer.pk)]


def test_another_persons_card_is_not_found(fake_openai, person, ask, chat, client, queued):
    from tests.factories import UserFactory

    _, card = parked(fake_openai, person, ask, chat)
    client.force_login(UserFactory())
    assert client.post(f"/learning/triage/{card.pk}/proceed/", {"choice": "0"}).status_code == 404
    card.refresh_from_db()
    assert card.state == TriageCard.State.WAITING


def test_a_waiting_card_is_listed_in_the_inbox_until_it_is_answered(
    fake_openai, person, ask, chat, queued, client
):
    _, card = parked(fake_openai, person, ask, chat)
    client.force_login(person)
    inbox = client.get("/inbox/").content.decode()
    assert "A triage card waits in “Test chat”." in inbox
    assert f"/chat/{chat.pk}/#triage-card-{card.pk}" in inbox
    triage.triage_proceed(user=person, card=card, choice="0")
    assert "A triage card waits" not in client.get("/inbox/").content.decode()


def test_the_estimate_leaves_masked_like_every_model_call(fake_openai, person, ask, chat, profile):
    profile.api_key = "kw-stored-profile-key-7319"
    profile.save(update_fields=["api_key_encrypted"])
    set_mode(person, "always")
    fake_openai.chat_replies.append({"content": judgement()})
    run(ask(f"db_password=Zq8vLm2xR4 and my key kw-stored-profile-key-7319. {REQUEST}", chat))
    sent = json.dumps(fake_openai.chat_requests[0], ensure_ascii=False)
    assert fake_openai.chat_requests[0]["messages"][0]["content"].startswith(INSTRUCTION)
    assert "Zq8vLm2xR4" not in sent and "kw-stored-profile-key-7319" not in sent
    assert "[masked]" in sent


@pytest.mark.parametrize("entry", ["REST", "page form"])
def test_a_message_sent_through_any_entry_point_is_estimated_before_its_turn(
    fake_openai, person, chat, client, monkeypatch, entry
):
    from chat import services as chat_services

    sent: list[Message] = []
    monkeypatch.setattr(chat_services, "_enqueue_on_commit", sent.append)
    set_mode(person, "always")
    client.force_login(person)
    if entry == "REST":
        response = client.post(
            f"/api/chat/conversations/{chat.pk}/messages",
            {"text": REQUEST},
            content_type="application/json",
        )
        assert response.status_code == 202
    else:
        response = client.post(f"/chat/{chat.pk}/send/", {"text": REQUEST})
        assert response.status_code in (200, 302)
    fake_openai.chat_replies.append({"content": judgement()})
    answer = run(sent[0])
    assert answer.state == Message.State.STREAMING
    assert TriageCard.objects.get(answer=answer).state == TriageCard.State.WAITING


def test_stop_on_a_parked_answer_ends_it_as_stopped_at_the_next_sweep(
    fake_openai, person, ask, chat, queued
):
    from chat.services import message_stop

    answer, card = parked(fake_openai, person, ask, chat)
    message_stop(message=answer)
    assert triage.triage_sweep() == 1
    assert queued == []  # no turn: the answer ends here
    answer.refresh_from_db()
    assert answer.state == Message.State.STOPPED
    card.refresh_from_db()
    assert card.state == TriageCard.State.STOPPED
    assert len(fake_openai.chat_requests) == 1  # only the estimate


def test_the_models_texts_on_the_card_are_shown_escaped(fake_openai, person, ask, chat, client):
    set_mode(person, "always")
    hostile = json.loads(judgement())
    hostile["reasons"] = ["<script>alert(1)</script>"]
    hostile["options"][1]["title"] = '<img src=x onerror="alert(2)">'
    fake_openai.chat_replies.append({"content": json.dumps(hostile)})
    run(ask(REQUEST, chat))
    client.force_login(person)
    page = client.get(f"/chat/{chat.pk}/").content.decode()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "&lt;img src=x" in page
