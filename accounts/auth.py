from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import APIKeyCookie, HttpBearer

from accounts.models import ApiToken, User
from accounts.services import api_token_find
from accounts.token_access import READ_WRITE, request_refusal


def signed_in_user(request: HttpRequest) -> User:
    """The request's user as our model (API auth first, then the session)."""
    user = getattr(request, "auth", None) or request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise PermissionDenied
    return user


def token_scope(request: HttpRequest) -> str:
    """The scope of the request's API token; a signed-in browser session reads and writes."""
    token: ApiToken | None = getattr(request, "api_token", None)
    return token.scope if token is not None else READ_WRITE


def token_reads_own_rule_files(request: HttpRequest) -> bool:
    """Whether the request's API token says its client loads its own rule files."""
    token: ApiToken | None = getattr(request, "api_token", None)
    return token is not None and token.reads_own_rule_files


class TokenAuth(HttpBearer):
    """`Authorization: Bearer mh_…` with a personal API token, limited to its scope."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        row = api_token_find(token)
        if row is None:
            return None
        api_path = request.path_info.removeprefix("/api")
        refusal = request_refusal(row.scope, request.method or "GET", api_path)
        if refusal:
            raise HttpError(403, refusal)
        request.api_token = row  # type: ignore[attr-defined]
        return row.user


class SessionAuth(APIKeyCookie):
    """The browser's session, with ninja's CSRF check only for a signed-in session.

    ninja's own `django_auth` checks CSRF first, so a script with a bad or revoked token
    was told "CSRF check Failed" (403) instead of being asked for a token (401).
    """

    param_name = settings.SESSION_COOKIE_NAME

    def _get_key(self, request: HttpRequest) -> str | None:
        if not request.user.is_authenticated:
            return None
        return super()._get_key(request)

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        return request.user if request.user.is_authenticated else None


session_auth = SessionAuth()
