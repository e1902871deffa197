"""A proposal card under a chat answer is decided in place (issue 29): Confirm, Reject and
"Edit, then confirm" swap only the block under that answer, so the page keeps its place,
the text typed in the composer and the focus. At 1280 px in English in light, and at
390 px in German in dark."""

from __future__ import annotations

import pytest
from django.utils import translation
from django.utils.translation import gettext

from memory_addon.models import MemoryFile, Proposal
from memory_addon.services.scopes import ensure_user_scope
from tests.chat.test_chat_browser import ADD_HOME, open_chat
from tests.chat.test_questions_browser import fits
from tests.conftest import off_loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SETUPS = [
    pytest.param("en", {"width": 1280, "height": 900}, "light", id="1280-english-light"),
    pytest.param("de", {"width": 390, "height": 844}, "dark", id="390-german-dark"),
]


def words(language: str) -> dict[str, str]:
    with translation.override(language):
        return {
            key: gettext(text)
            for key, text in {
                "message": "Message",
                "send": "Send",
                "edit": "Edit, then confirm",
                "entry": "Entry text",
                "save": "Save edited text",
                "reject": "Reject",
                "saved": "Saved to memory.",
            }.items()
        }


def answered_with_a_proposal(fake_openai, sign_in, person, conversation, setup):
    language, viewport, scheme = setup
    page = sign_in(person)
    page.set_viewport_size(viewport)
    page.set_extra_http_headers({"Accept-Language": language})
    page.emulate_media(color_scheme=scheme)
    page = open_chat(sign_in, person, conversation)
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_HOME}]},
        {"content": "I proposed to remember that you live in Rome."},
    ]
    said = words(language)
    page.get_by_label(said["message"], exact=True).fill("Remember that I live in Rome")
    page.get_by_role("button", name=said["send"]).click()
    page.locator("article.msg-assistant[data-state=complete]").wait_for()
    proposal = off_loop(lambda: Proposal.objects.get(user=person))
    card = page.locator(f"article.msg-assistant #proposal-{proposal.pk}")
    card.wait_for()
    # Marks this page load: a reload would lose it.
    page.evaluate("window.samePage = true")
    page.get_by_label(said["message"], exact=True).fill("a draft of my next question")
    return page, card, proposal, said


@pytest.mark.parametrize(("language", "viewport", "scheme"), SETUPS)
def test_an_edited_proposal_is_saved_under_the_answer_without_reloading(
    chat_worker, fake_openai, sign_in, person, conversation, language, viewport, scheme
):
    page, card, _proposal, said = answered_with_a_proposal(
        fake_openai, sign_in, person, conversation, (language, viewport, scheme)
    )
    card.get_by_text(said["edit"]).click()
    card.get_by_label(said["entry"]).fill("- home: lives in Rome, near the Pantheon -> home.md")
    card.get_by_role("button", name=said["save"]).click()
    page.locator("#page-messages").get_by_text(said["saved"]).wait_for()
    card.wait_for(state="detached")
    assert page.evaluate("window.samePage === true"), "the page was reloaded"
    assert (
        page.get_by_label(said["message"], exact=True).input_value()
        == "a draft of my next question"
    )
    # The focus stays under the answer, not at the top of the page.
    assert page.evaluate(
        "document.activeElement.closest('.msg-memory') !== null"
        " || document.activeElement.classList.contains('msg-memory')"
    )
    assert fits(page)
    files = off_loop(
        lambda: "".join(
            MemoryFile.objects.filter(scope=ensure_user_scope(person)).values_list(
                "content", flat=True
            )
        )
    )
    assert "near the Pantheon" in files


@pytest.mark.parametrize(("language", "viewport", "scheme"), SETUPS)
def test_rejecting_under_the_answer_keeps_the_page(
    chat_worker, fake_openai, sign_in, person, conversation, language, viewport, scheme
):
    page, card, proposal, said = answered_with_a_proposal(
        fake_openai, sign_in, person, conversation, (language, viewport, scheme)
    )
    card.get_by_role("button", name=said["reject"]).click()
    card.wait_for(state="detached")
    assert page.evaluate("window.samePage === true"), "the page was reloaded"
    assert (
        page.get_by_label(said["message"], exact=True).input_value()
        == "a draft of my next question"
    )
    proposal = off_loop(lambda: Proposal.objects.get(pk=proposal.pk))
    assert proposal.state == Proposal.State.REJECTED
