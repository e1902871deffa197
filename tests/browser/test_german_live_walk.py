"""SPEC B7: in German, the pages with live updates still speak German after an update
arrives: the Memory tab after a save, the Inbox after a proposal, a conversation during
and after a streamed answer, a collection while and after it is indexed. Each page's
visible text (and its spoken labels) is searched for English words of the interface: the
English texts whose German differs, taken from the German catalogue itself."""

from __future__ import annotations

import re
from functools import cache

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import translation
from django.utils.translation import trans_real

from addons.services import addon_setting_put
from knowledge.services import store_create
from knowledge.services.sources import source_add_upload
from memory_addon.services.proposals import memory_change_request
from memory_addon.turns import Turn
from tests.browser.walk import DESKTOP, dressed
from tests.conftest import off_loop, submit_and_load, wait_until_live
from tests.factories import AIProfileFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PLACEHOLDER = re.compile(r"%\(|%s|%d|\{|<|&")
WORD = re.compile(r"[A-Za-zÄÖÜäöüß]+")


@cache
def english_words() -> tuple[frozenset[str], frozenset[str]]:
    """(phrases, single words) of the English interface that German says differently.
    Short words, and words German uses too (Markdown, Server...), are left out."""
    catalog = trans_real.translation("de")._catalog  # type: ignore[attr-defined]
    every = [(msgid, str(msgstr)) for msgid, msgstr in catalog.items()]
    german_words = {word for _, msgstr in every for word in WORD.findall(msgstr)}
    pairs = [
        (msgid, msgstr)
        for msgid, msgstr in every
        if isinstance(msgid, str) and msgid and not PLACEHOLDER.search(msgid)
    ]
    phrases, words = set(), set()
    for msgid, msgstr in pairs:
        if msgid.strip() == msgstr.strip():
            continue
        found = WORD.findall(msgid)
        if len(found) >= 3:
            phrases.add(" ".join(found))
        elif len(found) == 1 and len(found[0]) >= 5 and found[0] not in german_words:
            words.add(found[0])
    return frozenset(phrases), frozenset(words)


# What a person sees and hears: the visible text, and the labels of visible elements.
SEEN = """() => {
  const labels = [...document.querySelectorAll("[aria-label], [placeholder], [title]")]
    .filter((element) => element.checkVisibility())
    .map((element) => ["aria-label", "placeholder", "title"]
      .map((name) => element.getAttribute(name) || "").join(" "));
  return [document.title, document.body.innerText, ...labels].join("\\n");
}"""


# The language switch names each language in itself.
LANGUAGE_NAMES = {"English", "Deutsch"}


def english_on(page) -> list[str]:
    """The English interface texts found on the page, each with the line it is in."""
    found = []
    phrases, words = english_words()
    for line in page.evaluate(SEEN).splitlines():
        line_words = WORD.findall(line)
        joined = f" {' '.join(line_words)} "
        english = [phrase for phrase in phrases if f" {phrase} " in joined]
        english += sorted(set(line_words) & words - LANGUAGE_NAMES)
        found += [f"{text!r} in {line.strip()[:120]!r}" for text in english]
    return found


def german(text: str) -> str:
    with translation.override("de"):
        return translation.gettext(text)


@pytest.fixture
def person(page, sign_in, live_asgi_server):
    # A pushed fragment whose target the page lacks: htmx logs oobErrorNoTarget.
    missed: list[str] = []
    page.on("console", lambda message: missed.append(message.text))
    yield signed_in_german(page, sign_in, live_asgi_server)
    assert [text for text in missed if "oobErrorNoTarget" in text] == []


def signed_in_german(page, sign_in, live_asgi_server):
    someone = UserFactory(username="gudrun")
    sign_in(someone)
    dressed(page, live_asgi_server.url, language="de", theme="light")
    page.set_viewport_size(DESKTOP)
    return someone


def test_the_catalogue_gives_english_words_to_look_for():
    phrases, words = english_words()
    assert "Add an entry" in phrases and "Add an entry" not in words
    assert "Knowledge" in words and "Inbox" in words
    assert "Chat" not in words  # German says Chat too


def test_memory_tab_and_inbox_stay_german_after_live_updates(page, person):
    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")
    page.goto("/memory/")
    wait_until_live(page)
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- stadt: wohnt in Berlin"},
    )
    page.locator("#live-notice", has_text="stadt: wohnt in Berlin").wait_for()
    page.locator(".entry-text", has_text="stadt: wohnt in Berlin").wait_for()
    assert english_on(page) == []

    addon_setting_put(user=person, addon="memory", key="save-mode", value="ask")
    page.goto("/inbox/")
    wait_until_live(page)
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- tee: trinkt grünen Tee"},
        reason="Im Gespräch erwähnt.",
    )
    page.locator(".proposal", has_text="tee: trinkt grünen Tee").wait_for()
    page.locator("#inbox-count", has_text="1").wait_for()
    assert english_on(page) == []


def test_a_conversation_stays_german_during_and_after_a_streamed_answer(
    page, person, chat_worker, fake_openai
):
    AIProfileFactory(
        owner=person, name="Lokal", base_url=fake_openai.base_url, model="lokal", is_default=True
    )
    fake_openai.chat_replies.append(
        {"deltas": ["Guten", " Tag", ", wie", " geht", " es?"], "gate_after": 2}
    )
    page.goto("/chat/")
    page.get_by_label(german("Message"), exact=True).fill("Sag hallo")
    page.get_by_role("button", name=german("Start")).click()
    page.wait_for_url("**/chat/*/")
    wait_until_live(page)
    assert fake_openai.reached_gate.wait(timeout=30)
    page.locator("article.msg-assistant .md", has_text="Guten Tag").wait_for()
    page.locator("article.msg-assistant[data-state=streaming]").wait_for()
    assert english_on(page) == []
    fake_openai.chat_gate.set()
    page.locator("article.msg-assistant[data-state=complete]").wait_for()
    assert english_on(page) == []


def test_a_collection_stays_german_while_and_after_it_is_indexed(page, person, celery_worker):
    store = off_loop(store_create, owner=person, name="Alpakas", provider="none")
    page.goto(f"/knowledge/{store.pk}/")
    wait_until_live(page)
    files = [
        SimpleUploadedFile(f"{name}.md", f"# {name}\n\n{name} leben in den Anden.\n".encode())
        for name in ("alpakas", "lamas", "vikunjas")
    ]
    off_loop(source_add_upload, store=store, files=files)
    review = page.locator("#review")
    review.wait_for()
    assert english_on(page) == [], "\n".join(english_on(page))
    submit_and_load(page, review.get_by_role("button", name=german("Index these files")))
    status = page.locator(".job-status[data-state=succeeded]")
    status.wait_for(timeout=60_000)
    assert english_on(page) == [], "\n".join(english_on(page))
    # The count of documents agrees with the files indexed (issue 29: "1 of 3").
    assert "3 von 3 Dokumenten" in status.inner_text()
