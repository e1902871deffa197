"""The theme switch: a cookie that every page (and the admin) renders, set by a CSRF-checked
form that only sends people back to this site."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_switch_keeps_the_choice_and_returns_to_the_page(client):
    response = client.post("/theme/", {"theme": "dark", "next": "/memory/"})
    assert response.status_code == 302
    assert response["Location"] == "/memory/"
    cookie = response.cookies["theme"]
    assert cookie.value == "dark"
    assert cookie["samesite"] == "Lax"
    assert cookie["httponly"]


def test_every_page_renders_the_chosen_theme(client):
    client.force_login(UserFactory())
    client.cookies["theme"] = "light"
    page = client.get("/memory/").content.decode()
    assert '<html lang="en" data-theme="light">' in page
    assert '<option value="light" selected>' in page


@pytest.mark.parametrize("cookie", ["", "purple", "dark; x", "<script>"])
def test_an_unknown_theme_cookie_is_the_system_theme(client, cookie):
    client.cookies["theme"] = cookie
    page = client.get("/accounts/sign-in/").content.decode()
    assert 'data-theme="system"' in page
    assert "purple" not in page and "<script>" not in page.split("<body", 1)[0]


def test_a_theme_outside_the_choices_is_refused_naming_them(client):
    response = client.post("/theme/", {"theme": "purple", "next": "/"})
    assert response.status_code == 400
    assert "theme must be one of: system, light, dark" in response.content.decode()
    assert "theme" not in response.cookies


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", ""])
def test_the_switch_never_sends_people_to_another_site(client, target):
    response = client.post("/theme/", {"theme": "light", "next": target})
    assert response["Location"] == "/"


def test_the_switch_needs_the_csrf_token():
    client = Client(enforce_csrf_checks=True)
    assert client.post("/theme/", {"theme": "dark"}).status_code == 403
    assert client.get("/theme/").status_code == 405


def test_the_admin_follows_the_sites_theme_without_a_toggle_of_its_own(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    client.cookies["theme"] = "dark"
    page = client.get("/admin/").content.decode()
    assert 'src="/static/js/admin-theme.js" data-theme="dark"' in page
    assert page.index("admin-theme.js") < page.index("admin/js/theme.js")
    assert "theme-toggle" not in page
