"""A web worker's places for running requests (WEB_WORKER_REQUESTS each).

Django runs each request in a thread of its own, and a started thread cannot be stopped:
in a burst of requests whose clients left at once, every one ran to its end. A request
now takes a place before its middleware and view run. It waits on the event loop, where
Django's listener for the client's hang-up cancels the wait, so a request whose client
left while it waited never runs. One that waits longer than WEB_REQUEST_QUEUE_SECONDS is
answered 503 with Retry-After.

A request gives its place back once its answer is ready. If its client left while it
ran, the place comes back only when its thread has finished: abandoned work still
counts. A request that waits on another server (`host.outbound.release_db_connection`)
gives its place back then, because that wait has its own deadline and a slow model
server must not hold the places other people's page loads need.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponse
from django.utils import translation

from host import metrics

RETRY_AFTER_SECONDS = 5


class Places:
    """One worker's places, as a semaphore of the worker's event loop."""

    def __init__(self, size: int, loop: asyncio.AbstractEventLoop) -> None:
        self.size = size
        self.loop = loop
        self.semaphore = asyncio.Semaphore(size)
        self.waiting = 0  # requests waiting for a place now


class Place:
    """One request's claim on a place: taken at most once, given back at most once."""

    def __init__(self, places: Places) -> None:
        self._places = places
        self._loop: asyncio.AbstractEventLoop | None = None
        self._held = False

    async def take(self, patience: float) -> bool:
        """Wait for a place at most `patience` seconds; cancelled if the client leaves."""
        self._places.waiting += 1
        try:
            async with asyncio.timeout(patience):
                await self._places.semaphore.acquire()
        except TimeoutError:
            metrics.count("memory_host_http_requests_dropped", {"reason": "busy"})
            return False
        except asyncio.CancelledError:
            metrics.count("memory_host_http_requests_dropped", {"reason": "client_left"})
            raise
        finally:
            self._places.waiting -= 1
        self._loop = asyncio.get_running_loop()
        self._held = True
        return True

    def give_back(self) -> None:
        """On the event loop."""
        if self._held:
            self._held = False
            self._places.semaphore.release()

    def give_back_from_thread(self) -> None:
        if self._held and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.give_back)


_current: ContextVar[Place | None] = ContextVar("request_place", default=None)


def current_place() -> Place | None:
    return _current.get()


def enter(place: Place) -> object:
    return _current.set(place)


def leave(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]  # the token enter() gave


def waiting_elsewhere() -> None:
    """The running request now waits on another server: its place goes to the next.
    Called from the request's thread; outside a request (a job) it does nothing."""
    place = _current.get()
    if place is not None:
        place.give_back_from_thread()


def busy_response(request: HttpRequest) -> HttpResponse:
    """In the language the middleware would have picked (cookie, then the browser's)."""
    with translation.override(translation.get_language_from_request(request)):
        text = translation.gettext("The server is busy. Try again in a moment.")
    response = HttpResponse(
        text + "\n",
        status=503,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response
