"""The rule card in Chromium: detected after a real turn, saved, then undone within 30 s."""

from __future__ import annotations

import json

import pytest

from learning.models import RuleSuggestion
from memory_addon.models import MemoryFile
from tests.chat.test_chat_browser import open_chat, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def index_text(person) -> str:
    row = MemoryFile.objects.filter(scope__owner=person, scope__kind="user").first()
    return row.content if row else ""


def test_a_rule_card_under_an_answer_saves_the_rule_and_undo_removes_it(
    chat_worker, fake_openai, sign_in, person, conversation, screenshot
):
    fake_openai.chat_replies += [
        {"content": "Righto, British English it is."},
        {"content": json.dumps({"rule": "Answer in British English.", "target": "user"})},
    ]
    chat = open_chat(sign_in, person, conversation)
    send(chat, "From now on, answer me in British English.")
    answer = chat.locator("article.msg-assistant[data-state=complete]")
    answer.wait_for()
    card = answer.locator("article.rule-card")
    card.wait_for()  # pushed live once the detection job ran
    assert "Memory/index.md" in card.inner_text()
    rule = card.get_by_label("Rule")
    assert rule.input_value() == "Answer in British English."
    rule.fill("Always answer in British English.")
    assert card.locator("[id^=rule-counter-]").inner_text() == str(
        len("Always answer in British English.")
    )
    screenshot("rule-card")
    card.get_by_role("button", name="Save").click()
    saved = chat.locator("article.msg-assistant .rule-saved")
    saved.wait_for()
    assert "Always answer in British English." in index_text(person)
    assert RuleSuggestion.objects.get().state == "saved"
    detection = fake_openai.chat_requests[1]
    assert "tools" not in detection and len(detection["messages"]) == 2
    saved.get_by_role("button", name="Undo").click()
    chat.get_by_text("Rule removed again.").wait_for()
    assert "British English" not in index_text(person)
    assert "then undone" in chat.locator("article.msg-assistant .msg-memory").inner_text()


def test_remember_as_rule_on_an_own_message_needs_no_ai_call(
    chat_worker, fake_openai, sign_in, person, conversation
):
    fake_openai.chat_replies.append({"content": "Noted."})
    chat = open_chat(sign_in, person, conversation)
    send(chat, "I prefer answers without emojis.")
    chat.locator("article.msg-assistant[data-state=complete]").wait_for()
    mine = chat.locator("article.msg-user").first
    mine.get_by_text("Remember as rule…").click()
    mine.get_by_label("Rule").fill("No emojis in answers.")
    mine.get_by_role("button", name="Save").click()
    chat.locator("article.msg-user .rule-saved").wait_for()
    assert "No emojis in answers." in index_text(person)
    assert len(fake_openai.chat_requests) == 1  # only the answer
