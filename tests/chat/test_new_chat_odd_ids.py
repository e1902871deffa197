"""A new chat ignores collection and profile ids that are not plain digits."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_chat_ids_in_superscript_digits_are_ignored_not_a_500(client, user):
    client.force_login(user)
    answer = client.post("/chat/new/", {"stores": ["\u00b2", "9" * 40], "profile": "\u00b2"})
    assert answer.status_code == 302
