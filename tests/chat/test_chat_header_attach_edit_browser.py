"""Issue 29's chat items in Chromium: the header's model and collection pickers, a file
attached from the composer, and an earlier message edited inline into a copy. At 1280 px
in English in light, and at 390 px in German in dark; nothing overflows sideways."""

from __future__ import annotations

import pytest

from chat.models import Conversation, Message
from knowledge.models import Job, Source
from knowledge.services import store_create
from tests.chat.test_questions_browser import fits
from tests.factories import AIProfileFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SETUPS = [
    pytest.param("en", {"width": 1280, "height": 900}, "light", id="1280-english-light"),
    pytest.param("de", {"width": 390, "height": 844}, "dark", id="390-german-dark"),
]
WORDS = {
    "en": {
        "model_changed": "Model changed; the next answer uses it.",
        "add": "Add collection",
        "remove": "Remove the collection Handbook",
        "refused": "photo.jpg is not a format collections index",
        "checking": "checking…",
        "checked": "checked: waiting for you to index it",
        "in_line": "in line behind another file…",
        "edit": "Edit",
        "edited_from": "Edited from",
    },
    "de": {
        "model_changed": "Modell gewechselt; die nächste Antwort verwendet es.",
        "add": "Sammlung hinzufügen",
        "remove": "Sammlung Handbook entfernen",
        "refused": "photo.jpg",
        "checking": "wird geprüft …",
        "checked": "geprüft: wartet darauf, dass Sie sie indexieren",
        "in_line": "wartet hinter einer anderen Datei…",
        "edit": "Bearbeiten",
        "edited_from": "Bearbeitet aus",
    },
}


def _open(page, sign_in, person, conversation, language, viewport, scheme):
    sign_in(person)
    page.set_viewport_size(viewport)
    page.set_extra_http_headers({"Accept-Language": language})
    page.emulate_media(color_scheme=scheme)
    page.goto(f"/chat/{conversation.pk}/")
    assert fits(page), "the conversation page overflows sideways"


@pytest.mark.parametrize(("language", "viewport", "scheme"), SETUPS)
def test_the_header_changes_the_model_and_the_collections_in_place(
    sign_in, person, profile, conversation, screenshot, language, viewport, scheme
):
    words = WORDS[language]
    second = AIProfileFactory(owner=person, name="Second", model="second-model")
    store = store_create(owner=person, name="Handbook", provider="none")
    page = sign_in(person)
    _open(page, sign_in, person, conversation, language, viewport, scheme)

    page.locator("#header-profile").select_option(str(second.pk))
    page.get_by_text(words["model_changed"]).wait_for()
    conversation.refresh_from_db()
    assert conversation.ai_profile_id == second.pk

    page.locator("#header-store-add").select_option(str(store.pk))
    page.get_by_role("button", name=words["add"]).click()
    page.locator(f"#header-stores [data-store='{store.pk}']").wait_for()
    assert list(conversation.stores.values_list("pk", flat=True)) == [store.pk]
    assert fits(page), "the header with a collection chip overflows sideways"
    screenshot(f"header-{language}-{scheme}")

    page.get_by_role("button", name=words["remove"]).click()
    page.locator(f"#header-stores [data-store='{store.pk}']").wait_for(state="detached")
    assert not conversation.stores.exists()


@pytest.mark.parametrize(("language", "viewport", "scheme"), SETUPS)
def test_a_file_is_attached_from_the_composer_and_a_refused_one_is_named(
    sign_in, person, profile, conversation, screenshot, language, viewport, scheme
):
    words = WORDS[language]
    page = sign_in(person)
    _open(page, sign_in, person, conversation, language, viewport, scheme)

    page.locator("#attach-files").set_input_files(
        {"name": "photo.jpg", "mimeType": "image/jpeg", "buffer": b"\xff\xd8\xff"}
    )
    page.locator("#attach-error").get_by_text(words["refused"]).wait_for()

    page.locator("#attach-files").set_input_files(
        {"name": "zoo.md", "mimeType": "text/markdown", "buffer": b"Tapirs swim well."}
    )
    chip = page.locator("#attachments .chip", has_text="zoo.md")
    chip.wait_for()
    assert page.locator("#attach-error").count() == 0
    # Checking, or already checked: a worker of this test process may have run the scan.
    shown = chip.inner_text()
    assert words["checking"] in shown or words["checked"] in shown, shown
    conversation.refresh_from_db()
    assert Source.objects.filter(store_id=conversation.own_store_id, name="zoo.md").exists()
    assert fits(page), "the attachment chip overflows sideways"
    screenshot(f"attach-{language}-{scheme}")


@pytest.mark.parametrize(("language", "viewport", "scheme"), SETUPS)
def test_a_file_attached_behind_another_says_it_waits_in_line(
    sign_in, person, profile, conversation, screenshot, language, viewport, scheme
):
    words = WORDS[language]
    own = store_create(owner=person, name=f"Chat {conversation.pk}", provider="none")
    Conversation.objects.filter(pk=conversation.pk).update(own_store=own)
    conversation.stores.add(own)
    for name, state in (("zoo.md", Job.State.RUNNING), ("farm.md", Job.State.WAITING)):
        source = Source.objects.create(
            store=own, kind=Source.Kind.UPLOAD, path=f"/nowhere/{name}", name=name
        )
        Job.objects.create(store=own, source=source, kind=Job.Kind.SCAN, state=state)
    page = sign_in(person)
    _open(page, sign_in, person, conversation, language, viewport, scheme)

    running = page.locator("#attachments .chip", has_text="zoo.md")
    waiting = page.locator("#attachments .chip", has_text="farm.md")
    waiting.get_by_text(words["in_line"]).wait_for()
    assert words["checking"] in running.inner_text()
    assert fits(page), "the waiting attachment chip overflows sideways"
    screenshot(f"attach-in-line-{language}-{scheme}")


@pytest.mark.parametrize(("language", "viewport", "scheme"), SETUPS)
def test_an_earlier_message_is_edited_inline_into_a_copy_and_escape_cancels(
    sign_in,
    person,
    profile,
    conversation,
    unconsumed_chat_queue,
    screenshot,
    language,
    viewport,
    scheme,
):
    words = WORDS[language]
    rows = []
    for n in (1, 2):
        rows.append(Message.objects.create(conversation=conversation, role="user", content=f"Q{n}"))
        Message.objects.create(conversation=conversation, role="assistant", content=f"A{n}")
    page = sign_in(person)
    _open(page, sign_in, person, conversation, language, viewport, scheme)

    first = page.locator(f"#message-{rows[0].pk}")
    first.locator("summary", has_text=words["edit"]).click()
    box = page.locator(f"#edit-{rows[0].pk}")
    box.fill("Q1 changed")
    box.press("Escape")
    assert box.input_value() == "Q1" and not box.is_visible()

    first.locator("summary", has_text=words["edit"]).click()
    box.fill("Q1, better")
    assert fits(page), "the inline edit overflows sideways"
    box.press("Enter")
    page.locator("#edited-from").wait_for()
    copy = Conversation.objects.exclude(pk=conversation.pk).get()
    assert page.url.endswith(f"/chat/{copy.pk}/")
    assert words["edited_from"] in page.locator("#edited-from").inner_text()
    assert list(copy.messages.values_list("role", "content")) == [
        ("user", "Q1, better"),
        ("assistant", ""),
    ]
    assert conversation.messages.count() == 4  # the original is untouched
    assert fits(page)
    screenshot(f"edited-copy-{language}-{scheme}")
