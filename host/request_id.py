"""A request id that follows a request into its log lines and the Celery jobs it starts.

The middleware takes a sane X-Request-ID from the proxy or makes one, and answers with
it; a logging filter adds it and the client address to every record; Celery carries the
id in the message headers and restores it while the job runs, so the job's log lines
carry it too. With LOG_REQUESTS each answered request gets one access line with the
client address as the host reads it (the ASGI server's own line would name the proxy).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from asgiref.sync import iscoroutinefunction
from celery import signals
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

from host.client_address import client_address

HEADER = "X-Request-ID"
CELERY_HEADER = "request_id"
_SANE = re.compile(r"[A-Za-z0-9._-]{8,64}")

request_id: ContextVar[str] = ContextVar("request_id", default="")
client: ContextVar[str] = ContextVar("client", default="")
_access_logger = logging.getLogger("memory_addon.access")


def new_id() -> str:
    return uuid.uuid4().hex


@contextmanager
def _request_context(request: HttpRequest) -> Iterator[str]:
    """The request's id and client address, set for its log lines while it runs."""
    incoming = request.headers.get(HEADER, "")
    # A client's id is kept only when it looks like one: it goes into every log line.
    value = incoming if _SANE.fullmatch(incoming) else new_id()
    token = request_id.set(value)
    client_token = client.set(client_address(request))
    try:
        yield value
    finally:
        client.reset(client_token)
        request_id.reset(token)


def _answered(request: HttpRequest, response: HttpResponseBase, value: str) -> None:
    if settings.LOG_REQUESTS:
        _access_logger.info("%s %s %s", request.method, request.path, response.status_code)
    response[HEADER] = value


@sync_and_async_middleware
def request_id_middleware(get_response: Any) -> Any:
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> Any:
            with _request_context(request) as value:
                response = await get_response(request)
                _answered(request, response, value)
            return response

        return async_middleware

    def middleware(request: HttpRequest) -> Any:
        with _request_context(request) as value:
            response = get_response(request)
            _answered(request, response, value)
        return response

    return middleware


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        record.client = client.get()
        return True


@signals.before_task_publish.connect
def _carry(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    value = request_id.get()
    if value and headers is not None:
        headers.setdefault(CELERY_HEADER, value)


_job_tokens: dict[str, Any] = {}
_job_logger = logging.getLogger("memory_addon.jobs")


@signals.task_prerun.connect
def _restore(task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    carried = getattr(getattr(task, "request", None), CELERY_HEADER, None)
    value = carried if isinstance(carried, str) and _SANE.fullmatch(carried) else ""
    if task_id:
        _job_tokens[task_id] = request_id.set(value)
    _job_logger.info("Job %s started (%s)", getattr(task, "name", "?"), task_id)


@signals.task_postrun.connect
def _forget(
    task_id: str | None = None, task: Any = None, state: str | None = None, **kw: Any
) -> None:
    _job_logger.info("Job %s ended: %s (%s)", getattr(task, "name", "?"), state, task_id)
    token = _job_tokens.pop(task_id or "", None)
    if token is not None:
        request_id.reset(token)
