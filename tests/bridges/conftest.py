from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from accounts.models import AIProfile, MessagingBinding
from bridges.models import InboundMessage
from bridges.services import binding_create, inbound_process
from bridges.tasks import callback_send_task, endpoint_deliver_task, inbound_process_task
from scripts.sample_bridge import CallbackReceiver
from tests.factories import AIProfileFactory, UserFactory


@pytest.fixture(autouse=True)
def _jobs_wait_for_the_test(request, monkeypatch):
    """Most of these tests play the worker themselves: a real chat worker that another
    test module started must not take their jobs first. An explicit queue beats the
    routes. Tests that ask for the real worker get the real routes."""
    # None lets the routes decide (Celery merges only set options over a route).
    queue = None if "chat_worker" in request.fixturenames else "bridges-tests-unconsumed"
    for task in (inbound_process_task, callback_send_task, endpoint_deliver_task):
        monkeypatch.setattr(task, "queue", queue, raising=False)
        # Celery caches a task's send options (queue included) at its first send.
        monkeypatch.setattr(task, "_exec_options", None, raising=False)


@pytest.fixture
def person():
    return UserFactory()


@pytest.fixture
def profile(person, fake_openai) -> AIProfile:
    return AIProfileFactory(
        owner=person, base_url=fake_openai.base_url, model="fake-model", is_default=True
    )


@pytest.fixture
def fast_retries(settings):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0.05
    settings.WEBHOOK_RETRY_MAX_SECONDS = 0.2
    settings.WEBHOOK_READ_TIMEOUT_SECONDS = 2.0
    return settings


@pytest.fixture
def receiver() -> Iterator[CallbackReceiver]:
    """The bridge's callback endpoint; its secret is set by the `bound` fixture."""
    server = CallbackReceiver([]).start()
    yield server
    server.stop()


@pytest.fixture
def bound(person, profile, receiver) -> tuple[MessagingBinding, str]:
    binding, secret = binding_create(
        owner=person, kind="standard", title="Family group", callback_url=receiver.url
    )
    receiver.secrets.append(secret)
    return binding, secret


@pytest.fixture
def webhook_url(live_asgi_server, bound) -> str:
    return f"{live_asgi_server.url}/bridges/in/{bound[0].public_id}/"


@pytest.fixture
def work() -> Callable[[], list[InboundMessage]]:
    """Play the chat worker: run the queued turns of every received message."""

    def run() -> list[InboundMessage]:
        rows = list(InboundMessage.objects.filter(state=InboundMessage.State.RECEIVED))
        for row in rows:
            inbound_process(inbound_id=row.pk)
            row.refresh_from_db()
        return rows

    return run
