"""JSON nested deeper than the parser allows is a 400 at the door, never a 500."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("path", ["/healthz", "/accounts/sign-in/", "/api/memory/notes"])
def test_json_nested_too_deep_is_a_400_not_a_500(client, path):
    response = client.post(path, DEEP, content_type="application/json")
    assert response.status_code == 400
    assert b"nested too deeply" in response.content
