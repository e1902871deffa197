"""Issue 29, accessibility in use: live regions that speak once, focus that stays where the
person was after adding a note or deciding a proposal, the phone menu closing on Escape,
the main navigation by keyboard alone, and plain links where tabs were claimed. At 1280 px
in light English and at 390 px in dark German."""

from __future__ import annotations

import pytest

from addons.services import addon_setting_put
from chat.models import Message
from chat.services import conversation_create
from memory_addon.services.notes import note_add
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from tests.browser.walk import DESKTOP, PHONE, dressed
from tests.conftest import off_loop, wait_until_live
from tests.factories import AIProfileFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SETUPS = [
    pytest.param(DESKTOP, "en", "light", id="1280-light-en"),
    pytest.param(PHONE, "de", "dark", id="390-dark-de"),
]
WORDS = {
    "en": {"left": "{} characters left", "added": "Note added.", "saved": "Saved to memory."},
    "de": {
        "left": "Noch {} Zeichen",
        "added": "Notiz hinzugefügt.",
        "saved": "Im Gedächtnis gespeichert.",
    },
}

# Everything the page's two polite regions say (its messages, its spoken-only hints), in
# order: a text is said when it is set.
RECORD_STATUS = """() => {
  window.spoken = [];
  for (const status of document.querySelectorAll("#page-messages, #page-status")) {
  new MutationObserver(() => {
    const text = status.textContent.trim();
    if (!text) return;
    window.spoken.push(text);
    document.body.dataset.spoken = String(window.spoken.length);
  }).observe(status, {childList: true, characterData: true, subtree: true});
  }
}"""

# The live regions (aria-live, or a role that is one) around an element, innermost first.
LIVE_AROUND = """(element) => {
  const found = [];
  for (let node = element; node; node = node.parentElement) {
    const role = node.getAttribute("role");
    const live = node.getAttribute("aria-live");
    const isLive = (live && live !== "off") || ["alert", "status", "log"].includes(role);
    if (isLive) found.push(node.outerHTML.slice(0, 60));
  }
  return found;
}"""


def opened(sign_in, page, live_asgi_server, person, viewport, language, theme, url):
    sign_in(person)
    dressed(page, live_asgi_server.url, language=language, theme=theme)
    page.set_viewport_size(viewport)
    page.goto(url)
    wait_until_live(page)
    page.evaluate(RECORD_STATUS)
    return page


@pytest.mark.parametrize(("viewport", "language", "theme"), SETUPS)
def test_the_character_counter_speaks_only_when_few_characters_are_left(
    sign_in, page, live_asgi_server, viewport, language, theme
):
    opened(sign_in, page, live_asgi_server, UserFactory(), viewport, language, theme, "/memory/")
    field = page.locator("#new-entry")
    assert page.evaluate(LIVE_AROUND, page.locator("#new-entry-count").element_handle()) == []
    field.fill("a" * 275)
    field.press_sequentially("bcdefghij")  # 284 of 300: the last 20 are reached once
    field.press("End")
    field.press_sequentially("x" * 16)  # 300 of 300
    page.locator("body[data-spoken='2']").wait_for(state="attached")
    words = WORDS[language]["left"]
    assert page.evaluate("window.spoken") == [words.format(19), words.format(0)]


@pytest.mark.parametrize(("viewport", "language", "theme"), SETUPS)
def test_a_pushed_notice_and_the_inbox_badge_change_inside_regions_that_stay(
    sign_in, page, live_asgi_server, viewport, language, theme
):
    person = UserFactory()
    opened(sign_in, page, live_asgi_server, person, viewport, language, theme, "/memory/")
    regions = page.evaluate_handle(
        "() => [document.querySelector('.page-notices'), document.querySelector('.inbox-live')]"
    )
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- stadt: wohnt in Berlin"},
    )
    page.locator("#inbox-count", has_text="1").wait_for(state="attached")
    off_loop(addon_setting_put, user=person, addon="memory", key="save-mode", value="auto")
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- tee: mag Tee"},
    )
    page.locator("#live-notice", has_text="tee: mag Tee").wait_for()
    # The same region elements are still in the page: their text changed, they were not replaced.
    assert regions.evaluate("([notice, inbox]) => notice.isConnected && inbox.isConnected")
    for selector in ("#live-notice strong", "#inbox-count"):
        around = page.evaluate(LIVE_AROUND, page.locator(selector).element_handle())
        assert len(around) == 1, (selector, around)


