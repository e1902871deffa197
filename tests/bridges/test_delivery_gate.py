"""The delivery gate: one POST in flight per receiver, and a circuit breaker for receivers
that keep failing, on both delivery paths (event endpoints and bridge callbacks)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from bridges.models import DeliveryTarget, EventEndpoint, InboundMessage, OutboxEvent
from bridges.outbox import endpoint_deliver, endpoints_sweep, outbox_emit
from bridges.services import binding_create, callback_send, endpoint_create
from scripts.sample_bridge import CallbackReceiver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def breaker(settings):
    settings.WEBHOOK_CIRCUIT_FAILURES = 3
    settings.WEBHOOK_CIRCUIT_COOLDOWN_SECONDS = 600.0
    settings.WEBHOOK_CIRCUIT_MAX_COOLDOWN_SECONDS = 1500.0
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0.01
    settings.WEBHOOK_RETRY_MAX_SECONDS = 0.01
    return settings


@pytest.fixture
def down_receiver():
    server = CallbackReceiver([], status=503).start()
    yield server
    server.stop()


def _emit(person, count: int = 1) -> None:
    for number in range(count):
        outbox_emit(user_id=person.pk, event_type="memory.changed", data={"change_set_id": number})


def _make_due() -> None:
    """Stand in for the clock: the retry wait of every pending event is over."""
    OutboxEvent.objects.filter(state="pending").update(next_attempt_at=None)
    InboundMessage.objects.filter(callback_state="pending").update(callback_next_at=None)


def _end_pause() -> None:
    DeliveryTarget.objects.update(paused_until=timezone.now() - timedelta(seconds=1))


def _deliver_until_paused(endpoint: EventEndpoint) -> DeliveryTarget:
    for _ in range(10):
        endpoint_deliver(endpoint_id=endpoint.pk)
        target = DeliveryTarget.objects.get(endpoint=endpoint)
        if target.is_paused:
            return target
        _make_due()
    raise AssertionError("the circuit never opened")


def test_an_endpoint_failing_n_times_in_a_row_is_paused_and_its_events_wait_uncounted(
    person, breaker, down_receiver
):
    endpoint, secret = endpoint_create(
        owner=person, url=down_receiver.url, event_types=["memory.changed"]
    )
    down_receiver.secrets.append(secret)
    _emit(person, 2)
    target = _deliver_until_paused(endpoint)
    assert down_receiver.attempts == 3 and target.consecutive_failures == 3
    assert "503" in target.pause_reason and target.pause_seconds == 600.0
    first = OutboxEvent.objects.get(sequence=1)
    assert first.attempts == 3

    # While paused nothing is sent and nothing is counted, from the task or the sweep.
    _make_due()
    assert endpoint_deliver(endpoint_id=endpoint.pk) == 0
    assert endpoints_sweep() == 0
    assert down_receiver.attempts == 3
    first.refresh_from_db()
    assert first.attempts == 3 and first.state == "pending"

    page = Client()
    page.force_login(person)
    html = page.get("/bridges/events/").content.decode()
    assert "Paused after 3 failed deliveries in a row (The server answered 503.)" in html
    assert timezone.localtime(target.paused_until).strftime("%H:%M:%S") in html
    german = page.get("/bridges/events/", headers={"Accept-Language": "de"}).content.decode()
    assert "Pausiert nach 3 fehlgeschlagenen Zustellungen in Folge" in german

    # The pause over, one probe goes out; it succeeds: the circuit closes, nothing lost.
    _end_pause()
    down_receiver.status = 200
    assert endpoint_deliver(endpoint_id=endpoint.pk) == 2
    assert [event["sequence"] for event in down_receiver.received] == [1, 2]
    target.refresh_from_db()
    assert not target.is_paused and target.consecutive_failures == 0
    assert target.pause_seconds == 0 and target.pause_reason == ""
    assert "Paused after" not in page.get("/bridges/events/").content.decode()


def test_a_failed_probe_doubles_the_pause_up_to_the_cap(person, breaker, down_receiver):
    endpoint, _ = endpoint_create(
        owner=person, url=down_receiver.url, event_types=["memory.changed"]
    )
    _emit(person)
    _deliver_until_paused(endpoint)
    pauses = []
    for _ in range(3):
        _end_pause()
        _make_due()
        endpoint_deliver(endpoint_id=endpoint.pk)
        target = DeliveryTarget.objects.get(endpoint=endpoint)
        assert target.is_paused
        pauses.append(target.pause_seconds)
    # One probe per pause, each failing: 600 → 1200 → capped at 1500.
    assert pauses == [1200.0, 1500.0, 1500.0]
    assert down_receiver.attempts == 3 + 3


def test_refusals_do_not_open_the_circuit(person, breaker, down_receiver):
    down_receiver.status = 400
    endpoint, _ = endpoint_create(
        owner=person, url=down_receiver.url, event_types=["memory.changed"]
    )
    _emit(person, 5)
    endpoint_deliver(endpoint_id=endpoint.pk)
    assert down_receiver.attempts == 5
    assert OutboxEvent.objects.filter(state="failed").count() == 5
    assert not DeliveryTarget.objects.get(endpoint=endpoint).is_paused


def _pending_answers(binding, count: int) -> list[InboundMessage]:
    return [
        InboundMessage.objects.create(
            binding=binding,
            webhook_id=f"msg_{number}",
            kind="message",
            text="hi",
            state=InboundMessage.State.ANSWERED,
            answer_text=f"answer {number}",
            callback_state=InboundMessage.Callback.PENDING,
            callback_deadline=timezone.now() + timedelta(hours=1),
        )
        for number in range(count)
    ]


def test_a_bridge_whose_callback_keeps_failing_is_paused_and_its_answers_wait_uncounted(
    person, profile, breaker, down_receiver
):
    binding, secret = binding_create(
        owner=person, kind="standard", title="Family group", callback_url=down_receiver.url
    )
    down_receiver.secrets.append(secret)
    answers = _pending_answers(binding, 2)
    for _ in range(3):
        _make_due()
        assert callback_send(inbound_id=answers[0].pk) is False
    target = DeliveryTarget.objects.get(binding=binding)
    assert target.is_paused and down_receiver.attempts == 3

    # The other answer meets the pause: not sent, not counted, due when the pause ends.
    assert callback_send(inbound_id=answers[1].pk) is False
    waiting = InboundMessage.objects.get(pk=answers[1].pk)
    assert waiting.callback_attempts == 0 and waiting.callback_state == "pending"
    assert waiting.callback_next_at == target.paused_until
    assert down_receiver.attempts == 3

    page = Client()
    page.force_login(person)
    html = page.get("/bridges/messaging/").content.decode()
    assert "Paused after 3 failed deliveries in a row (The server answered 503.)" in html

    _end_pause()
    _make_due()
    down_receiver.status = 200
    assert callback_send(inbound_id=answers[1].pk) is True
    assert callback_send(inbound_id=answers[0].pk) is True
    assert sorted(a["text"] for a in down_receiver.received) == ["answer 0", "answer 1"]
    assert not DeliveryTarget.objects.get(binding=binding).is_paused
    assert "Paused after" not in page.get("/bridges/messaging/").content.decode()


class HeldReceiver:
    """Answers 200 only when released; counts how many POSTs it holds at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.arrived = threading.Semaphore(0)
        self.in_flight = 0
        self.most_at_once = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.in_flight += 1
                    receiver.most_at_once = max(receiver.most_at_once, receiver.in_flight)
                receiver.arrived.release()
                receiver.release.wait(30)
                with receiver._lock:
                    receiver.in_flight -= 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def test_a_second_answer_to_a_bridge_with_one_in_flight_is_deferred_not_sent_alongside(
    person, profile, settings
):
    settings.WEBHOOK_BUSY_RETRY_SECONDS = 5.0
    receiver = HeldReceiver()
    try:
        binding, _ = binding_create(
            owner=person, kind="standard", title="Group", callback_url=receiver.url
        )
        first, second = _pending_answers(binding, 2)
        sent: list[bool] = []

        def send_first() -> None:
            try:
                sent.append(callback_send(inbound_id=first.pk))
            finally:
                connection.close()

        sender = threading.Thread(target=send_first)
        sender.start()
        assert receiver.arrived.acquire(timeout=30)  # the first POST is out …
        before = timezone.now()
        assert callback_send(inbound_id=second.pk) is False  # … so the second waits
        waiting = InboundMessage.objects.get(pk=second.pk)
        assert waiting.callback_attempts == 0 and waiting.callback_state == "pending"
        assert waiting.callback_next_at >= before + timedelta(seconds=5)
        receiver.release.set()
        sender.join(timeout=30)
        assert sent == [True]
        _make_due()
        assert callback_send(inbound_id=second.pk) is True
        assert receiver.most_at_once == 1
    finally:
        receiver.stop()


