"""Rule cards routed by the rule router (M21) in Chromium: to an existing skill (1280 px,
English), to a new skill with its NEW badge and to memory (390 px, German)."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from addons.models import HOST_SKILLS, HostSkill, SkillRule
from addons.services import host_skill_create, skill_tags_set
from memory_addon.models import MemoryFile
from tests.chat.test_chat_browser import open_chat, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def detected(fake_openai, rule: str) -> None:
    fake_openai.chat_replies += [
        {"content": "Understood."},
        {"content": json.dumps({"rule": rule, "target": "user"})},
    ]


def in_german(page, live_asgi_server) -> None:
    page.context.add_cookies(
        [{"name": settings.LANGUAGE_COOKIE_NAME, "value": "de", "url": live_asgi_server.url}]
    )


def german_rule_card(chat):
    """The card once it arrived, on the page as loaded in German: a live fragment is drawn
    by the worker, which does not know the person's language (the same for every push)."""
    rule_card(chat)
    chat.reload()
    return rule_card(chat)


def send_in_german(page, text: str) -> None:
    page.get_by_label("Nachricht", exact=True).fill(text)
    page.get_by_role("button", name="Senden").click()


def rule_card(chat):
    answer = chat.locator("article.msg-assistant[data-state=complete]")
    answer.wait_for()
    card = answer.locator("article.rule-card")
    card.wait_for()  # pushed live once the detection job ran
    return card


def test_a_rule_on_a_tagged_topic_is_saved_into_that_skill(
    chat_worker, fake_openai, sign_in, person, conversation, screenshot
):
    host_skill_create(user=person, name="cooking", title="Cooking")
    skill_tags_set(user=person, addon_id=HOST_SKILLS, skill="cooking", topics=["recipes"])
    detected(fake_openai, "Give recipes in grams.")
    chat = open_chat(sign_in, person, conversation)
    chat.set_viewport_size({"width": 1280, "height": 900})
    send(chat, "From now on, give recipes in grams.")
    card = rule_card(chat)
    assert "Memory/skills/cooking.md" in card.inner_text()
    save_to = card.get_by_label("Save to")
    assert save_to.locator("option:checked").inner_text() == "Skill: Cooking"
    screenshot("rule-to-skill")
    card.get_by_role("button", name="Save").click()
    saved = chat.locator("article.msg-assistant .rule-saved")
    saved.wait_for()
    assert "Memory/skills/cooking.md" in saved.inner_text()
    assert SkillRule.objects.get(user=person, skill="cooking").text == "Give recipes in grams."


def test_a_rule_on_a_language_makes_a_new_skill_whose_badge_goes_once_opened_in_german(
    chat_worker, fake_openai, sign_in, person, conversation, live_asgi_server, screenshot
):
    detected(fake_openai, "Verwende in Python immer Typannotationen.")
    page = sign_in(person)
    in_german(page, live_asgi_server)
    page.set_viewport_size({"width": 390, "height": 844})
    chat = open_chat(lambda _: page, person, conversation)
    send_in_german(chat, "Ab jetzt verwende in Python immer Typannotationen.")
    card = german_rule_card(chat)
    save_to = card.get_by_label("Speichern in")
    assert save_to.locator("option:checked").inner_text() == "Neue Fähigkeit: Python"
    assert "Memory/skills/python.md" in card.inner_text()
    screenshot("rule-to-new-skill")
    card.get_by_role("button", name="Speichern").click()
    chat.locator("article.msg-assistant .rule-saved").wait_for()
    assert HostSkill.objects.get(owner=person, name="python").created_by_assistant

    page.goto("/addons/skills/")
    item = page.locator("#skill-_host-python")
    assert item.get_by_text("NEU · vom Assistenten angelegt").is_visible()
    assert item.get_by_text("+1 Regel").is_visible()
    screenshot("skills-with-new-badge")
    item.get_by_role("link", name="Python").click()
    page.get_by_role("heading", name="Statistik").wait_for()
    assert (
        "Verwende in Python immer Typannotationen."
        in page.get_by_label(
            "Gelernte Regeln (eine pro Zeile; werden mit dieser Fähigkeit gesendet)"
        ).input_value()
    )
    page.goto("/addons/skills/")
    assert page.locator("#skill-_host-python .new-skill").count() == 0


def test_a_rule_with_no_skill_or_agent_goes_to_memory_in_german_at_390_px(
    chat_worker, fake_openai, sign_in, person, conversation, live_asgi_server, screenshot
):
    detected(fake_openai, "Antworte mir auf Deutsch.")
    page = sign_in(person)
    in_german(page, live_asgi_server)
    page.set_viewport_size({"width": 390, "height": 844})
    chat = open_chat(lambda _: page, person, conversation)
    send_in_german(chat, "Ab jetzt antworte mir auf Deutsch.")
    card = german_rule_card(chat)
    assert card.get_by_label("Speichern in").locator("option:checked").inner_text() == (
        "Ihr Gedächtnis"
    )
    assert "Memory/index.md" in card.inner_text()
    box = card.bounding_box()
    assert box is not None and box["width"] <= 390  # the card fits the phone's width
    screenshot("rule-to-memory")
    card.get_by_role("button", name="Speichern").click()
    chat.locator("article.msg-assistant .rule-saved").wait_for()
    index = MemoryFile.objects.get(scope__owner=person, scope__kind="user", path="index.md")
    assert "Antworte mir auf Deutsch." in index.content
    assert not HostSkill.objects.filter(owner=person).exists()
