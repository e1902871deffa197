"""German and English (SPEC B7): the browser's language, the account menu's switch, and
a German catalogue that is complete and compiled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation

CATALOGUE = Path(settings.BASE_DIR) / "locale" / "de" / "LC_MESSAGES" / "django.po"
ENTRY = re.compile(r'^msgid "(.+)"\nmsgstr "(.*)"$', re.MULTILINE)


def _entries() -> list[tuple[str, str]]:
    text = CATALOGUE.read_text(encoding="utf-8")
    return [(msgid, msgstr) for msgid, msgstr in ENTRY.findall(text)]


def test_every_german_string_is_translated():
    missing = [msgid for msgid, msgstr in _entries() if not msgstr]
    assert _entries(), "the German catalogue is empty"
    assert missing == []


def test_the_compiled_catalogue_matches_the_source():
    """The .mo is committed (no gettext tools needed to run): it must not lag the .po."""
    with translation.override("de"):
        stale = [
            msgid
            for msgid, msgstr in _entries()
            if "\\" not in msgid and translation.gettext(msgid) != msgstr
        ]
    assert stale == []


@pytest.mark.django_db
def test_the_browser_language_picks_german(client, user):
    client.force_login(user)
    page = client.get("/memory/", headers={"accept-language": "de-DE,de;q=0.9"})
    assert '<html lang="de">' in page.text
    assert ">Gedächtnis</a>" in page.text
    assert ">Abmelden</button>" in page.text


@pytest.mark.django_db
def test_the_switch_overrides_the_browser(client, user):
    client.force_login(user)
    answer = client.post("/i18n/setlang/", {"language": "en", "next": "/memory/"})
    assert answer.status_code == 302
    assert answer["Location"] == "/memory/"
    page = client.get("/memory/", headers={"accept-language": "de"})
    assert '<html lang="en">' in page.text
    assert ">Memory</a>" in page.text


@pytest.mark.django_db
def test_the_switch_refuses_a_foreign_next_address(client, user):
    client.force_login(user)
    answer = client.post("/i18n/setlang/", {"language": "de", "next": "https://evil.example/"})
    assert answer.status_code == 302
    assert answer["Location"] == "/"
