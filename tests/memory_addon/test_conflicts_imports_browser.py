"""M23 in a browser: a mem0 export imported from the Inbox waits there with its
provenance; the item that contradicts a saved note shows that note with its date, and
Replace swaps them. At 390 px in German and at 1280 px in English."""

from __future__ import annotations

import json

import pytest

from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.conftest import off_loop
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OLD = "My favourite drink is green tea."
EXPORT = [
    {
        "id": "9b1d0c3e-7f2a-4c5b-8e6d-1a2b3c4d5e6f",
        "memory": "My favourite drink is black coffee.",
        "created_at": "2024-07-26T10:29:36.630547-07:00",
        "user_id": "alex",
        "metadata": None,
    },
    {
        "id": "0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d",
        "memory": "Plays cricket on weekends",
        "created_at": "2024-07-27T08:00:00-07:00",
        "user_id": "alex",
        "metadata": {"category": "sport"},
    },
]


def _setup():
    person = UserFactory()
    scope = ensure_user_scope(person)
    file_write(user=person, scope=scope, path="index.md", content=f"{OLD}\n", base_sha256="")
    return person, scope


def _index(scope) -> str:
    return MemoryFile.objects.get(scope=scope, path="index.md").content


@pytest.mark.parametrize(
    ("width", "language", "replace_label"), [(390, "de", "Ersetzen"), (1280, "en", "Replace")]
)
def test_an_imported_mem0_export_waits_with_provenance_and_replace_swaps_the_old_note(
    sign_in, screenshot, width, language, replace_label
):
    person, scope = off_loop(_setup)
    page = sign_in(person)
    page.context.set_extra_http_headers({"Accept-Language": language})
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/inbox/")
    page.locator("#inbox-import summary").click()
    page.select_option("#import-kind", "mem0")
    page.set_input_files(
        "#import-file",
        {
            "name": "mem0.json",
            "mimeType": "application/json",
            "buffer": json.dumps(EXPORT).encode(),
        },
    )
    # The import answers with a reload of the Inbox (HX-Redirect); the cards pushed live
    # before it would be counted on a page that is about to go.
    with page.expect_navigation():
        page.locator("#inbox-import button[type=submit]").click()
    page.locator("[data-provenance]").nth(1).wait_for()
    assert page.locator("[data-provenance]").count() == 2
    provenance = page.locator("[data-provenance]").all_inner_texts()
    assert all("mem0.json" in text for text in provenance)
    assert any("9b1d0c3e-7f2a-4c5b-8e6d-1a2b3c4d5e6f" in text for text in provenance)
    card = page.locator("article.proposal", has=page.locator("[data-conflict]"))
    assert card.count() == 1
    assert OLD in card.locator(".proposal-old").inner_text()
    assert card.locator("[data-old-date]").inner_text() != ""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(f"{width}-{language}")
    card.get_by_role("button", name=replace_label, exact=True).click()
    page.locator("[data-conflict]").wait_for(state="detached")
    index = off_loop(_index, scope)
    assert "black coffee" in index and OLD not in index
    assert page.locator("article.proposal").count() == 1
