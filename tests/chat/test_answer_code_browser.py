"""Answers with code: the fence's language colours its tokens in light and dark, Copy code
copies the code and Copy answer the whole answer, at 1280 px in English and 390 px in
German."""

from __future__ import annotations

import pytest

from tests.conftest import wait_until_live

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "def greet(name):\n    return 'hi ' + name"
ANSWER = f"Here it is:\n\n```python\n{CODE}\n```\n\nCall it with a name."
LAYOUTS = [
    pytest.param({"width": 1280, "height": 900}, "en", "Copy code", "Copy answer", id="en"),
    pytest.param({"width": 390, "height": 844}, "de", "Code kopieren", "Antwort kopieren", id="de"),
]


def colour(page, selector: str) -> str:
    return page.locator(selector).first.evaluate("el => getComputedStyle(el).color")


@pytest.mark.parametrize(("viewport", "language", "copy_code", "copy_answer"), LAYOUTS)
def test_code_is_coloured_and_both_copy_buttons_copy(
    chat_worker,
    fake_openai,
    sign_in,
    person,
    conversation,
    viewport,
    language,
    copy_code,
    copy_answer,
    screenshot,
):
    fake_openai.chat_replies.append({"deltas": [ANSWER]})  # sent as is, spaces kept
    page = sign_in(person)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.set_viewport_size(viewport)
    page.goto(f"/chat/{conversation.pk}/")
    if language != "en":
        page.get_by_label("Language").select_option(language)
        page.locator(f"html[lang={language}]").wait_for(state="attached")
    wait_until_live(page)
    page.locator("#composer-text").fill("Write a greeting function")
    page.locator("#composer-text").press("Enter")
    page.locator("article.msg-assistant[data-state=complete]").wait_for()
    # The answer arrived over the socket, rendered in this page's language.
    role = page.locator("article.msg-assistant .msg-head strong").inner_text()
    assert role == {"en": "Assistant", "de": "Assistent"}[language]

    keyword, plain = ".md pre .hl-k", ".md pre code"
    assert colour(page, keyword) != colour(page, plain)
    light = colour(page, keyword)
    page.emulate_media(color_scheme="dark")
    assert colour(page, keyword) != light, "the dark theme has its own token colours"
    screenshot(f"code-dark-{language}")

    page.get_by_role("button", name=copy_code).click()
    assert page.evaluate("navigator.clipboard.readText()") == CODE
    page.get_by_role("button", name=copy_answer).click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("Here it is:") and CODE in copied
    assert copied.endswith("Call it with a name.")
    assert "Kopieren" not in copied and "Copy" not in copied
