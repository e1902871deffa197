"""`Idempotency-Key` on writes: a client that retries after a lost or failed answer gets
the first answer again instead of storing the same note or message twice.

The key comes in the header, or (for plain page forms, which cannot send headers) in
the `idempotency_key` form field that `{% idempotency_field %}` renders. One key belongs
to one caller (the signed-in person, or the exact Authorization header of a token
call), one method and one path; its answer is kept for a day, a failed one too (the
write may have committed before the failure: a retry with a new key is the caller's
choice), except a 503, which says nothing was done (the database was away): it frees
the key for the retry. A key reused with another body is refused, and a second request while the
first still runs is told to wait. Without the cache (Redis away) requests run as if no
key was given.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import TypedDict

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException
from django.utils.translation import gettext

logger = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
FORM_FIELD = "idempotency_key"
FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_KEY_CHARS = 255
KEEP_SECONDS = 24 * 3600
# Bodies larger than this (uploads) are not fingerprinted: the key is ignored for them.
MAX_FINGERPRINT_BYTES = 1_048_576
MAX_KEPT_ANSWER_BYTES = 256 * 1024


class Kept(TypedDict):
    fingerprint: str
    done: bool
    status: int
    content_type: str
    content: bytes


def _caller(request: HttpRequest) -> str | None:
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    authorization = request.headers.get("Authorization", "")
    if authorization:
        return "auth:" + hashlib.sha256(authorization.encode()).hexdigest()
    return None


def _fingerprint(request: HttpRequest) -> str:
    try:
        return hashlib.sha256(request.body).hexdigest()
    except RawPostDataException:
        # A multipart form an earlier middleware read as fields: its fields stand for it.
        fields = sorted((name, request.POST.getlist(name)) for name in request.POST)
        files = sorted(
            (name, f.name, f.size) for name in request.FILES for f in request.FILES.getlist(name)
        )
        return hashlib.sha256(repr((fields, files)).encode()).hexdigest()


def _refusal(status: int, message: str) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


def _replay(kept: Kept) -> HttpResponse:
    response = HttpResponse(kept["content"], status=kept["status"])
    if kept["content_type"]:
        response["Content-Type"] = kept["content_type"]
    response["Idempotent-Replayed"] = "true"
    return response


def idempotency_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        if request.method not in WRITE_METHODS:
            return get_response(request)
        caller = _caller(request)
        length = request.headers.get("Content-Length", "")
        if caller is None or not length.isdigit() or int(length) > MAX_FINGERPRINT_BYTES:
            # Anonymous callers, and bodies of unknown or upload size, run without a key.
            return get_response(request)
        key = request.headers.get(HEADER)
        if key is None and request.content_type in FORM_TYPES:
            key = request.POST.get(FORM_FIELD)
        if key is None:
            return get_response(request)
        fingerprint = _fingerprint(request)
        if not key or len(key) > MAX_KEY_CHARS or not key.isprintable():
            return _refusal(
                400,
                gettext("%(header)s must be 1 to %(limit)s printable characters.")
                % {"header": HEADER, "limit": MAX_KEY_CHARS},
            )
        name = (
            "idempotency:"
            + hashlib.sha256(
                f"{caller}\n{request.method}\n{request.path}\n{key}".encode()
            ).hexdigest()
        )
        pending: Kept = {
            "fingerprint": fingerprint,
            "done": False,
            "status": 0,
            "content_type": "",
            "content": b"",
        }
        try:
            reserved = cache.add(name, pending, timeout=settings.IDEMPOTENCY_PENDING_SECONDS)
            kept: Kept | None = None if reserved else cache.get(name)
        except Exception:  # no cache: run the request as if it had no key
            logger.warning("Idempotency cache unavailable; %s ignored", HEADER)
            return get_response(request)
        if kept is not None:
            if kept["fingerprint"] != fingerprint:
                return _refusal(
                    422,
                    gettext("This %(header)s was used for a request with another body.")
                    % {"header": HEADER},
                )
            if not kept["done"]:
                return _refusal(
                    409,
                    gettext("A request with this %(header)s is still running; try again shortly.")
                    % {"header": HEADER},
                )
            return _replay(kept)
        response = get_response(request)
        _keep(name, fingerprint, response)
        return response

    return middleware


def _keep(name: str, fingerprint: str, response: HttpResponse) -> None:
    try:
        # A 503 says the request was not carried out: the retry with this key must run.
        if (
            response.status_code == 503
            or response.streaming
            or len(response.content) > MAX_KEPT_ANSWER_BYTES
        ):
            cache.delete(name)
            return
        kept: Kept = {
            "fingerprint": fingerprint,
            "done": True,
            "status": response.status_code,
            "content_type": response.get("Content-Type", ""),
            "content": response.content,
        }
        cache.set(name, kept, timeout=KEEP_SECONDS)
    except Exception:
        logger.warning("Idempotency cache unavailable; the answer was not kept")
