"""A secret made by a POST, shown once on the page the POST redirects to.

The secret waits in the server-side session, never in a URL, so a reload neither
repeats the POST (a second token or binding) nor shows the secret again.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

SESSION_KEY = "shown-once"


def show_once(request: HttpRequest, page: str, object_id: int, secret: str) -> HttpResponse:
    request.session[SESSION_KEY] = {"page": page, "id": object_id, "secret": secret}
    return redirect(f"{reverse(page)}?shown={object_id}")


def take_shown(request: HttpRequest, page: str) -> tuple[int, str] | None:
    """The (id, secret) waiting for this page's GET, taken out of the session."""
    if request.method != "GET":
        return None
    once = request.session.pop(SESSION_KEY, None)
    if not once or once.get("page") != page or str(once.get("id")) != request.GET.get("shown"):
        return None
    return int(once["id"]), str(once["secret"])
