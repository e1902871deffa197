"""`Idempotency-Key` on writes: a client that retries after a lost or failed answer gets
the first answer again instead of storing the same note or message twice.

The key comes in the header, or (for plain page forms, which cannot send headers) in
the `idempotency_key` form field that `{% idempotency_field %}` renders. One key belongs
to one caller (the signed-in person, or the exact Authorization header of a token
call), one method and one path. A keyed request runs in one database transaction that
also stores its answer (`IdempotentAnswer`), so the answer exists exactly when the write
committed: a web worker killed mid-request, a PostgreSQL restart or a dead Redis leave
either both or neither, and the retry replays or runs. A 5xx answer rolls the request
back, so its retry runs. Answers are kept for a day. A key reused with another body is
refused, and a second request while the first still runs is told to wait.

A view that calls another server (a model, embeddings, Qdrant) must not hold a
transaction, and with it a pooled connection, while it waits: its first outside call
(`release_db_connection`) rolls the keyed transaction back and the request runs again
without one; its answer is kept afterwards, so a later retry is still replayed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync, iscoroutinefunction, sync_to_async
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException
from django.utils import timezone
from django.utils.decorators import sync_and_async_middleware
from django.utils.translation import gettext

from host.database_unavailable import database_unavailable_response
from host.keyed_transaction import CallsOut, keyed_transaction
from host.models import IdempotentAnswer

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


# Where a replayed redirect goes, what htmx does with it, and the security headers the
# inner middleware gave the first answer (a replay does not pass through them again).
KEPT_HEADERS = (
    "Location",
    "HX-Location",
    "HX-Redirect",
    "HX-Refresh",
    "HX-Retarget",
    "HX-Reswap",
    "HX-Trigger",
    "Content-Security-Policy",
    "X-Frame-Options",
    "Cache-Control",
    "Vary",
)


def _replay(kept: IdempotentAnswer) -> HttpResponse:
    response = HttpResponse(bytes(kept.content), status=kept.status)
    if kept.content_type:
        response["Content-Type"] = kept.content_type
    for name, value in (kept.headers or {}).items():
        if name in KEPT_HEADERS:
            response[name] = value
    if "Cache-Control" not in response:
        # It may repeat a secret shown once (a new token): never kept by a cache.
        response["Cache-Control"] = "no-store"
    response["Idempotent-Replayed"] = "true"
    return response


def answer_name(caller: str, method: str, path: str, key: str) -> str:
    return hashlib.sha256(f"{caller}\n{method}\n{path}\n{key}".encode()).hexdigest()


def lock_id(name: str) -> int:
    """The advisory lock a keyed request holds while it runs."""
    return int.from_bytes(bytes.fromhex(name[:16]), "big", signed=True)


def _fresh(kept: IdempotentAnswer) -> bool:
    """Kept for less than a day: older answers are replaced by the key's next write."""
    return kept.created_at >= timezone.now() - timedelta(seconds=KEEP_SECONDS)


def _keepable(response: HttpResponse) -> bool:
    return (
        response.status_code < 500
        and not response.streaming
        and len(response.content) <= MAX_KEPT_ANSWER_BYTES
    )


def _answer(name: str, fingerprint: str, response: HttpResponse) -> IdempotentAnswer:
    return IdempotentAnswer(
        name=name,
        fingerprint=fingerprint,
        status=response.status_code,
        content_type=response.get("Content-Type", ""),
        headers={name: response[name] for name in KEPT_HEADERS if name in response},
        content=response.content,
        created_at=timezone.now(),
    )


def _earlier_answer(kept: IdempotentAnswer, fingerprint: str) -> HttpResponse:
    if kept.fingerprint != fingerprint:
        return _refusal(
            422,
            gettext("This %(header)s was used for a request with another body.")
            % {"header": HEADER},
        )
    return _replay(kept)


def _keyed_atomic() -> transaction.Atomic:
    """The request's transaction. The services commit with `atomic(durable=True)`; in a
    keyed request they nest inside it, as inside a test case's (Django's own marker), so
    their writes commit with the kept answer or not at all."""
    block = transaction.atomic()
    block._from_testcase = True  # type: ignore[attr-defined]
    return block


def _run_keyed(
    get_response: Callable[[HttpRequest], HttpResponse],
    request: HttpRequest,
    name: str,
    fingerprint: str,
) -> HttpResponse:
    with _keyed_atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [lock_id(name)])
            (locked,) = cursor.fetchone()
        if not locked:
            return _refusal(
                409,
                gettext("A request with this %(header)s is still running; try again shortly.")
                % {"header": HEADER},
            )
        kept = IdempotentAnswer.objects.filter(name=name).first()
        if kept is not None and _fresh(kept):
            return _earlier_answer(kept, fingerprint)
        with keyed_transaction():
            response = get_response(request)
        if response.status_code >= 500:
            transaction.set_rollback(True)
        elif _keepable(response):
            # Over an expired answer of the same key, or a new row.
            _answer(name, fingerprint, response).save(
                force_update=kept is not None, force_insert=kept is None
            )
        return response


def _run_calling_out(
    get_response: Callable[[HttpRequest], HttpResponse],
    request: HttpRequest,
    name: str,
    fingerprint: str,
) -> HttpResponse:
    for uploads in request.FILES.lists():
        for upload in uploads[1]:
            upload.seek(0)  # the rolled-back run may have read them
    response = get_response(request)
    if _keepable(response):
        try:
            with transaction.atomic():
                _answer(name, fingerprint, response).save(force_insert=True)
        except IntegrityError:
            pass  # a retry that ran alongside kept its answer first
        except (OperationalError, InterfaceError):
            logger.warning("Database unavailable; the answer for a %s was not kept", HEADER)
    return response


def _may_carry_key(request: HttpRequest) -> bool:
    """Whether a key can be in the request at all, read without the database (the
    caller is only looked up for requests that can)."""
    return request.method in WRITE_METHODS and (
        HEADER in request.headers or request.content_type in FORM_TYPES
    )


@sync_and_async_middleware
def idempotency_middleware(get_response: Any) -> Any:
    if iscoroutinefunction(get_response):
        # A keyed request runs in one transaction, which lives in one thread: the keyed
        # path runs in Django's request thread and calls back into the async chain.
        keyed = sync_to_async(_keyed_middleware(async_to_sync(get_response)))

        async def async_middleware(request: HttpRequest) -> Any:
            if not _may_carry_key(request):
                return await get_response(request)
            return await keyed(request)

        return async_middleware

    return _keyed_middleware(get_response)


def _keyed_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        if not _may_carry_key(request):
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
        name = answer_name(caller, request.method or "", request.path, key)
        try:
            return _run_keyed(get_response, request, name, fingerprint)
        except CallsOut:
            pass  # rolled back: run it again outside a transaction
        except (OperationalError, InterfaceError) as error:
            # The key's own statements or the commit: nothing (or, for a lost commit
            # acknowledgement, the answer too) was stored, so the retry is safe.
            return database_unavailable_response(request, error)
        return _run_calling_out(get_response, request, name, fingerprint)

    return middleware


def idempotent_answers_purge() -> int:
    """Drop answers older than a day (a scheduled job)."""
    since = timezone.now() - timedelta(seconds=KEEP_SECONDS)
    deleted, _ = IdempotentAnswer.objects.filter(created_at__lt=since).delete()
    return deleted
