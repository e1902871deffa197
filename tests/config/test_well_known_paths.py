"""Paths browsers and habits ask for lead somewhere: the icon and the sign-in page."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_favicon_ico_leads_to_the_sites_icon(client):
    answer = client.get("/favicon.ico")
    assert answer.status_code == 301
    assert answer["Location"].endswith("favicon.svg")
    assert client.get(answer["Location"]).status_code in (200, 304)


def test_accounts_login_leads_to_sign_in_keeping_next(client):
    answer = client.get("/accounts/login/?next=/memory/")
    assert answer.status_code == 302
    assert answer["Location"] == "/accounts/sign-in/?next=/memory/"
    assert client.get(answer["Location"]).status_code == 200
