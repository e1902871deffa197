"""The Files page shows a file as a person reads it: notes, never entry fence comments."""

from __future__ import annotations

import pytest

from memory_addon.core.entries import render_entry
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope

pytestmark = pytest.mark.django_db


def test_the_rendered_file_shows_the_note_without_its_fence(client, user):
    scope = ensure_user_scope(user)
    entry = render_entry(
        "- tea: prefers green tea",
        entry_id="e1",
        origin="assistant",
        created="2026-12-01",
        source="chat",
    )
    file_write(
        user=user,
        scope=scope,
        path="index.md",
        content=f"- home: Rome\n{entry}",
        base_sha256="",
    )
    client.force_login(user)
    page = client.get(f"/files/{scope.pk}/?path=index.md").content.decode()
    start = page.index('class="md rendered-file"')
    rendered = page[start : page.index("</div>", start)]
    assert "prefers green tea" in rendered and "home: Rome" in rendered
    assert "memory:entry" not in rendered and "sha256=" not in rendered
