"""Small request/response policies of the host."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBadRequest, HttpResponseBase, JsonResponse
from django.utils.cache import add_never_cache_headers
from django.utils.decorators import sync_and_async_middleware
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy

from host.core.storable import holds_unstorable


def _may_show_memory(request: HttpRequest) -> bool:
    """Signed in by a token, or as a person the view looked up; a view that never looked
    counts as signed in when the request carries a session. No database read here: in the
    async chain there is no thread to make one in."""
    if getattr(request, "auth", None):
        return True
    user = getattr(request, "_cached_user", None) or getattr(request, "_acached_user", None)
    if user is not None:
        return bool(user.is_authenticated)
    return settings.SESSION_COOKIE_NAME in request.COOKIES


def _never_store(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    if _may_show_memory(request):
        add_never_cache_headers(response)
        response["Cache-Control"] = "no-store, private, max-age=0"
    return response


@sync_and_async_middleware
def no_store_for_signed_in(get_response: Any) -> Any:
    """Pages and API answers for a signed-in person may show memory: never cache them.

    A shared or back-button cache would otherwise keep a person's notes after sign-out.
    """
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            return _never_store(request, await get_response(request))

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        return _never_store(request, get_response(request))

    return middleware


UNSTORABLE_MESSAGE = gettext_lazy(
    "The request holds a NUL character or broken Unicode (a lone surrogate), which cannot "
    "be stored. Remove it and try again."
)


class _TooDeep(Exception):
    """JSON nested deeper than Python's parser goes (a 500 before this check)."""


TOO_DEEP_MESSAGE = gettext_lazy("The JSON in this request is nested too deeply.")


def _requestholds_unstorable(request: HttpRequest) -> bool:
    if any(holds_unstorable(v) for values in request.GET.lists() for v in values[1]):
        return True
    content_type = request.content_type or ""
    if request.method in ("POST", "PUT", "PATCH", "DELETE"):
        if content_type == "application/json":
            try:
                return holds_unstorable(json.loads(request.body or b"null"))
            except (ValueError, UnicodeDecodeError):
                return False  # not JSON: the endpoint answers that itself
            except RecursionError:
                raise _TooDeep from None
        if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            return any(holds_unstorable(v) for values in request.POST.lists() for v in values[1])
    return False


StrOrPromise = str | Promise


def _unstorable_refusal(request: HttpRequest) -> HttpResponseBase | None:
    try:
        if _requestholds_unstorable(request):
            return _refuse(UNSTORABLE_MESSAGE, request)
    except _TooDeep:
        return _refuse(TOO_DEEP_MESSAGE, request)
    return None


def _refuse(message: StrOrPromise, request: HttpRequest) -> HttpResponseBase:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": str(message)}, status=400)
    return HttpResponseBadRequest(str(message), content_type="text/plain")


@sync_and_async_middleware
def refuse_unstorable_text(get_response: Any) -> Any:
    """PostgreSQL stores no NUL and UTF-8 has no lone surrogates: refuse them at the door
    with a clear 400 instead of a database error deep inside (a 500)."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            return _unstorable_refusal(request) or await get_response(request)

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        return _unstorable_refusal(request) or get_response(request)

    return middleware
