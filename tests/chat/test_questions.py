"""Questions during a run (M19): ask, park, answer or time out, and go on in the same answer."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import Conversation, Message, Question
from chat.prompt import prepare
from chat.questions import BACKGROUND_NOTE, question_answer, questions_expire
from chat.runner import REPEATED_ERROR_NOTE, messages_reap_stalled, turn_run
from tests.factories import AgentFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("unconsumed_chat_queue"),
]

CITY = {
    "question": "Which city should the trip start from?",
    "why": "Only you know where you will be that week.",
    "options": ["Milan", "Rome", "Turin"],
    "recommended": "Rome",
}


def ask_call(call_id: str = "q1", **changes: object) -> dict[str, object]:
    return {"id": call_id, "name": "ask_person", "arguments": json.dumps({**CITY, **changes})}


def run(message: Message) -> Message:
    turn_run(message_id=message.pk)
    message.refresh_from_db()
    return message


def test_chat_turns_offer_ask_person_with_its_schema(fake_openai, ask):
    run(ask("Plan my trip"))
    tools = {t["function"]["name"]: t["function"] for t in fake_openai.chat_requests[-1]["tools"]}
    parameters = tools["ask_person"]["parameters"]
    assert parameters["required"] == ["question", "why", "options", "recommended"]
    assert parameters["properties"]["options"]["minItems"] == 2
    assert parameters["properties"]["options"]["maxItems"] == 4


def test_a_saved_agents_conversation_offers_ask_person_too(fake_openai, ask, person, profile):
    agent = AgentFactory(owner=person, memory_allowed=True, instructions="Plan trips.")
    conversation = Conversation.objects.create(owner=person, ai_profile=profile, agent=agent)
    fake_openai.chat_replies.append({"tool_calls": [ask_call()]})
    answer = run(ask("Plan my trip", conversation))
    assert "ask_person" in {t["function"]["name"] for t in fake_openai.chat_requests[-1]["tools"]}
    assert answer.state == Message.State.WAITING and answer.questions.count() == 1


def test_a_question_parks_the_answer_and_the_reply_goes_on_in_the_same_answer(
    fake_openai, ask, person
):
    fake_openai.chat_replies += [
        {"content": "Let me plan it.", "tool_calls": [ask_call()]},
        {"content": "Starting from Milan, then."},
    ]
    answer = run(ask("Plan my trip"))
    assert answer.state == Message.State.WAITING
    assert answer.content == "Let me plan it."
    question = Question.objects.get(message=answer)
    assert question.state == Question.State.WAITING
    assert question.options == ["Rome", "Milan", "Turin"]  # the recommended one first
    assert len(fake_openai.chat_requests) == 1

    question_answer(user=person, question_id=question.pk, choice="Milan", other="by train")
    answer.refresh_from_db()
    assert answer.state == Message.State.STREAMING  # queued again as a new chat job

    first_token_at = answer.first_token_at
    answer = run(answer)
    assert answer.state == Message.State.COMPLETE
    assert answer.content == "Let me plan it.\n\nStarting from Milan, then."
    assert answer.first_token_at == first_token_at
    sent = fake_openai.chat_requests[-1]["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "ask_person"
    assert sent[-1] == {
        "role": "tool",
        "tool_call_id": "q1",
        "content": "The person answered: Milan — by train",
    }
    assert Message.objects.filter(conversation=answer.conversation).count() == 2


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ("{}", "'question' is missing"),
        (json.dumps({**CITY, "extra": 1}), "'extra' is not a field"),
        (json.dumps({**CITY, "question": ""}), "'question'"),
        (json.dumps({**CITY, "options": ["Rome"]}), "at least 2"),
        (
            json.dumps({**CITY, "options": ["a", "b", "c", "d", "e"], "recommended": "a"}),
            "at most 4",
        ),
        (json.dumps({**CITY, "recommended": "Paris"}), "'recommended' must be one of"),
        ("not json", "not valid JSON"),
    ],
)
def test_bad_ask_person_arguments_get_a_tool_error_and_nothing_is_asked(
    fake_openai, ask, arguments, named
):
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "q1", "name": "ask_person", "arguments": arguments}]},
        {"content": "Going with Rome."},
    ]
    answer = run(ask("Plan my trip"))
    assert answer.state == Message.State.COMPLETE
    assert not Question.objects.exists()
    (call,) = answer.tool_calls
    assert not call["ok"] and named in call["result"]


def test_at_most_three_questions_per_answer_and_the_fourth_is_decided(fake_openai, ask, person):
    fake_openai.chat_replies += [{"tool_calls": [ask_call(f"q{n}")]} for n in range(1, 5)]
    fake_openai.chat_replies.append({"content": "Decided without you: Rome."})
    answer = run(ask("Plan my trip"))
    for number in range(1, 4):
        question = Question.objects.get(message=answer, number=number)
        question_answer(user=person, question_id=question.pk, choice="Rome")
        answer = run(answer)
    assert answer.state == Message.State.COMPLETE
    assert Question.objects.filter(message=answer).count() == 3
    refused = fake_openai.chat_requests[-1]["messages"][-1]
    assert refused["tool_call_id"] == "q4"
    assert "already asked 3 questions" in refused["content"]
    assert "Decided without you" in refused["content"]
    assert answer.content.endswith("Decided without you: Rome.")
    # Questions are not tool rounds: four asks and an answer within the default rounds.
    assert not answer.error


def test_questions_are_not_tool_rounds(fake_openai, ask, person, settings):
    settings.CHAT_MAX_TOOL_ROUNDS = 2
    fake_openai.chat_replies += [
        {"tool_calls": [ask_call()]},
        {"tool_calls": [{"id": "l1", "name": "list_memory", "arguments": '{"query": "trip"}'}]},
        {"content": "Done."},
    ]
    answer = run(ask("Plan my trip"))
    question_answer(user=person, question_id=answer.questions.get().pk, choice="Rome")
    answer = run(answer)
    assert answer.content == "Done."
    assert "tools" in fake_openai.chat_requests[1]  # the round after the question is not the last
    assert "tools" not in fake_openai.chat_requests[2]


def test_an_unanswered_question_is_decided_by_the_model_after_the_timeout(
    fake_openai, ask, settings
):
    fake_openai.chat_replies += [
        {"tool_calls": [ask_call()]},
        {"content": "Decided without you: Rome, the recommended start."},
    ]
    answer = run(ask("Plan my trip"))
    assert questions_expire() == 0  # not due yet
    Question.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert questions_expire() == 1
    answer = run(answer)
    question = answer.questions.get()
    assert question.state == Question.State.DECIDED
    told = fake_openai.chat_requests[-1]["messages"][-1]["content"]
    assert "did not answer within 10 minutes" in told and "Decided without you" in told
    assert answer.state == Message.State.COMPLETE
    assert "Decided without you: Rome" in answer.content
    assert questions_expire() == 0  # decided once


def test_an_answer_after_the_timeout_is_refused(fake_openai, ask, person):
    fake_openai.chat_replies += [{"tool_calls": [ask_call()]}, {"content": "Rome."}]
    answer = run(ask("Plan my trip"))
    Question.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    questions_expire()
    from host.errors import ProposalClosed

    with pytest.raises(ProposalClosed):
        question_answer(user=person, question_id=answer.questions.get().pk, choice="Rome")


@pytest.mark.parametrize("run_kind", ["scheduled", "background"])
def test_scheduled_and_background_runs_never_get_ask_person(
    fake_openai, ask, conversation, run_kind
):
    Conversation.objects.filter(pk=conversation.pk).update(run_kind=run_kind)
    answer = ask("Daily summary")
    prepared = prepare(Message.objects.select_related("conversation__ai_profile").get(pk=answer.pk))
    names = {tool["function"]["name"] for tool in prepared.tools or []}
    assert "ask_person" not in names
    assert BACKGROUND_NOTE in prepared.messages[0]["content"]
    assert not prepared.asks


def test_the_same_tool_error_a_second_time_gets_a_note_to_change_approach(fake_openai, ask):
    bad = {"name": "context_read", "arguments": '{"path": 5}'}
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", **bad}]},
        {"tool_calls": [{"id": "c2", **bad}]},
        {"content": "Sorry."},
    ]
    answer = run(ask("Read it"))
    first, second = answer.tool_calls
    assert not first["ok"] and REPEATED_ERROR_NOTE.strip() not in first["result"]
    assert not second["ok"] and second["result"].endswith(REPEATED_ERROR_NOTE.strip())
    told = fake_openai.chat_requests[-1]["messages"][-1]["content"]
    assert "change your approach, or ask the person" in told


def test_an_answer_queued_again_after_a_late_answer_is_not_reaped_as_never_picked_up(
    fake_openai, ask, person, settings
):
    fake_openai.chat_replies += [{"tool_calls": [ask_call()]}, {"content": "Rome, then."}]
    answer = run(ask("Plan my trip"))
    # The person answers long after the answer was created (but within the timeout).
    Message.objects.filter(pk=answer.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.CHAT_QUEUED_MAX_SECONDS + 60)
    )
    question_answer(user=person, question_id=answer.questions.get().pk, choice="Rome")
    assert messages_reap_stalled() == 0
    assert run(answer).state == Message.State.COMPLETE


def test_the_tool_log_waits_in_the_persons_language_then_shows_the_answer(
    fake_openai, ask, person, client
):
    fake_openai.chat_replies.append({"content": "Let me plan it.", "tool_calls": [ask_call()]})
    answer = run(ask("Plan my trip"))
    client.force_login(person)
    german = client.get(
        f"/chat/{answer.conversation_id}/", headers={"accept-language": "de"}
    ).content.decode()
    assert "Wartet auf Ihre Antwort." in german and "Waiting for the answer." not in german
    question = Question.objects.get(message=answer)
    question_answer(user=person, question_id=question.pk, choice="Milan", other="")
    fake_openai.chat_replies.append({"content": "Milan it is."})
    answer = run(answer)
    (logged,) = answer.tool_calls
    assert not logged["waiting"] and logged["result"] == "The person answered: Milan"
