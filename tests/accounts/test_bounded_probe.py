"""Test connection ends at its whole-call limit even while the headers trickle in."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts import probe
from accounts.probe import ConnectionProblem, server_models


@pytest.mark.django_db
def test_a_server_trickling_its_headers_is_given_up_on_at_the_whole_call_limit(
    slow_headers, monkeypatch
):
    monkeypatch.setattr(probe, "TOTAL_SECONDS", 0.5)
    with pytest.raises(ConnectionProblem, match=r"0\.5 seconds"):
        server_models(base_url=slow_headers.base_url)
    assert slow_headers.sent < 50


@pytest.mark.django_db
def test_the_test_connection_button_answers_with_the_reason_while_headers_trickle(
    slow_headers, monkeypatch, client, user
):
    monkeypatch.setattr(probe, "TOTAL_SECONDS", 0.5)
    client.force_login(user)
    response = client.post(
        reverse("accounts:ai_profile_new"),
        {"action": "test", "base_url": slow_headers.base_url, "model": "m"},
    )
    assert response.status_code == 400
    assert "did not answer within 0.5 seconds" in response.content.decode()
