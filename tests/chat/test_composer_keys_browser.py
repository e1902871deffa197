"""The message boxes' keys: Enter sends and Shift+Enter adds a line, on the new-conversation
page and in a conversation; the `?` panel lists the keys and swaps Enter to add lines
(Ctrl/Cmd+Enter still sends); on a phone the message box stays at the bottom."""

from __future__ import annotations

import pytest

from chat.models import Conversation
from tests.conftest import wait_until_live

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAYOUTS = [
    pytest.param({"width": 1280, "height": 900}, "en", id="desktop-en"),
    pytest.param({"width": 390, "height": 844}, "de", id="phone-de"),
]
TEXTS = {
    "en": {
        "hint": "Enter sends · Shift+Enter adds a line",
        "keys": "Keyboard shortcuts",
        "swap": "Enter adds a line (send with Ctrl/⌘+Enter)",
        "swapped": "Enter adds a line · Ctrl/⌘+Enter sends",
    },
    "de": {
        "hint": "Enter sendet · Umschalt+Enter fügt eine Zeile ein",
        "keys": "Tastenkürzel",
        "swap": "Enter fügt eine Zeile ein (senden mit Strg/⌘+Enter)",
        "swapped": "Enter fügt eine Zeile ein · Strg/⌘+Enter sendet",
    },
}


def complete_answers(page, count: int) -> None:
    page.locator("article.msg-assistant[data-state=complete]").nth(count - 1).wait_for()


@pytest.mark.parametrize(("viewport", "language"), LAYOUTS)
def test_enter_sends_shift_enter_adds_a_line_and_the_swap_is_kept(
    chat_worker, fake_openai, sign_in, person, profile, screenshot, viewport, language
):
    texts = TEXTS[language]
    fake_openai.chat_replies += [{"content": f"Answer {n}."} for n in range(1, 4)]
    page = sign_in(person)
    page.set_viewport_size(viewport)
    page.goto("/chat/")
    if language != "en":
        page.get_by_label("Language").select_option(language)
        page.locator(f"html[lang={language}]").wait_for(state="attached")
    assert page.locator("#keys-hint").inner_text() == texts["hint"]

    new = page.locator("#new-text")
    new.fill("Say hello")
    new.press("Enter")
    page.wait_for_url("**/chat/*/")
    wait_until_live(page)
    conversation = Conversation.objects.get(owner=person)
    complete_answers(page, 1)

    box = page.locator("#composer-text")
    box.type("first line")
    box.press("Shift+Enter")
    box.type("second line")
    assert box.input_value() == "first line\nsecond line"
    box.press("Enter")
    complete_answers(page, 2)
    assert box.input_value() == ""
    sent = list(conversation.messages.filter(role="user").values_list("content", flat=True))
    assert sent == ["Say hello", "first line\nsecond line"]

    page.get_by_role("group").filter(has=page.get_by_label(texts["keys"])).locator(
        "summary"
    ).click()
    page.get_by_role("heading", name=texts["keys"]).wait_for()
    screenshot(f"shortcuts-{language}")
    page.get_by_label(texts["swap"]).check()
    assert page.locator("#keys-hint").inner_text() == texts["swapped"]
    page.reload()
    wait_until_live(page)
    assert page.locator("#keys-hint").inner_text() == texts["swapped"], "kept in this browser"
    box = page.locator("#composer-text")
    box.type("one")
    box.press("Enter")
    box.type("two")
    assert box.input_value() == "one\ntwo"
    assert conversation.messages.filter(role="user").count() == 2
    box.press("Control+Enter")
    complete_answers(page, 3)
    assert conversation.messages.filter(role="user").latest("id").content == "one\ntwo"

    position = page.locator("#composer").evaluate("el => getComputedStyle(el).position")
    assert position == ("sticky" if viewport["width"] < 721 else "static")
    if viewport["width"] < 721:
        page.evaluate("window.scrollTo(0, 0)")
        bottom = page.locator("#composer").bounding_box()
        assert bottom["y"] + bottom["height"] <= viewport["height"] + 1


def test_enter_on_an_empty_box_sends_nothing(chat_worker, sign_in, person, conversation):
    page = sign_in(person)
    page.goto(f"/chat/{conversation.pk}/")
    wait_until_live(page)
    page.locator("#composer-text").press("Enter")
    assert page.locator("#composer-text").evaluate("el => el.validity.valueMissing")
    assert not conversation.messages.exists()
