from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from django.conf import settings

from accounts.models import AIProfile
from chat.models import Conversation, Message
from tests.conftest import ROOT, child_env
from tests.factories import AIProfileFactory, UserFactory


@pytest.fixture
def person():
    return UserFactory()


@pytest.fixture
def profile(person, fake_openai) -> AIProfile:
    return AIProfileFactory(
        owner=person, base_url=fake_openai.base_url, model="fake-model", is_default=True
    )


@pytest.fixture
def conversation(person, profile) -> Conversation:
    return Conversation.objects.create(owner=person, ai_profile=profile, title="Test chat")


@pytest.fixture
def ask(conversation) -> Callable[..., Message]:
    """The person's message and an answer placeholder, as message_send stores them,
    without putting a job on the queue: the test runs the turn itself."""

    def make(text: str, conv: Conversation | None = None) -> Message:
        conv = conv or conversation
        Message.objects.create(conversation=conv, role=Message.Role.USER, content=text)
        return Message.objects.create(
            conversation=conv,
            role=Message.Role.ASSISTANT,
            state=Message.State.STREAMING,
            model=conv.ai_profile.model if conv.ai_profile else "",
        )

    return make


def start_chat_worker(**env: str) -> subprocess.Popen[bytes]:
    from memory_addon.celery import app

    app.control.purge()
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memory_addon",
            "worker",
            "-Q",
            settings.CHAT_QUEUE,
            "--pool",
            "threads",
            "--concurrency",
            "4",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--hostname",
            f"test-chat-worker-{os.getpid()}-{len(env)}@%h",
        ],
        cwd=ROOT,
        env=child_env(**env),
    )


def wait_for_worker(worker: subprocess.Popen[bytes]) -> None:
    from memory_addon.celery import app

    # A ping on the chat queue is answered only once the chat worker consumes it.
    result = app.send_task("memory_addon.ping", queue=settings.CHAT_QUEUE)
    assert result.get(timeout=60) == "pong"
    assert worker.poll() is None


@pytest.fixture(scope="session")
def chat_worker(django_db_setup, django_db_blocker) -> Iterator[subprocess.Popen[bytes]]:
    """A real chat worker (threads pool, chat queue only) on the test database."""
    with django_db_blocker.unblock():
        worker = start_chat_worker()
    wait_for_worker(worker)
    yield worker
    worker.terminate()
    worker.wait(timeout=30)
