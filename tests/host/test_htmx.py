"""One htmx check (issue 28): every app tells an htmx request by django-htmx's `request.htmx`,
so the same HX-Request header gets the partial in each, and a plain request the whole page."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from knowledge import services as knowledge_services

ROOT = Path(__file__).resolve().parent.parent.parent
APPS = [
    "accounts",
    "addons",
    "bridges",
    "chat",
    "config",
    "host",
    "knowledge",
    "learning",
    "memory_addon",
]


def _chat_list(user):
    return "get", reverse("chat") + "?partial=list", {}


def _knowledge_refused_upload(user):
    store = knowledge_services.store_create(owner=user, name="Notes", provider="none")
    return "post", f"/knowledge/{store.pk}/uploads/", {}


def _inbox_reject_all(user):
    return "post", reverse("inbox_decide_all"), {"decision": "reject"}


@pytest.mark.django_db
@pytest.mark.parametrize("request_for", [_chat_list, _knowledge_refused_upload, _inbox_reject_all])
def test_an_htmx_request_gets_the_partial_and_a_plain_one_the_page(client, user, request_for):
    client.force_login(user)
    method, url, data = request_for(user)
    page = getattr(client, method)(url, data)
    partial = getattr(client, method)(url, data, headers={"HX-Request": "true"})
    assert b"<html" in page.content
    assert b"<html" not in partial.content
    assert partial.status_code == page.status_code


def test_no_view_reads_the_htmx_header_itself():
    readers = [
        str(path.relative_to(ROOT))
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "HX-Request" in (text := path.read_text()) or 'getattr(request, "htmx"' in text
    ]
    assert readers == []
