"""The built-in Short memory add-on's own words (its name, description, settings and
skills) show in German on a German page; an outside add-on's text shows as written."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def german(person) -> Client:
    client = Client(headers={"accept-language": "de"})
    client.force_login(person)
    return client


def test_the_memory_add_on_page_reads_german_on_a_german_page():
    page = german(UserFactory()).get("/addons/memory/").content.decode()
    page = re.sub(r"<pre.*?</pre>", "", page, flags=re.S)  # the manifest itself, as written
    for english, german_words in [
        ("Saving a note", "Eine Notiz speichern"),
        ("The assistant proposes a note; you confirm it.", "Der Assistent schlägt eine Notiz vor"),
        ("Honest about what memory holds", "Ehrlich über den Inhalt des Gedächtnisses"),
        ("Read the matching note before answering", "Vor der Antwort die passende Notiz lesen"),
    ]:
        assert german_words in page
        assert english not in page


def test_the_skills_list_and_library_read_german():
    client = german(UserFactory())
    skills = client.get("/addons/skills/").content.decode()
    assert "Kurzgedächtnis · Das Gedächtnis nutzen" in skills
    library = client.get("/addons/").content.decode()
    assert "Ein paar Notizen über Sie" in library
