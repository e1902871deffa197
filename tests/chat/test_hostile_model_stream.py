"""A hostile or broken model server cannot hold a chat worker or fill it.

A trickling stream (a chunk now and then, forever) and a tool call of megabytes were
both read without end: the answer now has a total time limit, and a streamed tool call
a size limit, each ending the answer with a reason and nothing run.
"""

from __future__ import annotations

import json
import time

import pytest

from chat.models import Message
from chat.runner import turn_run
from memory_addon.models import ChangeSet, Proposal

pytestmark = pytest.mark.django_db(transaction=True)


def run(message: Message) -> Message:
    turn_run(message_id=message.pk)
    message.refresh_from_db()
    return message


def test_an_answer_that_trickles_past_the_time_limit_ends_with_the_text_kept(
    fake_openai, ask, settings
):
    settings.CHAT_MAX_ANSWER_SECONDS = 2
    words = " ".join(f"w{n}" for n in range(40))
    fake_openai.chat_replies.append({"content": words, "chunk_delay": 0.25})
    started = time.monotonic()
    answer = run(ask("Tell me slowly"))
    assert time.monotonic() - started < 6  # 40 chunks at 0.25 s would take 10 s
    assert answer.state == Message.State.FAILED
    assert "2 s" in answer.error
    assert answer.content.startswith("w0 w1")
    assert "w39" not in answer.content


def test_a_tool_call_with_oversized_arguments_ends_the_answer_and_runs_nothing(
    fake_openai, ask, person, settings
):
    settings.CHAT_MAX_TOOL_ARGUMENT_CHARS = 10_000
    arguments = json.dumps({"action": "add", "text": "x" * 50_000})
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": arguments}]},
        {"content": "never asked"},
    ]
    answer = run(ask("Remember this"))
    assert answer.state == Message.State.FAILED
    assert "10,000" in answer.error
    assert answer.tool_calls == []
    assert len(fake_openai.chat_requests) == 1
    assert not Proposal.objects.filter(user=person).exists()
    assert not ChangeSet.objects.filter(user=person).exists()


def test_a_tool_name_of_thousands_of_characters_is_not_stored_or_echoed(fake_openai, ask):
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "n" * 5000, "arguments": "{}"}]},
        {"content": "never asked"},
    ]
    answer = run(ask("Hello"))
    assert answer.state == Message.State.FAILED
    assert "tool call" in answer.error
    assert answer.tool_calls == []
    assert len(fake_openai.chat_requests) == 1


def test_more_tool_calls_in_one_stream_than_the_host_reads_end_the_answer(fake_openai, ask):
    calls = [{"id": f"c{n}", "name": "list_memory", "arguments": "{}"} for n in range(1001)]
    fake_openai.chat_replies += [{"tool_calls": calls}, {"content": "never asked"}]
    answer = run(ask("Hello"))
    assert answer.state == Message.State.FAILED
    assert "tool calls" in answer.error
    assert len(fake_openai.chat_requests) == 1


def test_a_reply_longer_than_the_clients_cap_is_not_read_on(fake_openai):
    """The learning calls (rule detection, clean-up) read with a time limit only: a fast
    server could fill the worker's memory within it. The client caps the text itself."""
    from host import model_client as client

    fake_openai.chat_replies.append({"deltas": ["x" * 1000] * 50})
    endpoint = client.Endpoint(
        base_url=fake_openai.base_url, model="test-model", max_content_chars=5_000
    )
    with pytest.raises(client.ModelError, match="5,000 characters"):
        client.stream_round(
            endpoint,
            messages=[{"role": "user", "content": "hi"}],
            tools=None,
            on_delta=lambda _delta: None,
            should_stop=lambda: False,
        )
