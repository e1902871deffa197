from __future__ import annotations

from django.http import HttpRequest

from config.theme import theme_of
from memory_addon.models import Proposal


def inbox(request: HttpRequest) -> dict[str, object]:
    """The pending-proposal count shown in the navigation (kept live over the websocket)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"inbox_count": Proposal.objects.filter(user=user, state=Proposal.State.PENDING).count()}


def theme(request: HttpRequest) -> dict[str, object]:
    return {"theme": theme_of(request)}
