"""The question card (M19): under the answer and in the Inbox while it waits; the
answer form names the field to fix and never answers twice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message, Question
from tests.factories import UserFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("unconsumed_chat_queue"),
]


@pytest.fixture
def question(conversation: Conversation) -> Question:
    Message.objects.create(conversation=conversation, role="user", content="Plan my trip")
    answer = Message.objects.create(
        conversation=conversation,
        role="assistant",
        state=Message.State.WAITING,
        content="Let me plan it.",
        tool_calls=[{"round": 1, "id": "q1", "name": "ask_person", "ok": True, "result": ""}],
    )
    return Question.objects.create(
        owner=conversation.owner,
        message=answer,
        number=1,
        call_id="q1",
        text="Which city should the trip start from?",
        why="Only you know where you will be.",
        options=["Rome", "Milan"],
        expires_at=timezone.now() + timedelta(minutes=10),
    )


def post(client, question, **data):
    url = reverse("chat_question_answer", args=[question.pk])
    return client.post(url, data, HTTP_HX_REQUEST="true")


def test_the_card_under_the_answer_shows_the_question_and_its_choices(
    client, person, conversation, question
):
    client.force_login(person)
    page = client.get(reverse("chat_conversation", args=[conversation.pk])).content.decode()
    card = page[page.index(f'id="question-{question.pk}"') :]
    assert "Which city should the trip start from?" in card
    assert "Why it asks" in card and "Only you know where you will be." in card
    assert card.index('value="Rome"') < card.index("Recommended") < card.index('value="Milan"')
    assert "Another answer" in card and "Permanent rule" in card and "Save to" in card
    assert "Waiting for your answer" in page


def test_text_typed_while_a_choice_is_selected_is_added_to_it(client, person, question):
    client.force_login(person)
    response = post(client, question, choice="Milan", other=" by   train ")
    assert "You answered: Milan — by train" in response.content.decode()
    question.refresh_from_db()
    assert question.answer == "Milan — by train"
    assert Message.objects.get(pk=question.message_id).state == Message.State.STREAMING


def test_another_answer_alone_is_the_answer(client, person, question):
    client.force_login(person)
    post(client, question, other="Naples")
    question.refresh_from_db()
    assert question.state == Question.State.ANSWERED and question.answer == "Naples"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "Pick a suggested answer or type another answer."),
        ({"choice": "Paris"}, "Pick one of the suggested answers."),
    ],
)
def test_a_missing_or_unknown_choice_is_a_form_error_on_the_choice(
    client, person, question, data, message
):
    client.force_login(person)
    body = post(client, question, **data).content.decode()
    assert f'id="question-{question.pk}-choice-error"' in body and message in body
    question.refresh_from_db()
    assert question.state == Question.State.WAITING


def test_a_second_answer_is_refused_and_the_first_stands(client, person, question):
    client.force_login(person)
    post(client, question, choice="Rome")
    body = post(client, question, choice="Milan").content.decode()
    assert "You answered: Rome" in body
    question.refresh_from_db()
    assert question.answer == "Rome"


def test_someone_elses_question_is_a_404(client, question):
    client.force_login(UserFactory())
    assert post(client, question, choice="Rome").status_code == 404


def test_a_waiting_question_is_listed_in_the_inbox_until_answered(client, person, question):
    client.force_login(person)
    inbox = client.get(reverse("inbox")).content.decode()
    assert "Questions waiting for your answer" in inbox
    assert f'id="question-{question.pk}"' in inbox and "Test chat" in inbox
    post(client, question, choice="Rome")
    assert "Questions waiting for your answer" not in client.get(reverse("inbox")).content.decode()
