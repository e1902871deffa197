"""The JSON API: one NinjaAPI, one router per app, domain errors mapped once."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.http.request import RawPostDataException
from ninja import NinjaAPI
from ninja.errors import AuthenticationError

from accounts.api import router as accounts_router
from accounts.auth import TokenAuth, session_auth
from accounts.bearer import unauthenticated_response
from addons.api import router as addons_router
from addons.api import skills_router
from chat.api import router as chat_router
from host.errors import Refusal
from knowledge.api import router as knowledge_router
from memory_addon.api import chats_router
from memory_addon.api import router as memory_router

api = NinjaAPI(
    title="Memory host API",
    version="1",
    description=(
        "Memory notes, proposals, collections and add-on settings. "
        "Browsers use the session cookie (with the CSRF header); scripts use a personal token."
    ),
    auth=[TokenAuth(), session_auth],
    urls_namespace="api",
)
api.add_router("/", accounts_router)
api.add_router("/memory", memory_router)
api.add_router("/chats", chats_router)
api.add_router("/addons", addons_router)
api.add_router("/skills", skills_router)
api.add_router("/knowledge", knowledge_router)
api.add_router("/chat", chat_router)


@api.exception_handler(Refusal)
def refused(request: HttpRequest, exc: Refusal) -> HttpResponse:
    return api.create_response(request, {"detail": exc.message, **exc.details}, status=exc.status)


@api.exception_handler(AuthenticationError)
def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return unauthenticated_response(request)


@api.exception_handler(ValidationError)
def validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    if hasattr(exc, "message_dict"):
        detail = "; ".join(
            f"{field}: {' '.join(msgs)}" if field != "__all__" else " ".join(msgs)
            for field, msgs in exc.message_dict.items()
        )
    else:
        detail = " ".join(exc.messages)
    return api.create_response(request, {"detail": detail}, status=400)


@api.exception_handler(RawPostDataException)
def body_not_json(request: HttpRequest, exc: RawPostDataException) -> HttpResponse:
    # A form post's fields were read at the door (unstorable text), so a JSON body
    # parameter finds the stream spent: the request was not JSON to begin with.
    return api.create_response(
        request,
        {"detail": "This endpoint takes a JSON body: send it with Content-Type: application/json."},
        status=415,
    )


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return api.create_response(request, {"detail": "Not found."}, status=404)
