"""/metrics answers operators only and counts requests and jobs; the request id follows
a request into the log lines of the job it started."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
import uuid

import pytest
from django.http import HttpResponse
from django.test import RequestFactory, override_settings
from prometheus_client.parser import text_string_to_metric_families

from host import metrics
from host.request_id import request_id_middleware
from host.tasks import ping
from tests.conftest import ROOT, child_env
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
TOKEN = "operator-token-" + "x" * 24


def _sample(body: bytes, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def test_metrics_refuse_people_who_are_not_operators(client):
    assert client.get("/metrics").status_code == 403
    client.force_login(UserFactory())
    assert client.get("/metrics").status_code == 403
    with override_settings(METRICS_TOKEN=TOKEN):
        wrong = client.get("/metrics", headers={"Authorization": "Bearer not-the-token"})
        assert wrong.status_code == 403


def test_without_a_configured_token_no_bearer_header_gets_in(client):
    with override_settings(METRICS_TOKEN=""):
        assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 403


def test_staff_and_the_operator_token_read_metrics_that_count_requests(client):
    with override_settings(METRICS_TOKEN=TOKEN):
        response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    before = _sample(
        response.content, "memory_host_http_requests_total", method="GET", status="200"
    )
    client.get("/healthz")
    client.force_login(UserFactory(is_staff=True))
    response = client.get("/metrics")
    assert response.status_code == 200
    after = _sample(response.content, "memory_host_http_requests_total", method="GET", status="200")
    assert after >= before + 2  # the health check and the first scrape
    assert _sample(response.content, "memory_host_queue_length", queue="chat") >= 0
    assert b"memory_host_websocket_connections" in response.content


def _requests_answered(client) -> float:
    body = client.get("/metrics").content
    return _sample(body, "memory_host_http_requests_total", method="GET", status="200")


def test_answering_requests_makes_no_redis_call_the_counts_follow_in_one_flush(client, monkeypatch):
    client.force_login(UserFactory(is_staff=True))
    metrics.flush()
    before = _requests_answered(client)
    calls: list[str] = []
    real_client = metrics._client

    def counted_client():
        calls.append(threading.current_thread().name)
        return real_client()

    monkeypatch.setattr(metrics, "_client", counted_client)
    for _ in range(20):
        assert client.get("/healthz").status_code == 200
    # The background flusher may have sent some; the requests' own thread sent nothing.
    assert threading.current_thread().name not in calls
    metrics.flush()
    after = _requests_answered(client)
    assert after >= before + 21  # the twenty health checks and the first scrape


def test_counts_kept_back_while_redis_is_away_are_sent_once_it_answers(monkeypatch):
    metrics.flush()
    metrics.count("memory_host_model_calls", {"kind": "chat", "outcome": "kept-back"}, 2)

    def unreachable():
        raise metrics.redis.ConnectionError("Redis is restarting")

    real_client = metrics._client
    monkeypatch.setattr(metrics, "_client", unreachable)
    metrics.flush()
    monkeypatch.setattr(metrics, "_client", real_client)
    metrics.flush()
    body = metrics.exposition()
    assert _sample(body, "memory_host_model_calls_total", kind="chat", outcome="kept-back") >= 2


def test_a_job_run_by_the_worker_is_counted_with_its_duration(client, celery_worker):
    client.force_login(UserFactory(is_superuser=True))

    def runs() -> tuple[float, float]:
        body = client.get("/metrics").content
        labels = {"task": "memory_addon.ping"}
        return (
            _sample(body, "memory_host_jobs_total", state="SUCCESS", **labels),
            _sample(body, "memory_host_job_seconds_count", **labels),
        )

    before = runs()
    assert ping.delay().get(timeout=60) == "pong"
    # The worker counts the run after it stores the result and sends its counts about
    # once a second (the worker's start-up ping may come in the same batch): poll.
    deadline = time.monotonic() + 30
    while runs() == before and time.monotonic() < deadline:
        time.sleep(0.1)
    after = runs()
    assert after[0] >= before[0] + 1
    assert after[1] - before[1] == after[0] - before[0]  # each run with its duration


def test_the_request_id_is_in_the_log_lines_of_the_job_the_request_started():
    queue_name = f"ops-{uuid.uuid4().hex[:8]}"
    worker = subprocess.Popen(
        [
            *(sys.executable, "-m", "celery", "-A", "config", "worker"),
            *("--pool", "solo", "-Q", queue_name, "--without-gossip", "--without-mingle"),
            *("--hostname", f"{queue_name}@%h"),
        ],
        cwd=ROOT,
        env=child_env(LOG_FORMAT="json", LOG_LEVEL="INFO"),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert worker.stderr is not None
        for line in worker.stderr:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        sent = {}

        def view(request):
            sent["result"] = ping.apply_async(queue=queue_name)
            return HttpResponse("queued")

        request = RequestFactory().get("/", headers={"X-Request-ID": "req-from-proxy-42"})
        response = request_id_middleware(view)(request)
        assert response["X-Request-ID"] == "req-from-proxy-42"
        assert sent["result"].get(timeout=60) == "pong"

        records = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line.startswith("{"):
                record = json.loads(line)
                records.append(record)
                if record["message"].startswith("Job memory_addon.ping ended"):
                    break
        job_lines = [r for r in records if r["message"].startswith("Job memory_addon.ping")]
        assert len(job_lines) == 2, records
        assert {r["request_id"] for r in job_lines} == {"req-from-proxy-42"}
        assert {"time", "level", "logger"} <= set(job_lines[0])
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def test_a_made_up_request_id_is_replaced():
    request = RequestFactory().get("/", headers={"X-Request-ID": "<script>\n"})
    response = request_id_middleware(lambda r: HttpResponse("ok"))(request)
    assert response["X-Request-ID"] != "<script>\n"
    assert len(response["X-Request-ID"]) == 32
