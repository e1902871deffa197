"""Django's ASGI handler, with the request's work in a context of its own.

When the client hangs up, Django cancels the request. Our middleware and views are
synchronous, so the cancel cuts sync_to_async short while the request's thread runs
on, and asgiref copies that thread's half-done state (the executor of an
async_to_sync call that is still running) into the handler's context. Django's
`request_finished`, which hands the thread's database connection back to the pool,
then went to that executor: it failed ("CurrentThreadExecutor already quit or is
broken"), or ran before the view had taken its connection. Either way the
connection was never returned, and once the pool was empty every request of the
worker failed.

Here the request runs in a task with a copy of the context. Only an answered
request copies its changes back (as Django would), so after a hang-up
`request_finished` runs in the request's thread, queued behind its work.

Before any of it, the request takes one of the worker's places (host/request_places.py),
so a burst of requests whose clients leave does not run them all.

The request's thread is one the worker keeps (`RequestThreads`), not a new one: Django
started a thread for each request and another to join it, and the event loop waited
for each start, a sixth of its time under load.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import django
from asgiref.sync import ThreadSensitiveContext
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase

from host import request_places

_UNSET = object()


class RequestThreads:
    """Single-thread executors for requests' synchronous work, kept for the next request.

    One goes back only once the work queued on it has run: an abandoned request's thread
    runs on, and the next request must not queue behind it. At most four times the worker's
    places (`WEB_WORKER_REQUESTS`) wait idle: requests waiting for a place hold one too.
    """

    def __init__(self) -> None:
        self._forget()
        # A forked web worker: the parent's threads did not come along.
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._idle: deque[ThreadPoolExecutor] = deque()
        self._lock = threading.Lock()

    def take(self) -> ThreadPoolExecutor:
        try:
            return self._idle.pop()
        except IndexError:
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        executor.submit(self._idle_again, executor)

    def _idle_again(self, executor: ThreadPoolExecutor) -> None:
        with self._lock:
            kept = len(self._idle) < 4 * settings.WEB_WORKER_REQUESTS
            if kept:
                self._idle.append(executor)
        if not kept:
            executor.shutdown(wait=False)

    def idle(self) -> int:
        return len(self._idle)


class IsolatedASGIHandler(ASGIHandler):
    _places: request_places.Places | None = None
    threads = RequestThreads()

    @property
    def current_places(self) -> request_places.Places | None:
        return self._places

    def places(self) -> request_places.Places:
        """The places of the running event loop (one per worker; a test may run more)."""
        size, loop = settings.WEB_WORKER_REQUESTS, asyncio.get_running_loop()
        places = self._places
        if places is None or places.size != size or places.loop is not loop:
            places = self._places = request_places.Places(size, loop)
        return places

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        place = request_places.Place(self.places())
        token = request_places.enter(place)
        executor = self.threads.take()
        try:
            # Django's own context inside is then a no-op: its work goes to `executor`.
            async with ThreadSensitiveContext(executor=executor):
                # Returns once the request's thread has ended, an abandoned one's too.
                await super().__call__(scope, receive, send)
        finally:
            self.threads.give_back(executor)
            request_places.leave(token)
            place.give_back()

    async def run_get_response(self, request: HttpRequest) -> HttpResponseBase:
        place = request_places.current_place()
        if place is not None and not await place.take(settings.WEB_REQUEST_QUEUE_SECONDS):
            return request_places.busy_response(request)
        context = contextvars.copy_context()
        work = asyncio.create_task(super().run_get_response(request), context=context)
        try:
            response = await asyncio.shield(work)
        except asyncio.CancelledError:
            work.cancel()
            # No task of the request outlives it; its thread's own work goes on.
            await asyncio.wait([work])
            raise  # the place stays taken until the thread ends (__call__)
        if place is not None:
            place.give_back()
        for variable, value in context.items():
            if variable.get(_UNSET) is not value:
                variable.set(value)
        return response


def get_asgi_application() -> IsolatedASGIHandler:
    """`django.core.asgi.get_asgi_application`, with the handler above."""
    django.setup(set_prefix=False)
    return IsolatedASGIHandler()
