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


def test_sent_along_names_the_built_in_skills_in_german():
    from chat.models import Conversation, Message
    from tests.factories import AIProfileFactory

    person = UserFactory()
    conversation = Conversation.objects.create(
        owner=person, ai_profile=AIProfileFactory(owner=person)
    )
    Message.objects.create(conversation=conversation, role=Message.Role.USER, content="Hi")
    Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        state=Message.State.COMPLETE,
        content="Hello",
        sent_along={
            "memory": {"items": [], "omitted": 0},
            "addons": {
                "skills": [
                    {
                        "addon": "memory",
                        "name": "memory",
                        "title": "Using memory",
                        "tokens": 9,
                        "rules": 0,
                    }
                ],
                "context_files": [],
            },
        },
    )
    page = german(person).get(f"/chat/{conversation.pk}/").content.decode()
    assert "Das Gedächtnis nutzen" in page


def test_the_library_log_and_permissions_read_german():
    client = german(UserFactory(is_staff=True, is_superuser=True))
    library = client.get("/addons/").content.decode()
    assert (
        "Add-on-Protokoll" in library and "Ein neues Add-on ist zunächst ausgeschaltet" in library
    )
    assert "Add-on log" not in library
    detail = client.get("/addons/memory/").content.decode()
    assert "Im Host enthalten" in detail or "Comes with the host" not in detail
    assert "seine Kontextdateien in den Prompt Ihrer Chats legen" in detail
    log = client.get("/addons/log/").content.decode()
    assert "Alle Add-ons" in log or "Mit Add-ons ist hier noch nichts geschehen." in log
