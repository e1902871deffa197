"""Turns through Celery: the chat queue, a thread-pool worker, a worker killed mid-answer."""

from __future__ import annotations

import signal
import threading

import pytest
from django.db import connection

from chat.models import Message
from chat.runner import messages_reap_stalled
from chat.services import conversation_create, message_send
from tests.chat.conftest import start_chat_worker, wait_for_worker

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for(condition, timeout: float = 30.0) -> None:
    """Poll the database for a state another process writes (no fixed sleeps)."""
    done = threading.Event()
    for _ in range(int(timeout / 0.05)):
        connection.close()
        if condition():
            return
        done.wait(0.05)
    raise AssertionError("condition not reached")


def test_a_sent_message_is_answered_by_the_chat_worker(chat_worker, fake_openai, person, profile):
    fake_openai.chat_replies.append({"content": "Answered by the chat queue."})
    conversation = conversation_create(user=person)
    answer = message_send(user=person, conversation=conversation, text="Hi")
    wait_for(lambda: Message.objects.get(pk=answer.pk).state != Message.State.STREAMING)
    answer.refresh_from_db()
    assert answer.state == Message.State.COMPLETE
    assert answer.content == "Answered by the chat queue."


def test_a_worker_killed_mid_answer_leaves_a_failed_message_never_a_complete_half(
    fake_openai, person, profile, settings
):
    # Its own queue, so no other chat worker of the session can pick the job up.
    settings.CHAT_QUEUE = "chat-kill-test"
    worker = start_chat_worker(CHAT_PERSIST_INTERVAL_MS="100")
    try:
        wait_for_worker(worker)
        fake_openai.chat_replies.append(
            {"deltas": ["Half of", " an answer", " and the rest"], "gate_after": 2}
        )
        conversation = conversation_create(user=person)
        answer = message_send(user=person, conversation=conversation, text="Hi")
        assert fake_openai.reached_gate.wait(timeout=30)
        wait_for(lambda: Message.objects.get(pk=answer.pk).content == "Half of an answer")
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
    answer.refresh_from_db()
    assert answer.state == Message.State.STREAMING  # nobody will finish it …
    settings.CHAT_STALE_SECONDS = 0
    assert messages_reap_stalled() == 1  # … so the reaper marks it failed, with Retry
    answer.refresh_from_db()
    assert answer.state == Message.State.FAILED
    assert answer.content == "Half of an answer"
    assert "incomplete" in answer.error
