"""A question during a run (M19) over a messaging binding: it goes out as a numbered
message, and a reply in the same chat answers it; a reply elsewhere does not."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from bridges.models import InboundMessage
from bridges.services import callback_send
from chat.models import Message, Question
from chat.questions import questions_expire
from chat.runner import turn_run
from scripts.sample_bridge import send_message

pytestmark = pytest.mark.django_db(transaction=True)

ASK = {
    "id": "q1",
    "name": "ask_person",
    "arguments": json.dumps(
        {
            "question": "Which day should the reminder go out?",
            "why": "Only you know the family's week.",
            "options": ["Monday", "Friday"],
            "recommended": "Friday",
        }
    ),
}


def deliver_all(rows) -> None:
    for row in rows:
        assert callback_send(inbound_id=row.pk)


def test_a_question_goes_out_numbered_and_a_numbered_reply_answers_it(
    fake_openai, webhook_url, bound, receiver, work
):
    fake_openai.chat_replies += [
        {"content": "I can set that up.", "tool_calls": [ASK]},
        {"content": "The reminder goes out on Mondays, after school."},
    ]
    secret = bound[1]
    assert (
        send_message(webhook_url, secret, "Set up the reminder", chat_id="fam").status_code == 202
    )
    deliver_all(work())
    assert receiver.wait_for(1)
    asked = receiver.received[0]["text"]
    assert asked.startswith("I can set that up.")
    assert "Question 1: Which day should the reminder go out?" in asked
    assert "Why it asks: Only you know the family's week." in asked
    assert "1. Friday (recommended)\n2. Monday" in asked
    question = Question.objects.get()
    assert question.state == Question.State.WAITING

    assert send_message(webhook_url, secret, "2 after school", chat_id="fam").status_code == 202
    deliver_all(work())
    assert receiver.wait_for(2)
    question.refresh_from_db()
    assert question.state == Question.State.ANSWERED
    assert question.answer == "Monday — after school"
    told = fake_openai.chat_requests[-1]["messages"][-1]
    assert told == {
        "role": "tool",
        "tool_call_id": "q1",
        "content": "The person answered: Monday — after school",
    }
    # The rest of the same answer comes back, not the text sent with the question again.
    assert receiver.received[1]["text"] == "The reminder goes out on Mondays, after school."
    answer = Message.objects.get(pk=question.message_id)
    assert answer.state == Message.State.COMPLETE
    assert answer.content.endswith("The reminder goes out on Mondays, after school.")
    assert Message.objects.filter(role="assistant").count() == 1


def test_a_reply_from_another_chat_of_the_binding_does_not_answer_the_question(
    fake_openai, webhook_url, bound, receiver, work
):
    fake_openai.chat_replies += [{"tool_calls": [ASK]}, {"content": "Hello, work."}]
    secret = bound[1]
    send_message(webhook_url, secret, "Set up the reminder", chat_id="fam")
    work()
    send_message(webhook_url, secret, "1", chat_id="work")
    work()
    assert Question.objects.get().state == Question.State.WAITING
    assert Message.objects.filter(role="assistant", content="Hello, work.").exists()


def test_a_question_nobody_answers_is_decided_and_the_rest_goes_back_to_the_chat(
    fake_openai, webhook_url, bound, receiver, work, unconsumed_chat_queue
):
    fake_openai.chat_replies += [
        {"content": "I can set that up.", "tool_calls": [ASK]},
        {"content": "Decided without you: Friday."},
    ]
    send_message(webhook_url, bound[1], "Set up the reminder", chat_id="fam")
    deliver_all(work())
    assert receiver.wait_for(1)
    question = Question.objects.get()
    Question.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert questions_expire() == 1  # the scheduled sweep, driven here
    turn_run(message_id=question.message_id)  # the chat job it queued
    sent = InboundMessage.objects.get(webhook_id=f"question_decided_{question.pk}")
    assert sent.chat_id == "fam" and sent.state == InboundMessage.State.ANSWERED
    deliver_all([sent])
    assert receiver.wait_for(2)
    assert receiver.received[1]["text"] == "Decided without you: Friday."
    assert receiver.received[1]["chat_id"] == "fam"