@pytest.mark.parametrize(("viewport", "language", "theme"), SETUPS)
def test_adding_a_note_keeps_the_place_and_the_focus_and_says_so_once(
    sign_in, page, live_asgi_server, viewport, language, theme
):
    person = UserFactory()
    scope = off_loop(ensure_user_scope, person)
    for number in range(12):
        off_loop(note_add, user=person, scope=scope, text=f"notiz {number}: Inhalt", source="page")
    opened(sign_in, page, live_asgi_server, person, viewport, language, theme, "/memory/")
    field = page.locator("#new-entry")
    field.scroll_into_view_if_needed()
    before = page.evaluate("window.scrollY")
    assert before > 0
    field.fill("garten: hat einen Garten")
    field.press("Enter")
    page.locator(".entry-text", has_text="garten: hat einen Garten").wait_for()
    page.locator("body[data-spoken='1']").wait_for(state="attached")
    assert page.evaluate("window.spoken") == [WORDS[language]["added"]]
    page.locator("#new-entry:focus").wait_for(state="attached")
    assert page.evaluate("window.scrollY") > 0
    assert field.input_value() == ""


@pytest.mark.parametrize(("viewport", "language", "theme"), SETUPS)
def test_deciding_a_proposal_moves_the_focus_to_the_next_card_and_says_so_once(
    sign_in, page, live_asgi_server, viewport, language, theme
):
    person = UserFactory()
    for text in ("- stadt: wohnt in Berlin", "- tee: trinkt grünen Tee"):
        off_loop(
            memory_change_request,
            turn=Turn(user=person),
            operation={"action": "add", "text": text},
        )
    opened(sign_in, page, live_asgi_server, person, viewport, language, theme, "/inbox/")
    cards = page.locator(".proposal")
    assert cards.count() == 2
    first, second = cards.nth(0).get_attribute("id"), cards.nth(1).get_attribute("id")
    confirm = page.locator(f"#{first} button.primary").first
    confirm.focus()
    logged: list[str] = []
    page.on("console", lambda message: logged.append(message.text))
    confirm.press("Enter")
    page.locator(f"#{first}").wait_for(state="detached")
    page.locator("body[data-spoken='1']").wait_for(state="attached")
    assert page.evaluate("window.spoken") == [WORDS[language]["saved"]]
    # The focus moves once the swap has settled, a moment after the message is in.
    page.locator(f"#{second} :focus").wait_for(state="attached")
    # The save's live pushes for the Memory tab find no target here, and htmx says nothing.
    assert [text for text in logged if "oobErrorNoTarget" in text] == []


@pytest.mark.parametrize("language", ["en", "de"])
def test_escape_closes_the_phone_menu_and_gives_the_focus_back(
    sign_in, page, live_asgi_server, language
):
    sign_in(UserFactory())
    dressed(page, live_asgi_server.url, language=language, theme="dark")
    page.set_viewport_size(PHONE)
    page.goto("/memory/")
    toggle = page.locator(".menu-toggle")
    toggle.focus()
    toggle.press("Enter")
    assert toggle.get_attribute("aria-expanded") == "true"
    page.locator("#site-menu a").first.focus()
    page.keyboard.press("Escape")
    assert toggle.get_attribute("aria-expanded") == "false"
    assert not page.locator("#site-menu a").first.is_visible()
    assert page.evaluate("document.activeElement.classList.contains('menu-toggle')")


