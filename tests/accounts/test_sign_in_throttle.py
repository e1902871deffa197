"""Wrong passwords pause one account at one address; its owner elsewhere signs in."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings

from accounts.throttle import pause_after
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _sign_in(client, username, password, ip):
    return client.post(
        "/accounts/sign-in/", {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def test_a_stranger_cannot_lock_the_owner_out(client):
    owner = UserFactory()
    for _ in range(10):
        _sign_in(client, owner.username, "wrong", ip="198.51.100.10")
    assert _sign_in(client, owner.username, PASSWORD, ip="198.51.100.10").status_code == 429
    response = _sign_in(client, owner.username, PASSWORD, ip="203.0.113.20")
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(owner.pk)


def test_each_wrong_password_while_paused_doubles_the_pause(settings):
    settings.AXES_FAILURE_LIMIT = 5
    settings.SIGNIN_COOLOFF_HOURS = 0.25
    settings.SIGNIN_COOLOFF_MAX_HOURS = 2
    assert pause_after(1) == pause_after(5) == timedelta(minutes=15)
    assert pause_after(6) == timedelta(minutes=30)
    assert pause_after(7) == timedelta(hours=1)
    assert pause_after(9) == pause_after(10**6) == timedelta(hours=2)


def test_wrong_passwords_while_paused_lengthen_the_recorded_pause(client):
    from axes.models import AccessAttempt

    owner = UserFactory()
    for _ in range(settings.AXES_FAILURE_LIMIT + 2):
        _sign_in(client, owner.username, "wrong", ip="198.51.100.11")
    attempt = AccessAttempt.objects.get(username=owner.username)
    assert attempt.failures_since_start == settings.AXES_FAILURE_LIMIT + 2
    paused = attempt.expiration.expires_at - attempt.attempt_time
    assert paused == pause_after(settings.AXES_FAILURE_LIMIT + 2) > pause_after(0)
