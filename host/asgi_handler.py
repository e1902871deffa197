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
"""

from __future__ import annotations

import asyncio
import contextvars

import django
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase

_UNSET = object()


class IsolatedASGIHandler(ASGIHandler):
    async def run_get_response(self, request: HttpRequest) -> HttpResponseBase:
        context = contextvars.copy_context()
        work = asyncio.create_task(super().run_get_response(request), context=context)
        try:
            response = await asyncio.shield(work)
        except asyncio.CancelledError:
            work.cancel()
            # No task of the request outlives it; its thread's own work goes on.
            await asyncio.wait([work])
            raise
        for variable, value in context.items():
            if variable.get(_UNSET) is not value:
                variable.set(value)
        return response


def get_asgi_application() -> IsolatedASGIHandler:
    """`django.core.asgi.get_asgi_application`, with the handler above."""
    django.setup(set_prefix=False)
    return IsolatedASGIHandler()
