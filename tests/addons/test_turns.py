"""Skills and add-on context files in a real chat turn (fake model server), and in Sent along."""

from __future__ import annotations

import pytest

from addons.services import (
    addon_install_zip,
    addon_set_enabled,
    addon_setting_put,
    addon_user_set_enabled,
)
from chat.models import Message
from chat.runner import turn_run
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.addons.conftest import example_zip
from tests.chat.conftest import ask, conversation, profile

__all__ = ["ask", "conversation", "profile"]

pytestmark = pytest.mark.django_db(transaction=True)


def run(message: Message) -> Message:
    turn_run(message_id=message.pk)
    message.refresh_from_db()
    return message


@pytest.fixture
def tone(admin, person):
    addon_install_zip(user=admin, data=example_zip())
    addon_set_enabled(user=admin, addon_id="tone-of-voice", enabled=True)
    addon_setting_put(user=person, addon="tone-of-voice", key="tone", value="brief")


def test_skills_memory_and_context_files_go_in_the_documented_order(fake_openai, ask, person, tone):
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="- diet: vegetarian -> diet.md\n",
        base_sha256="",
    )
    answer = run(ask("What should I cook?"))
    # The host context right after the system prompt (B9), in the documented order.
    system = fake_openai.chat_requests[-1]["messages"][1]["content"]
    skill = system.index('<skill addon="memory" name="memory">')
    check = system.index('<skill addon="memory" name="memory-check-own-files">')
    memory = system.index("<memory>")
    context = system.index('<addon_file addon="tone-of-voice" path="context/brief.md">')
    assert skill < check < memory < context
    assert "Tone: brief" in system and "Tone: formal" not in system
    sent = answer.sent_along["addons"]
    assert [(s["addon"], s["name"]) for s in sent["skills"]] == [
        ("memory", "memory"),
        ("memory", "memory-check-own-files"),
    ]
    assert sent["context_files"] == [
        {
            "addon": "tone-of-voice",
            "path": "context/brief.md",
            "tokens": sent["context_files"][0]["tokens"],
        }
    ]


def test_a_model_without_tools_gets_no_skill_that_needs_tools(fake_openai, ask, profile, tone):
    profile.supports_tools = False
    profile.save()
    answer = run(ask("Hello"))
    system = fake_openai.prompt()
    assert "<skill" not in system and answer.sent_along["addons"]["skills"] == []
    assert "Tone: brief" in system  # context files need no tool


def test_switching_the_add_on_off_stops_its_context_file_in_the_next_turn(
    fake_openai, ask, person, tone
):
    run(ask("One"))
    assert "Tone: brief" in fake_openai.prompt()
    addon_user_set_enabled(user=person, addon_id="tone-of-voice", enabled=False)
    answer = run(ask("Two"))
    assert "Tone:" not in fake_openai.prompt()
    assert answer.sent_along["addons"]["context_files"] == []


def test_sent_along_on_the_chat_page_lists_skills_and_context_files(
    fake_openai, ask, person, tone, client
):
    answer = run(ask("Hi"))
    client.force_login(person)
    page = client.get(f"/chat/{answer.conversation_id}/").content.decode()
    assert "2 skills, 1 context file" in page
    assert "Honest about what memory holds" in page and "context/brief.md" in page
