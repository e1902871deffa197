"""Rule learning (M13) against the fake model server: the check, the job, limits and the card."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Membership
from addons.services import addon_setting_put
from chat.models import Conversation, Message
from chat.runner import turn_run
from host.errors import Refusal, SecretRefused
from learning.core.detection import SYSTEM
from learning.models import LearningDay, RuleSuggestion
from learning.selectors import rule_cards_for
from learning.services import rules
from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_agent_scope, ensure_user_scope
from tests.factories import AgentFactory, OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db

RULE = "From now on, answer me in British English."


def rule_reply(text: str = "Answer in British English.", target: str = "user") -> dict:
    return {"content": json.dumps({"rule": text, "target": target})}


def detect(answer_id: int, callbacks) -> RuleSuggestion | None:
    """The after-answer check, then its queued job run right here (as the worker would)."""
    with callbacks(execute=False) as queued:
        suggestion = rules.rule_check_after_answer(answer_id=answer_id)
    if suggestion is None:
        assert not queued
        return None
    assert len(queued) == 1
    rules.rule_detect(suggestion_id=suggestion.pk)
    suggestion.refresh_from_db()
    return suggestion


def index_text(user) -> str:
    row = MemoryFile.objects.filter(scope__owner=user, scope__kind="user", path="index.md").first()
    return row.content if row else ""


def test_a_finished_turn_checks_the_message_and_queues_one_detection(
    fake_openai, ask, django_capture_on_commit_callbacks
):
    answer = ask(RULE)
    fake_openai.chat_replies.append({"content": "Righto."})
    with django_capture_on_commit_callbacks(execute=False) as queued:
        turn_run(message_id=answer.pk)
    suggestion = RuleSuggestion.objects.get(answer=answer)
    assert suggestion.state == RuleSuggestion.State.DETECTING
    assert suggestion.cue == "from now on"
    assert len(queued) >= 1
    assert len(fake_openai.chat_requests) == 1  # only the answer itself so far


def test_detection_sends_only_the_masked_message_and_shows_a_card(
    fake_openai, person, answered, django_capture_on_commit_callbacks
):
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="I live in Rome and keep bees.\n",
        base_sha256=None,
    )
    _, answer = answered(RULE)
    fake_openai.chat_replies.append(rule_reply())
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    assert suggestion.state == RuleSuggestion.State.PENDING
    assert suggestion.text == "Answer in British English."
    [request] = fake_openai.chat_requests
    assert "tools" not in request
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert request["messages"][0]["content"] == SYSTEM
    assert RULE in request["messages"][1]["content"]
    assert "Rome" not in json.dumps(request)  # no memory goes with it
    assert rule_cards_for(person.pk, [answer.pk])[answer.pk][0].suggestion == suggestion
    assert LearningDay.objects.get(user=person).cards == 1


def test_a_message_with_a_secret_never_leaves(
    fake_openai, answered, django_capture_on_commit_callbacks
):
    _, answer = answered("From now on log in with the password Sonnenblume-42-Hut please.")
    assert detect(answer.pk, django_capture_on_commit_callbacks) is None
    assert fake_openai.chat_requests == []
    assert not RuleSuggestion.objects.exists()


def test_password_cues_are_masked_even_if_the_job_runs(
    fake_openai, person, conversation, django_capture_on_commit_callbacks
):
    # A row queued before the message changed its mind: the job re-checks and sends nothing.
    question = Message.objects.create(
        conversation=conversation, role="user", content="From now on use tabs."
    )
    answer = Message.objects.create(conversation=conversation, role="assistant", state="complete")
    suggestion = RuleSuggestion.objects.create(
        user=person,
        conversation=conversation,
        user_message=question,
        answer=answer,
        origin="detected",
        state="detecting",
    )
    Message.objects.filter(pk=question.pk).update(
        content="From now on: my password is Sonnenblume-42-Hut"
    )
    assert rules.rule_detect(suggestion_id=suggestion.pk) == RuleSuggestion.State.DROPPED
    assert fake_openai.chat_requests == []


def test_at_most_ten_calls_per_day(fake_openai, answered, django_capture_on_commit_callbacks):
    fake_openai.chat_replies += [{"content": '{"rule": null}'}] * 12
    for number in range(11):
        _, answer = answered(f"From now on use rule number {number}.")
        detect(answer.pk, django_capture_on_commit_callbacks)
    assert len(fake_openai.chat_requests) == 10
    assert RuleSuggestion.objects.count() == 10
    assert set(RuleSuggestion.objects.values_list("state", flat=True)) == {"no_rule"}


def test_at_most_three_cards_per_day(fake_openai, answered, django_capture_on_commit_callbacks):
    fake_openai.chat_replies += [rule_reply(f"Rule {n}.") for n in range(4)]
    states = []
    for number in range(4):
        _, answer = answered(f"Going forward, follow rule {number}.")
        states.append(detect(answer.pk, django_capture_on_commit_callbacks).state)
    assert states == ["pending", "pending", "pending", "dropped"]
    assert LearningDay.objects.get().cards == 3


def test_one_card_per_answer_and_no_second_detection_for_a_message(
    fake_openai, conversation, answered, django_capture_on_commit_callbacks
):
    _, answer = answered(RULE)
    fake_openai.chat_replies += [rule_reply(), rule_reply()]
    assert detect(answer.pk, django_capture_on_commit_callbacks).state == "pending"
    assert detect(answer.pk, django_capture_on_commit_callbacks) is None
    regenerated = Message.objects.create(
        conversation=conversation, role="assistant", state="complete", content="Again."
    )
    Message.objects.filter(pk=answer.pk).delete()
    assert detect(regenerated.pk, django_capture_on_commit_callbacks) is None
    assert len(fake_openai.chat_requests) == 1


def test_a_rejected_rule_is_not_suggested_again_for_the_same_message(
    fake_openai, person, conversation, answered, django_capture_on_commit_callbacks
):
    _, answer = answered(RULE)
    fake_openai.chat_replies += [rule_reply(), rule_reply()]
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    rules.rule_never(user=person, suggestion=suggestion)
    again = Message.objects.create(conversation=conversation, role="assistant", state="complete")
    assert detect(again.pk, django_capture_on_commit_callbacks) is None
    assert len(fake_openai.chat_requests) == 1
    assert rule_cards_for(person.pk, [answer.pk, again.pk]) == {}


def test_not_now_hides_the_card_for_seven_days(
    fake_openai, person, answered, django_capture_on_commit_callbacks
):
    _, answer = answered(RULE)
    fake_openai.chat_replies.append(rule_reply())
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    rules.rule_postpone(user=person, suggestion=suggestion)
    assert rule_cards_for(person.pk, [answer.pk]) == {}
    suggestion.refresh_from_db()
    assert suggestion.ask_again_at - timezone.now() > timedelta(days=6, hours=23)
    RuleSuggestion.objects.filter(pk=suggestion.pk).update(ask_again_at=timezone.now())
    assert rule_cards_for(person.pk, [answer.pk])[answer.pk][0].pk == suggestion.pk


@pytest.mark.parametrize(
    "reply",
    [
        {"content": "Sure! The rule is: use British English."},
        {"content": '{"rule": 42}'},
        {"content": '{"rule": "x", "target": "everyone"}'},
        {"content": json.dumps({"rule": "y" * 301})},
        {"content": '["rule"]'},
        {"status": 500},
        {"malformed_after": 1, "content": "a b c"},
    ],
)
def test_a_malformed_detection_reply_changes_nothing(
    fake_openai, person, answered, django_capture_on_commit_callbacks, reply
):
    _, answer = answered(RULE)
    fake_openai.chat_replies.append(reply)
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    assert suggestion.state == RuleSuggestion.State.DROPPED
    assert suggestion.reason
    assert rule_cards_for(person.pk, [answer.pk]) == {}
    assert not ChangeSet.objects.exists()
    assert LearningDay.objects.get(user=person).cards == 0


def test_a_slow_detection_is_dropped_at_its_limit(
    fake_openai, person, answered, settings, django_capture_on_commit_callbacks
):
    settings.LEARNING_DETECT_TIMEOUT_SECONDS = 1
    _, answer = answered(RULE)
    fake_openai.chat_replies.append({**rule_reply(), "stall": 30})
    started = time.monotonic()
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    assert time.monotonic() - started < 10
    assert suggestion.state == RuleSuggestion.State.DROPPED
    assert "longer than 1 seconds" in suggestion.reason or "failed" in suggestion.reason
    assert rule_cards_for(person.pk, [answer.pk]) == {}
    assert not ChangeSet.objects.exists()


def test_organization_learning_off_and_the_kill_switch_stop_everything(
    fake_openai, person, conversation, answered, settings, django_capture_on_commit_callbacks
):
    organization = OrganizationFactory(learning_enabled=False)
    Membership.objects.create(organization=organization, user=person)
    _, answer = answered(RULE)
    assert detect(answer.pk, django_capture_on_commit_callbacks) is None
    assert "turned rule learning off" in rules.learning_off_reason(person, conversation)
    question = Message.objects.filter(role="user").first()
    with pytest.raises(Refusal, match="rule learning off"):
        rules.rule_remember(user=person, message=question, text="Use tabs.")
    Membership.objects.all().delete()
    settings.MEMORY_AI_MEMORY = "off"
    assert "MEMORY_AI_MEMORY=off" in rules.learning_off_reason(person, conversation)
    assert detect(answer.pk, django_capture_on_commit_callbacks) is None
    assert fake_openai.chat_requests == []


def test_save_writes_the_edited_rule_and_undo_within_30_seconds_removes_it(
    fake_openai, person, answered, django_capture_on_commit_callbacks
):
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="Mine.\n",
        base_sha256=None,
    )
    before = index_text(person)
    _, answer = answered(RULE)
    fake_openai.chat_replies.append(rule_reply())
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    saved = rules.rule_save(user=person, suggestion=suggestion, text="Write in British English.")
    assert saved.state == "saved"
    assert "Write in British English." in index_text(person)
    assert "origin=learning" in index_text(person)
    assert saved.change_set.source == ChangeSet.Source.LEARNING
    rules.rule_undo(user=person, suggestion=saved)
    assert index_text(person) == before
    saved.refresh_from_db()
    assert saved.state == "undone"


def test_undo_is_refused_after_30_seconds(
    fake_openai, person, answered, django_capture_on_commit_callbacks
):
    _, answer = answered(RULE)
    fake_openai.chat_replies.append(rule_reply())
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    saved = rules.rule_save(user=person, suggestion=suggestion, text=suggestion.text)
    RuleSuggestion.objects.filter(pk=saved.pk).update(
        saved_at=timezone.now() - timedelta(seconds=31)
    )
    saved.refresh_from_db()
    with pytest.raises(Refusal, match="30 seconds"):
        rules.rule_undo(user=person, suggestion=saved)
    assert "British English" in index_text(person)


def test_an_edited_rule_with_a_secret_or_over_300_characters_is_refused(
    fake_openai, person, answered, django_capture_on_commit_callbacks
):
    _, answer = answered(RULE)
    fake_openai.chat_replies.append(rule_reply())
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    with pytest.raises(SecretRefused):
        rules.rule_save(user=person, suggestion=suggestion, text="db_password=Xk9#mQ2!vL7p")
    with pytest.raises(Refusal, match="at most 300"):
        rules.rule_save(user=person, suggestion=suggestion, text="x" * 301)
    suggestion.refresh_from_db()
    assert suggestion.state == "pending"
    assert index_text(person) == ""


def test_a_rule_about_the_agent_saves_into_the_agents_memory(
    fake_openai, person, profile, django_capture_on_commit_callbacks
):
    agent = AgentFactory(owner=person, memory_allowed=True)
    conv = Conversation.objects.create(owner=person, ai_profile=profile, agent=agent)
    Message.objects.create(conversation=conv, role="user", content=RULE)
    answer = Message.objects.create(conversation=conv, role="assistant", state="complete")
    fake_openai.chat_replies.append(rule_reply(target="agent"))
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    [card] = rule_cards_for(person.pk, [answer.pk])[answer.pk]
    assert card.file == f"Memory/agents/{agent.slug}/index.md"
    rules.rule_save(user=person, suggestion=suggestion, text=suggestion.text)
    assert "British English" in MemoryFile.objects.get(scope=ensure_agent_scope(agent)).content
    assert index_text(person) == ""


def test_a_rule_in_an_agents_chat_that_does_not_name_it_goes_to_the_persons_memory(
    fake_openai, person, profile, django_capture_on_commit_callbacks
):
    agent = AgentFactory(owner=person, memory_allowed=True)
    conv = Conversation.objects.create(owner=person, ai_profile=profile, agent=agent)
    Message.objects.create(conversation=conv, role="user", content=RULE)
    answer = Message.objects.create(conversation=conv, role="assistant", state="complete")
    fake_openai.chat_replies.append(rule_reply())
    suggestion = detect(answer.pk, django_capture_on_commit_callbacks)
    rules.rule_save(user=person, suggestion=suggestion, text=suggestion.text)
    assert "British English" in index_text(person)
    assert not MemoryFile.objects.filter(scope=ensure_agent_scope(agent)).exists()


def test_remember_as_rule_saves_with_no_ai_call(fake_openai, person, answered):
    question, _ = answered("I like short answers.")
    saved = rules.rule_remember(user=person, message=question, text="Keep answers short.")
    assert saved.origin == "manual"
    assert "Keep answers short." in index_text(person)
    assert fake_openai.chat_requests == []
    other = UserFactory()
    with pytest.raises(Refusal):
        rules.rule_remember(user=other, message=question, text="Mine now.")


def _switch_off(how: str, person, settings) -> None:
    if how == "save mode never":
        addon_setting_put(user=person, addon="memory", key="save-mode", value="never")
    elif how == "learning switch off":
        addon_setting_put(user=person, addon="memory", key="learning", value="off")
    else:
        settings.MEMORY_AI_MEMORY = "off"


@pytest.mark.parametrize("how", ["save mode never", "learning switch off", "kill switch"])
def test_never_and_the_kill_switch_look_for_no_rule_and_silence_waiting_cards(
    fake_openai,
    person,
    conversation,
    answered,
    client,
    settings,
    how,
    django_capture_on_commit_callbacks,
):
    question, earlier = answered("From now on use tabs.")
    waiting = RuleSuggestion.objects.create(
        user=person,
        conversation=conversation,
        user_message=question,
        answer=earlier,
        origin="detected",
        state="pending",
        text="Use tabs.",
    )
    _switch_off(how, person, settings)
    _, answer = answered(RULE)
    assert detect(answer.pk, django_capture_on_commit_callbacks) is None
    assert fake_openai.chat_requests == []
    client.force_login(person)
    page = client.get(f"/chat/{conversation.pk}/").content.decode()
    assert f'id="rule-card-{waiting.pk}"' not in page
    with pytest.raises(Refusal):
        rules.rule_save(user=person, suggestion=waiting, text="Use tabs.")
    assert index_text(person) == ""


def test_a_detection_queued_before_never_was_chosen_is_dropped_without_a_call(
    fake_openai, person, answered, django_capture_on_commit_callbacks
):
    _, answer = answered(RULE)
    with django_capture_on_commit_callbacks(execute=False):
        suggestion = rules.rule_check_after_answer(answer_id=answer.pk)
    addon_setting_put(user=person, addon="memory", key="save-mode", value="never")
    assert rules.rule_detect(suggestion_id=suggestion.pk) == RuleSuggestion.State.DROPPED
    assert fake_openai.chat_requests == []


def test_with_never_the_person_can_still_remember_their_own_message_as_a_rule(
    fake_openai, person, answered
):
    addon_setting_put(user=person, addon="memory", key="save-mode", value="never")
    question, _ = answered(RULE)
    rules.rule_remember(user=person, message=question, text="Answer in British English.")
    assert "Answer in British English." in index_text(person)
    assert fake_openai.chat_requests == []
