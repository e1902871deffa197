from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import HttpBearer

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
