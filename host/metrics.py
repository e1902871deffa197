"""Prometheus metrics at /metrics, for operators only.

Counts live in Redis, not in process memory: a scrape reaches one web replica, while
jobs run in other processes (and other hosts), so every process adds to the same
hashes and the endpoint reads them all. A process adds its counts up and sends them
about once a second, never on the request's path; a failed metrics write never fails
the work it measures.
"""

from __future__ import annotations

import atexit
import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import redis
from asgiref.sync import iscoroutinefunction
from celery import signals
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

PREFIX = "metrics:"
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


@dataclass(frozen=True)
class Spec:
    kind: str  # counter, gauge or histogram
    help: str
    labels: tuple[str, ...]


SPECS = {
    "memory_host_http_requests": Spec("counter", "HTTP requests answered", ("method", "status")),
    "memory_host_http_request_seconds": Spec("histogram", "Time to answer a request", ()),
    "memory_host_http_requests_dropped": Spec(
        "counter",
        "Requests never run: the client left while they waited, or the wait was too long",
        ("reason",),
    ),
    "memory_host_jobs": Spec("counter", "Celery jobs that ended, by state", ("task", "state")),
    "memory_host_job_seconds": Spec("histogram", "Run time of Celery jobs", ("task",)),
    "memory_host_websocket_connections": Spec("gauge", "Open websocket connections", ()),
    "memory_host_model_calls": Spec(
        "counter", "Calls to AI model servers, by outcome", ("kind", "outcome")
    ),
    "memory_host_model_call_seconds": Spec("histogram", "Latency of AI model calls", ("kind",)),
}


def _client() -> redis.Redis:
    from host.health import redis_client

    return redis_client(settings.REDIS_URL)


def _field(labels: dict[str, str]) -> str:
    return json.dumps([labels.get(name, "") for name in sorted(labels)])


class _Pending:
    """Counts of this process not yet in Redis, added up and sent about once a second by
    a daemon thread: a Redis round trip per request cost more than many requests' work.
    A scrape sends its own process's counts first; the fields are a fixed set (bounded
    labels), so counts kept back while Redis is away stay bounded too."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.amounts: dict[tuple[str, str], float] = {}
        self.pid = 0

    def add(self, key: str, field: str, amount: float) -> None:
        with self.lock:
            if self.pid != os.getpid():  # a forked worker child starts with its own
                self.amounts = {}
                self.pid = os.getpid()
                threading.Thread(target=_flush_every_while, name="metrics", daemon=True).start()
            self.amounts[(key, field)] = self.amounts.get((key, field), 0.0) + amount

    def take(self) -> dict[tuple[str, str], float]:
        with self.lock:
            taken, self.amounts = self.amounts, {}
        return taken

    def put_back(self, amounts: dict[tuple[str, str], float]) -> None:
        with self.lock:
            for item, amount in amounts.items():
                self.amounts[item] = self.amounts.get(item, 0.0) + amount


_pending = _Pending()


def flush() -> None:
    """Add this process's pending counts to the shared hashes in one round trip."""
    amounts = _pending.take()
    if not amounts:
        return
    try:
        pipe = _client().pipeline(transaction=False)
        for (key, field), amount in amounts.items():
            pipe.hincrbyfloat(key, field, amount)
        pipe.execute()
    except redis.RedisError as error:
        _pending.put_back(amounts)
        logger.debug("Metrics kept back until Redis answers: %s", error)


def _flush_every_while() -> None:
    pid = os.getpid()
    while pid == os.getpid():
        time.sleep(settings.METRICS_FLUSH_SECONDS)
        flush()


atexit.register(flush)


def _write(name: str, labels: dict[str, str], amount: float, *, histogram: bool = False) -> None:
    spec = SPECS[name]
    field = _field({key: str(labels.get(key, "")) for key in spec.labels})
    if histogram:
        bucket = next((i for i, b in enumerate(DURATION_BUCKETS) if amount <= b), -1)
        _pending.add(PREFIX + name, f"{field}|{bucket}", 1)
        _pending.add(PREFIX + name, f"{field}|sum", amount)
    else:
        _pending.add(PREFIX + name, field, amount)


def count(name: str, labels: dict[str, str] | None = None, amount: float = 1) -> None:
    _write(name, labels or {}, amount)


def observe(name: str, seconds: float, labels: dict[str, str] | None = None) -> None:
    _write(name, labels or {}, seconds, histogram=True)


# --- Reading -------------------------------------------------------------------


def queue_names() -> list[str]:
    return sorted({"celery", settings.CHAT_QUEUE})


class RedisCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        client = _client()
        pipe = client.pipeline(transaction=False)
        for name in SPECS:
            pipe.hgetall(PREFIX + name)
        queues = queue_names()
        for queue in queues:
            pipe.llen(queue)
        results = pipe.execute()
        for (name, spec), raw in zip(SPECS.items(), results, strict=False):
            values = {key.decode(): float(value) for key, value in raw.items()}
            yield self._family(name, spec, values)
        lengths = GaugeMetricFamily(
            "memory_host_queue_length", "Jobs waiting in each Celery queue", labels=["queue"]
        )
        for queue, length in zip(queues, results[len(SPECS) :], strict=True):
            lengths.add_metric([queue], float(length))
        yield lengths

    def _family(self, name: str, spec: Spec, values: dict[str, float]) -> Metric:
        labels = sorted(spec.labels)
        if spec.kind == "histogram":
            return self._histogram(name, spec, labels, values)
        family_type = CounterMetricFamily if spec.kind == "counter" else GaugeMetricFamily
        family = family_type(name, spec.help, labels=labels)
        for field, value in sorted(values.items()):
            family.add_metric(json.loads(field), value)
        return family

    def _histogram(
        self, name: str, spec: Spec, labels: list[str], values: dict[str, float]
    ) -> Metric:
        family = HistogramMetricFamily(name, spec.help, labels=labels)
        series: dict[str, dict[str, float]] = {}
        for key, value in values.items():
            field, _, part = key.rpartition("|")
            series.setdefault(field, {})[part] = value
        for field, parts in sorted(series.items()):
            running, buckets = 0.0, []
            for index, bound in enumerate(DURATION_BUCKETS):
                running += parts.get(str(index), 0)
                buckets.append((str(bound), running))
            buckets.append(("+Inf", running + parts.get("-1", 0)))
            family.add_metric(json.loads(field), buckets, parts.get("sum", 0.0))
        return family


def exposition() -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RedisCollector())
    return generate_latest(registry)


def is_operator(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and (user.is_staff or user.is_superuser):
        return True
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if not token or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header.removeprefix("Bearer ").encode(), token.encode())


def metrics_view(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET"})
    if not is_operator(request):
        return HttpResponse("Operators only.", status=403, content_type="text/plain")
    try:
        flush()
        body = exposition()
    except redis.RedisError:
        return HttpResponse("Redis cannot be reached.", status=503, content_type="text/plain")
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)


# --- Recording -----------------------------------------------------------------


@sync_and_async_middleware
def count_requests(get_response: Any) -> Any:
    """Middleware: every answer is counted by method and status, and timed."""

    def answered(request: HttpRequest, response: Any, started: float) -> None:
        count(
            "memory_host_http_requests",
            {"method": _method(request.method), "status": str(response.status_code)},
        )
        observe("memory_host_http_request_seconds", time.monotonic() - started)

    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> Any:
            started = time.monotonic()
            response = await get_response(request)
            answered(request, response, started)
            return response

        return async_middleware

    def middleware(request: HttpRequest) -> Any:
        started = time.monotonic()
        response = get_response(request)
        answered(request, response, started)
        return response

    return middleware


def _method(method: str | None) -> str:
    # The label takes a fixed set of values: any made-up method counts as "other".
    known = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
    return method if method in known else "other"


_started: dict[str, float] = {}


@signals.task_prerun.connect
def _job_started(task_id: str | None = None, **kwargs: Any) -> None:
    if task_id:
        _started[task_id] = time.monotonic()


@signals.task_postrun.connect
def _job_ended(
    task_id: str | None = None, task: Any = None, state: str | None = None, **kwargs: Any
) -> None:
    started = _started.pop(task_id or "", None)
    name = getattr(task, "name", "unknown")
    count("memory_host_jobs", {"task": name, "state": state or "UNKNOWN"})
    if started is not None:
        observe("memory_host_job_seconds", time.monotonic() - started, {"task": name})


@signals.task_retry.connect
def _job_retried(sender: Any = None, **kwargs: Any) -> None:
    count("memory_host_jobs", {"task": getattr(sender, "name", "unknown"), "state": "RETRY"})


def model_call(kind: str, seconds: float, outcome: str) -> None:
    count("memory_host_model_calls", {"kind": kind, "outcome": outcome})
    observe("memory_host_model_call_seconds", seconds, {"kind": kind})


def websockets_changed(delta: int) -> None:
    count("memory_host_websocket_connections", amount=delta)
