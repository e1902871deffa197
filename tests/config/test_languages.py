"""German and English (SPEC B7): the browser's language, the account menu's switch, and
a German catalogue that is complete and compiled."""

from __future__ import annotations

import ast
import gettext
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation

ROOT = Path(settings.BASE_DIR)
SKIP = {".venv", ".data", "node_modules"}
CATALOGUES = sorted(
    path
    for path in ROOT.rglob("locale/de/LC_MESSAGES/django.po")
    if not SKIP.intersection(path.relative_to(ROOT).parts)
)
PLACEHOLDER = re.compile(r"%\((\w+)\)[sdr]")


def _unquote(line: str) -> str:
    return ast.literal_eval(line)  # a .po string is a C string, close enough to Python's


def _entries(path: Path) -> list[tuple[str, list[str]]]:
    """(msgid, [msgstr, ...]) of every message; plural forms give several msgstr."""
    entries = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        msgid: str | None = None
        context = ""
        strings: list[str] = []
        fuzzy = False
        for line in block.splitlines():
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            elif line.startswith("msgctxt "):
                context = _unquote(line[8:])
            elif line.startswith("msgid "):
                # A message with a context is stored under "context\x04msgid" in the .mo.
                msgid = (context + "\x04" if context else "") + _unquote(line[6:])
            elif line.startswith("msgstr"):
                strings.append(_unquote(line.split(" ", 1)[1]))
            elif line.startswith('"') and strings:
                strings[-1] += _unquote(line)
        if msgid:
            entries.append((msgid, [] if fuzzy else strings))
    return entries


def test_every_catalogue_of_the_repo_is_found():
    names = {str(path.relative_to(ROOT)) for path in CATALOGUES}
    assert "locale/de/LC_MESSAGES/django.po" in names
    assert "bridges/locale/de/LC_MESSAGES/django.po" in names


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_german_string_is_translated(catalogue: Path):
    entries = _entries(catalogue)
    assert entries, "the German catalogue is empty"
    missing = [msgid for msgid, strings in entries if not strings or not all(strings)]
    assert missing == []


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda path: str(path.relative_to(ROOT)))
def test_translations_keep_every_placeholder(catalogue: Path):
    """A German text that drops or renames %(name)s would crash or lose the value."""
    broken = [
        msgid
        for msgid, strings in _entries(catalogue)
        for text in strings
        if set(PLACEHOLDER.findall(text)) - set(PLACEHOLDER.findall(msgid))
        or (len(strings) == 1 and set(PLACEHOLDER.findall(msgid)) != set(PLACEHOLDER.findall(text)))
    ]
    assert broken == []


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_compiled_catalogue_matches_the_source(catalogue: Path):
    """The .mo is committed (no gettext tools needed to run): it must not lag the .po."""
    with catalogue.with_suffix(".mo").open("rb") as compiled:
        table = gettext.GNUTranslations(compiled)
    stale = [
        msgid
        for msgid, strings in _entries(catalogue)
        if len(strings) == 1 and table.gettext(msgid) != strings[0]
    ]
    assert stale == []


def test_the_site_speaks_german_with_the_root_catalogue():
    with translation.override("de"):
        assert translation.gettext("Find a note") == "Notiz suchen"
        assert translation.ngettext(
            "%(n)s saved setting value", "%(n)s saved setting values", 2
        ) == ("%(n)s gespeicherte Einstellungswerte")


@pytest.mark.django_db
def test_the_browser_language_picks_german(client, user):
    client.force_login(user)
    page = client.get("/memory/", headers={"accept-language": "de-DE,de;q=0.9"})
    assert '<html lang="de" ' in page.text
    assert ">Gedächtnis</a>" in page.text
    assert ">Abmelden</button>" in page.text


@pytest.mark.django_db
def test_the_switch_overrides_the_browser(client, user):
    client.force_login(user)
    answer = client.post("/i18n/setlang/", {"language": "en", "next": "/memory/"})
    assert answer.status_code == 302
    assert answer["Location"] == "/memory/"
    page = client.get("/memory/", headers={"accept-language": "de"})
    assert '<html lang="en" ' in page.text
    assert ">Memory</a>" in page.text