@pytest.mark.parametrize(("viewport", "language", "theme"), SETUPS)
def test_the_main_navigation_works_by_keyboard_alone(
    sign_in, page, live_asgi_server, viewport, language, theme
):
    sign_in(UserFactory())
    dressed(page, live_asgi_server.url, language=language, theme=theme)
    page.set_viewport_size(viewport)
    page.goto("/memory/")
    if viewport == PHONE:
        for _ in range(3):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.classList.contains('menu-toggle')"):
                break
        page.keyboard.press("Enter")
    knowledge = "Knowledge" if language == "en" else "Wissen"
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == knowledge:
            break
    page.keyboard.press("Enter")
    page.wait_for_url("**/knowledge/")


def test_entries_and_raw_markdown_are_links_that_say_which_is_current(sign_in, page):
    sign_in(UserFactory())
    page.goto("/memory/")
    assert page.locator("[role=tab], [role=tablist]").count() == 0
    views = page.get_by_role("navigation", name="View")
    assert views.get_by_role("link", name="Entries").get_attribute("aria-current") == "page"
    views.get_by_role("link", name="Raw Markdown").click()
    page.wait_for_url("**view=raw")
    raw = page.get_by_role("navigation", name="View").get_by_role("link", name="Raw Markdown")
    assert raw.get_attribute("aria-current") == "page"


@pytest.mark.parametrize("language", ["en", "de"])
def test_a_failed_answer_sits_in_one_live_region_only(sign_in, page, live_asgi_server, language):
    person = UserFactory()
    profile = AIProfileFactory(owner=person)
    conversation = conversation_create(user=person, profile_id=profile.pk, title="Reise")
    Message.objects.create(conversation=conversation, role="user", content="Plane die Reise")
    Message.objects.create(
        conversation=conversation, role="assistant", state="failed", error="(ConnectError)"
    )
    sign_in(person)
    dressed(page, live_asgi_server.url, language=language, theme="light")
    page.goto(f"/chat/{conversation.pk}/")
    error = page.locator(".msg-error .error")
    assert page.evaluate(LIVE_AROUND, error.element_handle()) == [
        page.locator("#messages").evaluate("e => e.outerHTML.slice(0, 60)")
    ]


def test_an_edited_proposal_saves_in_place_without_jumping_to_the_top(
    sign_in, page, live_asgi_server
):
    person = UserFactory()
    for number in range(5):
        off_loop(
            memory_change_request,
            turn=Turn(user=person),
            operation={"action": "add", "text": f"- notiz {number}: Inhalt"},
        )
    opened(sign_in, page, live_asgi_server, person, PHONE, "en", "light", "/inbox/")
    card = page.locator(f"#{page.locator('.proposal').nth(2).get_attribute('id')}")
    card.get_by_text("Edit, then confirm").click()
    card.get_by_label("Entry text").fill("- tee: trinkt schwarzen Tee")
    save = card.get_by_role("button", name="Save edited text")
    save.scroll_into_view_if_needed()
    before = page.evaluate("window.scrollY")
    assert before > 0
    save.press("Enter")
    card.wait_for(state="detached")
    page.locator("body[data-spoken='1']").wait_for(state="attached")
    assert page.evaluate("window.spoken") == ["Saved to memory."]
    assert page.evaluate("window.scrollY") > 0
    page.locator(".proposal :focus").wait_for(state="attached")


# The placeholder's text is measured in the field's own font against the room inside it.
PLACEHOLDER_FITS = """(field) => {
  const style = getComputedStyle(field);
  const context = document.createElement("canvas").getContext("2d");
  context.font = style.font;
  const room = field.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return context.measureText(field.placeholder).width <= room;
}"""


@pytest.mark.parametrize(("viewport", "language", "theme"), SETUPS)
def test_the_conversation_search_placeholder_is_not_cut_off(
    sign_in, page, live_asgi_server, viewport, language, theme
):
    person = UserFactory()
    AIProfileFactory(owner=person)
    sign_in(person)
    dressed(page, live_asgi_server.url, language=language, theme=theme)
    page.set_viewport_size(viewport)
    page.goto("/chat/")
    field = page.locator("#chat-q")
    if not field.is_visible():
        page.locator("summary", has=page.locator("text=/Conversations|Gespräche/")).first.click()
    assert field.evaluate(PLACEHOLDER_FITS)
