"""The triage card (M20) in Chromium with a real chat worker and the scripted model:
Automatic (complex: a card, simple: none), Always, Proceed with an option or an own
idea, and a card nobody answers (the sweep, driven by the test). 1280 px in English,
390 px in German."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chat.prompt import PLAN_HEADING
from learning.core.triage import INSTRUCTION
from learning.models import TriageCard
from learning.services.triage import triage_sweep
from tests.chat.test_chat_browser import open_chat, send
from tests.conftest import off_loop
from tests.factories import AgentFactory
from tests.learning.test_rule_routing_browser import in_german, send_in_german
from tests.learning.test_triage import REQUEST, judgement

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def agent_chat(person, conversation):
    """The conversation runs a saved agent (planning on) and the person chose a mode."""

    def make(mode: str):
        conversation.agent = AgentFactory(owner=person, name="Gardener")
        conversation.save(update_fields=["agent"])
        person.estimate_complexity = mode
        person.save(update_fields=["estimate_complexity"])
        return conversation

    return make


def triage_card(chat):
    card = chat.locator("article.msg-assistant article.triage-card")
    card.wait_for()  # pushed live once the estimate came back
    return card


def test_automatic_shows_the_card_for_a_complex_request_and_proceeds_with_my_own_idea(
    chat_worker, fake_openai, sign_in, person, agent_chat, screenshot
):
    conversation = agent_chat("automatic")
    fake_openai.chat_replies += [{"content": judgement()}, {"content": "Moved as you said."}]
    chat = open_chat(sign_in, person, conversation)
    chat.set_viewport_size({"width": 1280, "height": 900})
    send(chat, REQUEST)
    card = triage_card(chat)
    card.get_by_role("heading", name="Looks complex").wait_for()
    card.get_by_text("Touches many notes").wait_for()
    options = card.locator(".triage-option")
    first = options.nth(0)
    assert "Move in one go" in first.inner_text() and "Recommended" in first.inner_text()
    # The selected option's Details are open, the others' closed until selected.
    first.get_by_text("A wrong note moves too").wait_for()
    second = options.nth(1)
    second.locator(".triage-details").wait_for(state="hidden")
    second.get_by_label("Ask first, then move").check()
    second.locator(".triage-details").wait_for()
    first.get_by_text("A wrong note moves too").wait_for(state="hidden")
    screenshot("triage-card-1280")
    card.get_by_label("My own idea").check()
    card.get_by_label("Your idea for how to go about it").fill("Only move notes tagged #garden.")
    card.get_by_role("button", name="Proceed with selection").click()
    chat.locator("article.msg-assistant[data-state=complete]").wait_for()
    assert "Moved as you said." in chat.locator("article.msg-assistant").inner_text()
    last = fake_openai.chat_requests[-1]["messages"][-1]
    assert last == {"role": "user", "content": f"{PLAN_HEADING}\n\nOnly move notes tagged #garden."}
    chat.reload()
    chat.get_by_text("Triage: proceeded with your own idea.").wait_for()


def test_automatic_shows_no_card_for_a_simple_request(
    chat_worker, fake_openai, sign_in, person, agent_chat
):
    conversation = agent_chat("automatic")
    fake_openai.chat_replies += [{"content": judgement(complex_=False)}, {"content": "Done."}]
    chat = open_chat(sign_in, person, conversation)
    send(chat, REQUEST)
    chat.locator("article.msg-assistant[data-state=complete]").wait_for()
    assert chat.locator("article.triage-card").count() == 0
    assert fake_openai.chat_requests[0]["messages"][0]["content"].startswith(INSTRUCTION)
    assert fake_openai.chat_requests[-1]["messages"][-1] == {"role": "user", "content": REQUEST}


def test_always_shows_the_card_in_german_at_390_px_and_proceeds_with_the_recommended_option(
    chat_worker, fake_openai, sign_in, person, agent_chat, live_asgi_server, screenshot
):
    conversation = agent_chat("always")
    fake_openai.chat_replies += [
        {"content": judgement(complex_=False)},
        {"content": "Erledigt."},
    ]
    page = sign_in(person)
    in_german(page, live_asgi_server)
    page.set_viewport_size({"width": 390, "height": 844})
    chat = open_chat(lambda _: page, person, conversation)
    send_in_german(chat, REQUEST)
    triage_card(chat)
    chat.reload()  # the live fragment is drawn by the worker, in English
    card = triage_card(chat)
    card.get_by_role("heading", name="Wirkt nicht komplex").wait_for()
    assert "Empfohlen" in card.locator(".triage-option").first.inner_text()
    card.get_by_text("Eigene Idee", exact=True).wait_for()
    # The card fits the phone's width: nothing on the page scrolls sideways (the page
    # element may be swapped meanwhile by the catch-up after the socket opens).
    assert chat.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot("triage-card-390-de")
    card.get_by_role("button", name="Mit Auswahl fortfahren").click()
    chat.locator("article.msg-assistant[data-state=complete]").wait_for()
    plan = fake_openai.chat_requests[-1]["messages"][-1]
    assert plan["role"] == "user" and plan["content"].startswith(PLAN_HEADING)
    assert "Move in one go" in plan["content"]


def test_a_card_nobody_answers_runs_the_request_as_asked_once_the_sweep_comes(
    chat_worker, fake_openai, sign_in, person, agent_chat
):
    conversation = agent_chat("always")
    fake_openai.chat_replies += [{"content": judgement()}, {"content": "As asked."}]
    chat = open_chat(sign_in, person, conversation)
    send(chat, REQUEST)
    triage_card(chat)
    card = TriageCard.objects.get()
    TriageCard.objects.filter(pk=card.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert off_loop(triage_sweep) == 1
    chat.locator("article.msg-assistant[data-state=complete]").wait_for()
    assert "As asked." in chat.locator("article.msg-assistant").inner_text()
    assert fake_openai.chat_requests[-1]["messages"][-1] == {"role": "user", "content": REQUEST}
    chat.reload()
    chat.get_by_text("Triage: no answer in time, so the request ran as asked.").wait_for()