@pytest.mark.django_db
def test_the_switch_refuses_a_foreign_next_address(client, user):
    client.force_login(user)
    answer = client.post("/i18n/setlang/", {"language": "de", "next": "https://evil.example/"})
    assert answer.status_code == 302
    assert answer["Location"] == "/"


@pytest.mark.django_db
def test_a_refusal_from_a_service_is_in_the_persons_language(client, user):
    client.force_login(user)
    german = {"accept-language": "de-DE,de;q=0.9"}
    answer = client.post("/chat/new/", {"text": "Hallo"}, headers=german, follow=True)
    assert "Legen Sie unter Einstellungen ein KI-Profil an" in answer.text
    answer = client.post("/chat/new/", {"text": "Hello"}, follow=True)
    assert "Add an AI profile under Settings before you start a conversation." in answer.text


def test_scan_statuses_and_skip_reasons_are_shown_in_german():
    from knowledge.templatetags.scan_text import scan_reason, scan_status

    with translation.override("de"):
        assert scan_status("unchanged") == "unverändert"
        assert scan_reason("binary content (NUL bytes)") == "binärer Inhalt (NUL-Bytes)"
        assert scan_reason("larger than the limit of 5 MiB") == "größer als die Grenze von 5 MiB"
        assert scan_reason("already in this collection as a.md") == (
            "bereits in dieser Sammlung als a.md"
        )
        assert scan_reason("something new") == "something new"  # unknown: shown as stored
    with translation.override("en"):
        assert scan_status("unchanged") == "unchanged"


@pytest.mark.django_db
def test_path_rules_and_secret_refusals_are_in_the_persons_language(client, user):
    """The pure path rules and the secret guard have no Django; their refusals are
    translated where they are shown."""
    from memory_addon.services.scopes import ensure_user_scope

    scope = ensure_user_scope(user)
    client.force_login(user)
    german = {"accept-language": "de-DE,de;q=0.9"}
    url = f"/api/memory/scopes/{scope.pk}/file"
    hidden = client.put(
        f"{url}?path=.hidden/a.md",
        {"content": "x"},
        content_type="application/json",
        headers=german,
    )
    assert hidden.status_code == 400
    assert hidden.json()["detail"] == "Versteckte Namen wie '.hidden' sind nicht erlaubt."
    english = client.put(
        f"{url}?path=.hidden/a.md", {"content": "x"}, content_type="application/json"
    )
    assert english.json()["detail"] == "Hidden names such as '.hidden' are not allowed."
    secret = client.put(
        f"{url}?path=keys.md",
        {"content": "ok\npassword = Velvet-Harbor-19\n"},
        content_type="application/json",
        headers=german,
    )
    assert secret.status_code == 400
    assert secret.json()["detail"] == (
        "keys.md: Zeile 2 scheint ein Geheimnis zu enthalten (ein Passwort oder Token mit "
        "zugewiesenem Wert). Entfernen Sie diese Zeile und versuchen Sie es erneut."
    )


@pytest.mark.django_db
@pytest.mark.parametrize("page_language", ["en", "de"])
def test_the_language_switch_names_each_language_in_its_own_language(client, user, page_language):
    import re

    client.force_login(user)
    page = client.get("/memory/", headers={"Accept-Language": page_language}).content.decode()
    switch = page[page.index('id="language-switch"') : page.index("</select>")]
    names = re.findall(r'lang="(\w+)"[^>]*>([^<]+)</option>', switch)
    assert dict(names) == {"en": "English", "de": "Deutsch"}


@pytest.mark.django_db
def test_the_admin_names_the_apps_in_german(client):
    from tests.factories import UserFactory

    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    page = client.get("/admin/", headers={"accept-language": "de"}).content.decode()
    for name in ("Konten und Organisationen", "Kurzgedächtnis", "Wissenssammlungen"):
        assert name in page
    assert "Accounts and organizations" not in page
