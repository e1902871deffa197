"""Small request/response policies of the host."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import add_never_cache_headers


def no_store_for_signed_in(
    get_response: Callable[[HttpRequest], HttpResponseBase],
) -> Callable[[HttpRequest], HttpResponseBase]:
    """Pages and API answers for a signed-in person may show memory: never cache them.

    A shared or back-button cache would otherwise keep a person's notes after sign-out.
    """

    def middleware(request: HttpRequest) -> HttpResponseBase:
        response = get_response(request)
        user = getattr(request, "user", None)
        if (user is not None and user.is_authenticated) or getattr(request, "auth", None):
            add_never_cache_headers(response)
            response["Cache-Control"] = "no-store, private, max-age=0"
        return response

    return middleware
