"""Past-chat search (B10) in Chromium, with a real chat worker and the scripted model: the
model searches earlier chats and its answer's [C1] opens the one it found, and the list's
search box finds a conversation by meaning. At 1280 px in English and 390 px in German."""

from __future__ import annotations

import json

import pytest

from chat.models import Conversation, Message
from chat.search import message_embeddings_refresh
from tests.chat.test_questions_browser import SETUPS, fits
from tests.conftest import wait_until_live

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "message": "Message",
        "start": "Start",
        "search": "Search conversations",
    },
    "de": {
        "message": "Nachricht",
        "start": "Starten",
        "search": "Gespräche durchsuchen",
    },
}
SEARCH = json.dumps({"query": "peanuts"})


@pytest.mark.parametrize(("language", "viewport"), SETUPS)
def test_the_answer_links_c1_to_the_earlier_chat_and_the_list_finds_it_by_meaning(
    chat_worker, fake_openai, sign_in, person, profile, screenshot, language, viewport
):
    words = WORDS[language]
    earlier = Conversation.objects.create(owner=person, ai_profile=profile, title="Health")
    for role, text in (
        ("user", "I am allergic to peanuts and shellfish."),
        ("assistant", "Then avoid satay and shrimp."),
    ):
        Message.objects.create(conversation=earlier, role=role, content=text)
    Conversation.objects.create(owner=person, ai_profile=profile, title="Garden")
    message_embeddings_refresh(conversation_id=earlier.pk)
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "s1", "name": "search_conversations", "arguments": SEARCH}]},
        {"content": "It was in [C1]."},
    ]
    page = sign_in(person)
    page.set_viewport_size(viewport)
    page.set_extra_http_headers({"Accept-Language": language})
    page.goto("/chat/")
    page.get_by_label(words["message"], exact=True).fill("Recall my allergy")
    page.get_by_role("button", name=words["start"]).click()
    page.wait_for_url("**/chat/*/")
    wait_until_live(page)
    answer = page.locator("article.msg-assistant[data-state=complete]")
    answer.wait_for()
    cited = answer.locator(".md a", has_text="[C1]")
    assert cited.get_attribute("href") == f"/chat/{earlier.pk}/"
    assert cited.get_attribute("title") == "Health"
    assert fits(page)
    screenshot(f"past-chat-citation-{language}")
    cited.click()
    page.wait_for_url(f"**/chat/{earlier.pk}/")

    # A paraphrase with no word of the earlier chat finds it by meaning.
    page.goto("/chat/")
    page.get_by_label(words["search"]).fill("which food is dangerous for me")
    page.get_by_label(words["search"]).press("Enter")
    page.wait_for_url("**/chat/?q=*")
    listed = page.locator("#conversation-list a")
    assert listed.first.get_attribute("href") == f"/chat/{earlier.pk}/"
    assert page.locator(f'#conversation-list a[href="/chat/{earlier.pk}/"]').count() == 1
    assert fits(page)
