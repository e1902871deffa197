"""A schedule refused on a German page says why in German."""

from __future__ import annotations

import pytest

GERMAN = {"accept-language": "de-DE,de;q=0.9"}


@pytest.mark.django_db
def test_a_schedule_with_an_impossible_time_is_refused_in_german(client, user):
    client.force_login(user)
    answer = client.post(
        "/chat/schedules/",
        {"name": "Morgens", "prompt": "Hallo", "daily_at": "25:99"},
        headers=GERMAN,
        follow=True,
    )
    assert "Geben Sie eine gültige Uhrzeit an." in answer.text
    assert "Give a valid time." not in answer.text
