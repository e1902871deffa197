"""Django's middleware with their hooks run on the event loop.

Under ASGI, Django runs each hook of a `MiddlewareMixin` middleware in a thread of its
own hop (`sync_to_async`): a dozen hops a request, each a trip between the event loop
and a thread, which cost more than the hooks. These hooks read headers and cookies and
set attributes; the few that can reach the database or the cache (saving a session that
was touched, storing messages that were used, a CSRF check that can render its refusal
page) still take the hop, and only when they can.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, sync_to_async
from csp.middleware import CSPMiddleware as _CSPMiddleware
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as _AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as _MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as _SessionMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware as _XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware as _CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware as _CsrfViewMiddleware
from django.middleware.locale import LocaleMiddleware as _LocaleMiddleware
from django.middleware.security import SecurityMiddleware as _SecurityMiddleware

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class InlineHooks:
    """Mixed into a `MiddlewareMixin` subclass: in the async chain its hooks run inline,
    except where `request_needs_thread` / `response_needs_thread` say they may block."""

    get_response: Any
    process_request: Any
    process_response: Any

    def request_needs_thread(self, request: HttpRequest) -> bool:
        return False

    def response_needs_thread(self, request: HttpRequest) -> bool:
        return False

    async def __acall__(self, request: HttpRequest) -> Any:
        response = None
        if hasattr(self, "process_request"):
            if self.request_needs_thread(request):
                response = await sync_to_async(self.process_request)(request)
            else:
                response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            if self.response_needs_thread(request):
                response = await sync_to_async(self.process_response)(request, response)
            else:
                response = self.process_response(request, response)
        return response


class SecurityMiddleware(InlineHooks, _SecurityMiddleware):
    pass


class SessionMiddleware(InlineHooks, _SessionMiddleware):
    def response_needs_thread(self, request: HttpRequest) -> bool:
        # Only a session that was read can have changed and need saving.
        session = getattr(request, "session", None)
        return session is not None and (session.accessed or settings.SESSION_SAVE_EVERY_REQUEST)


class LocaleMiddleware(InlineHooks, _LocaleMiddleware):
    pass


class CommonMiddleware(InlineHooks, _CommonMiddleware):
    pass


class CsrfViewMiddleware(InlineHooks, _CsrfViewMiddleware):
    def __init__(self, get_response: Any) -> None:
        super().__init__(get_response)
        if iscoroutinefunction(get_response):
            self.process_view = self._async_process_view  # type: ignore[method-assign, assignment]

    async def _async_process_view(
        self, request: HttpRequest, callback: Any, callback_args: Any, callback_kwargs: Any
    ) -> HttpResponseBase | None:
        check = super().process_view
        if (
            request.method in SAFE_METHODS
            or getattr(callback, "csrf_exempt", False)
            or getattr(request, "_dont_enforce_csrf_checks", False)
        ):
            return check(request, callback, callback_args, callback_kwargs)
        # A refusal renders the failure page, which may read the person.
        return await sync_to_async(check)(request, callback, callback_args, callback_kwargs)


class AuthenticationMiddleware(InlineHooks, _AuthenticationMiddleware):
    pass


class MessageMiddleware(InlineHooks, _MessageMiddleware):
    def response_needs_thread(self, request: HttpRequest) -> bool:
        # Messages that were read or added are stored in the session or a cookie.
        storage = getattr(request, "_messages", None)
        return storage is not None and (storage.used or storage.added_new)


class XFrameOptionsMiddleware(InlineHooks, _XFrameOptionsMiddleware):
    pass


class CSPMiddleware(InlineHooks, _CSPMiddleware):
    pass
