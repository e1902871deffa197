from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.security import HttpBearer

from accounts.models import User
from accounts.services import api_token_user


def signed_in_user(request: HttpRequest) -> User:
    """The request's user as our model (API auth first, then the session)."""
    user = getattr(request, "auth", None) or request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise PermissionDenied
    return user


class TokenAuth(HttpBearer):
    """`Authorization: Bearer mh_…` with a personal API token."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        return api_token_user(token)
