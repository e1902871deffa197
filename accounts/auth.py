from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from accounts.models import User


def signed_in_user(request: HttpRequest) -> User:
    """The request's user as our model (API auth first, then the session)."""
    user = getattr(request, "auth", None) or request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise PermissionDenied
    return user