def test_the_delivery_worker_pauses_a_failing_endpoint_and_resumes_it(
    person, chat_worker, down_receiver, settings
):
    """Through the real delivery worker (default thresholds): the failure that completes
    the run opens the breaker; after the pause the sweep's job delivers it all, in order."""
    endpoint, secret = endpoint_create(
        owner=person, url=down_receiver.url, event_types=["memory.changed"]
    )
    down_receiver.secrets.append(secret)
    DeliveryTarget.objects.create(
        endpoint=endpoint, consecutive_failures=settings.WEBHOOK_CIRCUIT_FAILURES - 1
    )
    _emit(person, 3)
    deadline = time.monotonic() + 60
    # The pause and the event's attempt are written one after the other by the worker.
    while not (
        DeliveryTarget.objects.filter(endpoint=endpoint, paused_until__gt=timezone.now())
        and OutboxEvent.objects.filter(sequence=1, attempts__gt=0)
    ):
        assert time.monotonic() < deadline, "the worker never paused the endpoint"
        time.sleep(0.05)  # polling rows another process writes, under a deadline
    assert down_receiver.attempts == 1
    assert OutboxEvent.objects.get(sequence=1).attempts == 1
    down_receiver.status = 200
    _end_pause()
    _make_due()
    assert endpoints_sweep() == 1
    assert down_receiver.wait_for(3, timeout=60)
    assert [event["sequence"] for event in down_receiver.received] == [1, 2, 3]
    assert down_receiver.attempts == 1 + 3
    assert DeliveryTarget.objects.get(endpoint=endpoint).consecutive_failures == 0
