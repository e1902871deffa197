"""A note refused because the index is full: the person's words, their notes, their text kept."""

from __future__ import annotations

import pytest

from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

FULL = "".join(f"- n{i}: " + "x" * 270 + "\n" for i in range(7))


@pytest.fixture
def full(client, user):
    client.force_login(user)
    scope = ensure_user_scope(user)
    file_write(user=user, scope=scope, path="index.md", content=FULL, base_sha256="")
    return scope


def test_an_over_cap_add_answers_422_with_the_notes_and_without_the_models_list(client, full):
    response = client.post(f"/memory/{full.pk}/entries/", {"text": "lang: " + "z" * 200})
    assert response.status_code == 422
    html = response.content.decode()
    assert "This memory is full" in html and 'id="over-cap"' in html
    assert "Current entries" not in html and "[your text]" not in html
    assert html.count('name="keep_for" value="add"') == 7
    assert 'value="lang: ' + "z" * 200 + '"' in html


def test_a_delete_from_the_full_list_keeps_the_text_and_is_owner_checked(client, full, user):
    from memory_addon.core import entries
    from memory_addon.services.notes import note_key

    row = MemoryFile.objects.get(scope=full, path="index.md")
    first = entries.parse_items(row.content)[0]
    kept = "<b>lang</b>: Italian"
    response = client.post(
        f"/memory/{full.pk}/notes/",
        {
            "action": "delete",
            "key": note_key(first),
            "base_sha256": row.sha256,
            "keep_for": "add",
            "keep_text": kept,
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'value="&lt;b&gt;lang&lt;/b&gt;: Italian"' in html and "<b>lang</b>" not in html
    assert "- n0:" not in MemoryFile.objects.get(scope=full, path="index.md").content

    other = UserFactory()
    client.force_login(other)
    response = client.post(f"/memory/{full.pk}/notes/", {"action": "delete", "keep_for": "add"})
    assert response.status_code == 404
