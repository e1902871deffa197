"""A request that cannot reach the database (PostgreSQL restarting, every pooled
connection taken until the pool's timeout) is answered 503 with Retry-After, not 500.

Such a request's transaction never committed, so the Idempotency-Key layer (which this
middleware sits inside) keeps no answer for it: the client's retry with the same key runs
and stores the write once.
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin
from django.utils.translation import gettext

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5


class DatabaseUnavailableMiddleware(MiddlewareMixin):
    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        return database_unavailable_response(request, exception)


def database_unavailable_response(request: HttpRequest, exception: Exception) -> HttpResponse:
    logger.warning("Database unavailable for %s: %s", request.path, exception)
    message = gettext("The database is not reachable right now; try again in a moment.")
    response: HttpResponse
    if request.path.startswith("/api/") or "json" in request.headers.get("Accept", ""):
        response = JsonResponse({"detail": message}, status=503)
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
