"""The outbound gate (M11): what reaches a model server is masked, whoever built the text.

Every request is checked at the fake server (tests/fake_openai.py records them): the
person's new message, the history, a tool result and the memory block; a model marked
as running on this machine gets the text verbatim; what the host stores keeps the
person's own words either way.
"""

from __future__ import annotations

import json

import pytest

from chat.models import Conversation, Message
from chat.runner import turn_run
from host import model_client as client
from memory_addon.models import MemoryFile
from memory_addon.services.scopes import ensure_user_scope

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "Hunter2Secret99"
DB_PASSWORD = "Zq8vLm2xR4"
SECRET_MESSAGE = f"the password is {PASSWORD} and db_password={DB_PASSWORD}"


def _sent(fake_openai) -> str:
    """Everything the server received, as one text."""
    return json.dumps(fake_openai.chat_requests, ensure_ascii=False)


def _run(message: Message) -> Message:
    turn_run(message_id=message.pk)
    message.refresh_from_db()
    return message


def _flagged_index(person, content: str) -> None:
    """A note that already holds a secret (from before the guard): flagged, still sent."""
    MemoryFile.objects.create(
        scope=ensure_user_scope(person), path="index.md", content=content, sha256="x"
    )


def test_the_new_message_leaves_masked_and_is_stored_as_written(fake_openai, ask, person):
    answer = _run(ask(SECRET_MESSAGE))
    assert answer.state == Message.State.COMPLETE
    sent = fake_openai.chat_requests[-1]["messages"][-1]
    assert sent == {
        "role": "user",
        "content": "the password is [masked] and db_password=[masked]",
    }
    stored = Message.objects.get(conversation=answer.conversation, role=Message.Role.USER)
    assert stored.content == SECRET_MESSAGE


def test_the_history_leaves_masked(fake_openai, ask, conversation):
    Message.objects.create(
        conversation=conversation, role=Message.Role.USER, content=SECRET_MESSAGE
    )
    Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        state=Message.State.COMPLETE,
        content=f"Noted: db_password={DB_PASSWORD}",
    )
    _run(ask("What did I tell you?"))
    history = fake_openai.chat_requests[-1]["messages"][2:]  # after system and host context
    assert history == [
        {"role": "user", "content": "the password is [masked] and db_password=[masked]"},
        {"role": "assistant", "content": "Noted: db_password=[masked]"},
        {"role": "user", "content": "What did I tell you?"},
    ]


def test_a_tool_result_and_the_tool_call_arguments_leave_masked(fake_openai, ask, person):
    _flagged_index(person, f"- db: db_password={DB_PASSWORD}\n")
    fake_openai.chat_replies += [
        {
            "tool_calls": [
                {
                    "id": "r1",
                    "name": "list_memory",
                    "arguments": json.dumps({"query": f"the password is {PASSWORD}"}),
                },
                {"id": "r2", "name": "context_read", "arguments": json.dumps({"path": "index.md"})},
            ]
        },
        {"content": "Done."},
    ]
    answer = _run(ask("Look up my database note"))
    assert answer.state == Message.State.COMPLETE
    second = fake_openai.chat_requests[-1]["messages"]
    call = next(m for m in second if m.get("tool_calls"))["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"query": "the password is [masked]"}
    read = next(m for m in second if m.get("tool_call_id") == "r2")
    assert "db_password=[masked]" in read["content"]
    sent = _sent(fake_openai)
    assert PASSWORD not in sent and DB_PASSWORD not in sent


def test_the_memory_block_leaves_masked_and_sent_along_shows_the_masked_copy(
    fake_openai, ask, person
):
    _flagged_index(person, f"- wifi: the password is {PASSWORD}\n")
    answer = _run(ask("What is my wifi like?"))
    memory = fake_openai.chat_requests[-1]["messages"][1]["content"]
    assert "<memory>" in memory and "the password is [masked]" in memory
    assert PASSWORD not in _sent(fake_openai)
    shown = answer.sent_along["memory"]["items"][0]["text"]
    assert PASSWORD not in shown and "[masked]" in shown


def test_a_model_on_this_machine_gets_the_text_verbatim(fake_openai, ask, person, profile):
    profile.runs_locally = True
    profile.save(update_fields=["runs_locally"])
    _flagged_index(person, f"- wifi: the password is {PASSWORD}\n")
    _run(ask(SECRET_MESSAGE))
    answer = _run(ask(f"And db_password={DB_PASSWORD} again"))
    messages = fake_openai.chat_requests[-1]["messages"]
    assert messages[-1]["content"] == f"And db_password={DB_PASSWORD} again"
    assert messages[2]["content"] == SECRET_MESSAGE  # the history
    assert f"the password is {PASSWORD}" in messages[1]["content"]  # the memory block
    assert PASSWORD in answer.sent_along["memory"]["items"][0]["text"]


@pytest.mark.parametrize("run_kind", ["scheduled", "background"])
def test_runs_without_a_person_watching_go_through_the_same_gate(
    fake_openai, ask, profile, person, run_kind
):
    conversation = Conversation.objects.create(
        owner=person, ai_profile=profile, title="Run", run_kind=run_kind
    )
    _run(ask(SECRET_MESSAGE, conversation))
    assert fake_openai.chat_requests[-1]["messages"][-1]["content"] == (
        "the password is [masked] and db_password=[masked]"
    )


def test_every_caller_of_the_model_client_is_masked(fake_openai):
    """Learning's detection and clean-up calls build their own messages: the client masks
    them too, and never changes the caller's list."""
    endpoint = client.Endpoint(base_url=fake_openai.base_url, model="fake-model", max_retries=0)
    messages = [
        {"role": "system", "content": f"notes:\n- db_password={DB_PASSWORD}"},
        {"role": "user", "content": [{"type": "text", "text": SECRET_MESSAGE}]},
    ]
    original = json.loads(json.dumps(messages))
    client.stream_round(
        endpoint, messages=messages, tools=None, on_delta=lambda _d: None, should_stop=lambda: False
    )
    assert messages == original
    sent = fake_openai.chat_requests[-1]["messages"]
    assert sent[0]["content"] == "notes:\n- db_password=[masked]"
    assert sent[1]["content"][0]["text"] == "the password is [masked] and db_password=[masked]"
    local = client.Endpoint(
        base_url=fake_openai.base_url, model="fake-model", max_retries=0, runs_locally=True
    )
    client.stream_round(
        local, messages=messages, tools=None, on_delta=lambda _d: None, should_stop=lambda: False
    )
    assert fake_openai.chat_requests[-1]["messages"] == original


def test_a_secret_the_host_keeps_for_the_person_leaves_masked(fake_openai, ask, profile):
    kept = "correct-horse-battery-staple-42"  # no shape the guard knows: it is told
    profile.api_key = kept
    profile.save()
    answer = _run(ask(f"Is {kept} the key you use?"))
    assert answer.state == Message.State.COMPLETE
    assert fake_openai.chat_requests[-1]["messages"][-1]["content"] == (
        "Is [masked] the key you use?"
    )
    assert kept not in _sent(fake_openai)
