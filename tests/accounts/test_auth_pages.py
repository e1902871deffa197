from __future__ import annotations

import pytest

from accounts.models import User
from accounts.services import first_admin_ensure, site_settings_get
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def test_pages_redirect_anonymous_visitors_to_sign_in(client):
    response = client.get("/memory/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/sign-in/")


def test_sign_in_with_a_wrong_password_shows_an_error(client, user):
    response = client.post("/accounts/sign-in/", {"username": user.username, "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_sign_in_then_sign_out(client, user):
    response = client.post("/accounts/sign-in/", {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/chat/").status_code == 200
    assert client.post("/accounts/sign-out/").status_code == 302
    assert client.get("/chat/").status_code == 302


def test_sign_up_creates_an_account_and_signs_in(client):
    response = client.post(
        "/accounts/sign-up/",
        {
            "username": "newcomer",
            "email": "n@example.org",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )
    assert response.status_code == 302
    assert User.objects.filter(username="newcomer").exists()
    assert client.get("/chat/").status_code == 200


def test_sign_up_can_be_turned_off_by_an_admin(client):
    site = site_settings_get()
    site.signup_enabled = False
    site.save()
    response = client.post(
        "/accounts/sign-up/",
        {"username": "blocked", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 403
    assert not User.objects.filter(username="blocked").exists()
    assert "Create one" not in client.get("/accounts/sign-in/").content.decode()


def test_first_admin_is_created_once():
    created = first_admin_ensure()
    assert created is not None
    assert created.password
    admin = User.objects.get(username=created.username)
    assert admin.is_superuser
    assert admin.check_password(created.password)
    assert first_admin_ensure() is None


def test_first_admin_is_not_created_when_an_admin_exists():
    UserFactory(is_superuser=True, is_staff=True)
    assert first_admin_ensure() is None
    assert User.objects.count() == 1


def test_logout_by_get_is_refused(client, user):
    client.force_login(user)
    assert client.get("/accounts/sign-out/").status_code == 405
