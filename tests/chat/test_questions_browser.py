"""Questions during a run (M19) in Chromium: the card arrives live under the answer, the
person answers, and a real chat worker goes on with the same answer; the limit of three
questions and the timeout. At 1280 px in English and at 390 px in German."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from chat.events import push_message
from chat.models import Message, Question
from chat.questions import questions_expire
from tests.chat.test_chat_browser import open_chat
from tests.conftest import off_loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CITY = {
    "question": "Which city should the trip start from?",
    "why": "Only you know where you will be.",
    "options": ["Milan", "Rome", "Turin"],
    "recommended": "Rome",
}
WORDS = {
    "en": {
        "why": "Why it asks",
        "recommended": "Recommended",
        "other": "Another answer",
        "rule": "Permanent rule (optional)",
        "answer": "Answer",
        "answered": "You answered: Milan — by train",
        "decided": "Not answered in time",
        "waiting": "Waiting for your answer",
        "message": "Message",
        "send": "Send",
    },
    "de": {
        "why": "Warum gefragt wird",
        "recommended": "Empfohlen",
        "other": "Andere Antwort",
        "rule": "Dauerhafte Regel (optional)",
        "answer": "Antworten",
        "answered": "Ihre Antwort: Milan — by train",
        "decided": "Nicht rechtzeitig beantwortet",
        "waiting": "Wartet auf Ihre Antwort",
        "message": "Nachricht",
        "send": "Senden",
    },
}
SETUPS = [
    pytest.param("en", {"width": 1280, "height": 900}, id="1280-english"),
    pytest.param("de", {"width": 390, "height": 844}, id="390-german"),
]


def ask_call(call_id: str) -> dict[str, object]:
    return {"id": call_id, "name": "ask_person", "arguments": json.dumps(CITY)}


def opened(sign_in, person, conversation, language, viewport):
    page = sign_in(person)
    page.set_viewport_size(viewport)
    page.set_extra_http_headers({"Accept-Language": language})
    page = open_chat(sign_in, person, conversation)
    assert page.locator("html").get_attribute("lang") == language
    return page


def send(page, language: str, text: str) -> None:
    page.get_by_label(WORDS[language]["message"], exact=True).fill(text)
    page.get_by_role("button", name=WORDS[language]["send"]).click()


def waiting_card(page):
    """The card of the question the answer waits on, once the page shows it in its own
    language (a card pushed live fetches itself once and loses its hx-trigger)."""
    settled = page.locator("article.question-card:not([hx-trigger])")
    settled.wait_for()
    return page.locator(f"#{settled.get_attribute('id')}")


def fits(page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


@pytest.mark.parametrize(("language", "viewport"), SETUPS)
def test_the_card_is_answered_and_the_same_answer_goes_on(
    chat_worker, fake_openai, sign_in, person, conversation, screenshot, language, viewport
):
    words = WORDS[language]
    fake_openai.chat_replies += [
        {"content": "Let me plan it.", "tool_calls": [ask_call("q1")]},
        {"content": "Starting from Milan, by train."},
    ]
    page = opened(sign_in, person, conversation, language, viewport)
    send(page, language, "Plan my trip")
    waiting = page.locator("article.msg-assistant[data-state=waiting]")
    waiting.wait_for()
    # Pushed live without the page's language: the page's own words fill it in.
    assert waiting.get_by_role("status").inner_text() == words["waiting"]
    card = waiting_card(page)
    card.get_by_text(words["why"]).wait_for()  # fetched again in the page's language
    assert "Only you know where you will be." in card.inner_text()
    choices = card.locator("label.choice")
    assert choices.nth(0).inner_text().strip().startswith("Rome")
    assert words["recommended"] in choices.nth(0).inner_text()
    assert words["recommended"] not in choices.nth(1).inner_text()
    assert card.get_by_text(words["rule"]).is_visible()
    assert fits(page)
    screenshot("question")

    card.get_by_label("Milan").check()
    card.get_by_label(words["other"]).fill("by train")
    card.get_by_role("button", name=words["answer"]).click()
    page.get_by_text(words["answered"]).wait_for()
    answer = page.locator("article.msg-assistant[data-state=complete]")
    answer.wait_for()
    text = answer.locator(".md").inner_text()
    assert "Let me plan it." in text and "Starting from Milan, by train." in text
    assert page.locator("article.msg-assistant").count() == 1
    assert fits(page)
    screenshot("answered")
    told = fake_openai.chat_requests[-1]["messages"][-1]
    assert told["content"] == "The person answered: Milan — by train"


@pytest.mark.parametrize(("language", "viewport"), SETUPS)
def test_after_three_questions_the_model_decides_and_the_answer_shows_it(
    chat_worker, fake_openai, sign_in, person, conversation, language, viewport
):
    words = WORDS[language]
    fake_openai.chat_replies += [{"tool_calls": [ask_call(f"q{n}")]} for n in range(1, 5)]
    fake_openai.chat_replies.append({"content": "Decided without you: Rome."})
    page = opened(sign_in, person, conversation, language, viewport)
    send(page, language, "Plan my trip")
    for _ in range(3):
        card = waiting_card(page)
        card.get_by_text(words["why"]).wait_for()
        card.get_by_label("Rome").check()
        card.get_by_role("button", name=words["answer"]).click()
        card.locator(".notice").wait_for()
    page.locator("article.msg-assistant[data-state=complete]").wait_for()
    assert "Decided without you: Rome." in page.locator("article.msg-assistant .md").inner_text()
    assert (
        off_loop(lambda: Question.objects.filter(message__conversation=conversation).count()) == 3
    )
    assert "already asked 3 questions" in fake_openai.chat_requests[-1]["messages"][-1]["content"]
    assert fits(page)


def _expire_now() -> int:
    Question.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    return questions_expire()


@pytest.mark.parametrize(("language", "viewport"), SETUPS)
def test_an_unanswered_question_is_decided_by_the_sweep_and_the_choice_is_shown(
    chat_worker, fake_openai, sign_in, person, conversation, screenshot, language, viewport
):
    words = WORDS[language]
    fake_openai.chat_replies += [
        {"content": "Let me plan it.", "tool_calls": [ask_call("q1")]},
        {"content": "Decided without you: Rome, the recommended start."},
    ]
    page = opened(sign_in, person, conversation, language, viewport)
    send(page, language, "Plan my trip")
    waiting_card(page).get_by_text(words["why"]).wait_for()
    assert off_loop(_expire_now) == 1  # the scheduled sweep, driven here
    page.get_by_text(words["decided"]).wait_for()
    page.locator("article.msg-assistant[data-state=complete]").wait_for()
    body = page.locator("article.msg-assistant .md").inner_text()
    assert "Let me plan it." in body and "Decided without you: Rome" in body
    answer = off_loop(lambda: Message.objects.get(conversation=conversation, role="assistant"))
    assert answer.state == Message.State.COMPLETE
    assert fits(page)
    screenshot("decided")


@pytest.mark.parametrize(("language", "viewport"), SETUPS)
def test_a_choice_being_made_survives_a_push_of_the_answer_around_it(
    chat_worker, fake_openai, sign_in, person, conversation, language, viewport
):
    words = WORDS[language]
    fake_openai.chat_replies += [
        {"content": "Let me plan it.", "tool_calls": [ask_call("q1")]},
        {"content": "Starting from Turin."},
    ]
    page = opened(sign_in, person, conversation, language, viewport)
    send(page, language, "Plan my trip")
    card = waiting_card(page)
    card.get_by_text(words["why"]).wait_for()
    card.get_by_label("Turin").check()
    card.get_by_label(words["other"]).fill("after lunch")
    page.evaluate(
        "window.pushedSwaps = 0;"
        "document.addEventListener('htmx:oobAfterSwap', () => { window.pushedSwaps += 1; });"
    )
    answer = off_loop(lambda: Message.objects.get(conversation=conversation, role="assistant"))
    off_loop(lambda: push_message(person.pk, answer))  # e.g. a second tab's change
    # A function, not a bare expression: Playwright eval()s a bare one while it polls,
    # which the page's CSP refuses.
    page.wait_for_function("() => window.pushedSwaps > 0")
    assert card.get_by_label("Turin").is_checked()
    assert card.get_by_label(words["other"]).input_value() == "after lunch"
    card.get_by_role("button", name=words["answer"]).click()
    page.locator(".notice", has_text="Turin — after lunch").wait_for()
    page.locator("article.msg-assistant[data-state=complete]").wait_for()
    assert fake_openai.chat_requests[-1]["messages"][-1]["content"] == (
        "The person answered: Turin — after lunch"
    )
