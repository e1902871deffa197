"""No rule is learned or saved in a temporary chat (M22): no detection, no card, and every
form that would save a rule (Remember as rule, a rule card's Save, the question and triage
cards' Permanent rule) is refused with one clear message, from the page and from REST."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat import services
from chat.models import Conversation, Question
from learning.models import RuleSuggestion, TriageCard
from learning.services import rules
from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.turns import TEMPORARY_REFUSAL
from tests.conftest import Api
from tests.factories import AgentFactory
from tests.learning.test_question_rules import waiting_question
from tests.learning.test_triage import parked

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("unconsumed_chat_queue"),
]

RULE = "From now on, answer me in British English."


@pytest.fixture
def temporary(person, profile) -> Conversation:
    agent = AgentFactory(owner=person, name="Gardener", memory_allowed=True, may_propose=True)
    return services.conversation_create(user=person, agent_id=agent.pk, temporary=True)


def nothing_saved(person) -> bool:
    return not (
        ChangeSet.objects.filter(user=person).exists()
        or MemoryFile.objects.filter(scope__owner=person).exists()
        or RuleSuggestion.objects.filter(user=person, state=RuleSuggestion.State.SAVED).exists()
    )


def test_no_rule_is_looked_for_after_an_answer(fake_openai, person, temporary, answered):
    _, answer = answered(RULE, temporary)
    assert rules.rule_check_after_answer(answer_id=answer.pk) is None
    assert not RuleSuggestion.objects.exists() and fake_openai.chat_requests == []
    assert rules.learning_off_reason(person, temporary) == TEMPORARY_REFUSAL


def _remember(client, temporary, answered) -> tuple[object, Conversation]:
    question, _ = answered(RULE, temporary)
    url = reverse("learning_remember", args=[question.pk])
    return client.post(url, {"text": "Use British English."}, follow=True), temporary


def _rule_card(client, temporary, answered) -> tuple[object, Conversation]:
    # A card cannot appear in a temporary chat; one made anyway is not saved either.
    question, answer = answered(RULE, temporary)
    card = RuleSuggestion.objects.create(
        user=temporary.owner,
        conversation=temporary,
        user_message=question,
        answer=answer,
        origin=RuleSuggestion.Origin.DETECTED,
        state=RuleSuggestion.State.PENDING,
        text="Use British English.",
    )
    url = reverse("learning_rule_save", args=[card.pk])
    return client.post(url, {"text": card.text}, follow=True), temporary


def _question_rule(client, temporary, answered) -> tuple[object, Conversation]:
    question = waiting_question(temporary)
    url = reverse("chat_question_answer", args=[question.pk])
    data = {"choice": "Train", "rule": "Always plan trips by train.", "save_to": "user"}
    return client.post(url, data, HTTP_HX_REQUEST="true"), temporary


@pytest.mark.parametrize("path", [_remember, _rule_card, _question_rule])
def test_every_rule_form_is_refused_with_the_temporary_message(
    client, person, temporary, answered, path
):
    client.force_login(person)
    response, _ = path(client, temporary, answered)
    assert response.status_code == 200
    assert TEMPORARY_REFUSAL in response.content.decode()
    assert nothing_saved(person)


def test_a_questions_rule_over_rest_is_refused_naming_the_field(client, person, temporary):
    client.force_login(person)
    question = waiting_question(temporary)
    response = Api(client).post(
        f"/api/chat/questions/{question.pk}/answer", {"choice": "Train", "rule": "Go by train."}
    )
    assert response.status_code == 400
    assert response.json()["field"] == "rule"
    assert TEMPORARY_REFUSAL in response.json()["detail"]
    question.refresh_from_db()
    assert question.state == Question.State.WAITING and nothing_saved(person)


def test_the_triage_cards_permanent_rule_is_neither_offered_nor_saved(
    fake_openai, client, person, ask, temporary
):
    _, card = parked(fake_openai, person, ask, temporary)
    client.force_login(person)
    page = client.get(reverse("chat_conversation", args=[temporary.pk])).content.decode()
    assert f'id="triage-card-{card.pk}"' in page and 'name="rule_text"' not in page
    response = client.post(
        reverse("learning_triage_proceed", args=[card.pk]),
        {"choice": "0", "rule_text": "Always ask before moving notes."},
        follow=True,
    )
    assert TEMPORARY_REFUSAL in response.content.decode()
    card.refresh_from_db()
    assert card.state == TriageCard.State.WAITING and nothing_saved(person)


def test_the_page_offers_no_card_that_would_save(client, person, temporary, answered):
    question, answer = answered(RULE, temporary)
    RuleSuggestion.objects.create(
        user=person,
        conversation=temporary,
        user_message=question,
        answer=answer,
        origin=RuleSuggestion.Origin.DETECTED,
        state=RuleSuggestion.State.PENDING,
        text="Use British English.",
    )
    waiting_question(temporary)
    client.force_login(person)
    page = client.get(reverse("chat_conversation", args=[temporary.pk])).content.decode()
    assert "Train or plane?" in page  # the question itself is asked
    assert "Permanent rule" not in page
    assert "Remember as rule" not in page
    assert "/learning/rules/" not in page  # no rule card's Save, Not now or Never


def test_the_refusal_reads_in_german_on_a_german_page(client, person, temporary, answered):
    client.force_login(person)
    question, _ = answered(RULE, temporary)
    refused = client.post(
        reverse("learning_remember", args=[question.pk]),
        {"text": "Use British English."},
        headers={"accept-language": "de-DE,de;q=0.9"},
        follow=True,
    ).text
    assert "Dies ist ein vorübergehender Chat; nichts wird im Gedächtnis gespeichert." in refused
    assert nothing_saved(person)


def test_a_waiting_triage_card_is_marked_temporary_in_the_inbox(
    fake_openai, client, person, ask, temporary
):
    parked(fake_openai, person, ask, temporary)
    client.force_login(person)
    inbox = client.get(reverse("inbox")).content.decode()
    assert "A triage card waits in" in inbox and 'class="badge temporary"' in inbox
