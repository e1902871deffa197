"""The chat in Chromium, against the live ASGI server, a real chat worker and the fake model."""

from __future__ import annotations

import json

import pytest

from addons.services import addon_setting_put
from chat.models import Conversation, Message
from knowledge.models import Chunk, Document, Source
from knowledge.services import store_create
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE
from memory_addon.models import MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.conftest import off_loop, wait_until_live

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADD_HOME = json.dumps({"action": "add", "text": "- home: lives in Rome -> home.md"})


def answer_of(conversation: Conversation) -> Message:
    return conversation.messages.filter(role="assistant").latest("id")


def open_chat(sign_in, person, conversation):
    page = sign_in(person)
    page.goto(f"/chat/{conversation.pk}/")
    wait_until_live(page)
    return page


def send(page, text: str) -> None:
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_role("button", name="Send").click()


def test_a_message_streams_into_the_page_and_ends_complete(
    chat_worker, fake_openai, sign_in, person, profile, screenshot
):
    fake_openai.chat_replies.append(
        {"deltas": ["Hello", " from", " the", " **model**", "."], "gate_after": 2}
    )
    page = sign_in(person)
    page.goto("/chat/")
    screenshot("new-conversation")
    page.get_by_label("Message").fill("Say hello")
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/chat/*/")
    wait_until_live(page)
    conversation = Conversation.objects.get(owner=person)
    assert conversation.title == "Say hello"
    fake_openai.reached_gate.wait(timeout=30)
    body = page.locator("article.msg-assistant .md")
    body.filter(has_text="Hello from").wait_for()
    assert page.get_by_role("status").filter(has_text="Answering").is_visible()
    screenshot("mid-stream")
    fake_openai.chat_gate.set()
    page.locator("article.msg-assistant[data-state=complete]").wait_for()
    assert body.inner_html().count("<strong>model</strong>") == 1
    assert "Hello from the model." in body.inner_text()
    screenshot("complete")
    assert answer_of(conversation).state == Message.State.COMPLETE


def test_a_proposal_card_shows_under_the_answer_and_in_the_inbox_live(
    chat_worker, fake_openai, sign_in, person, conversation, screenshot
):
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_HOME}]},
        {"content": "I proposed to remember that you live in Rome."},
    ]
    chat = open_chat(sign_in, person, conversation)
    inbox = chat.context.new_page()
    inbox.goto("/inbox/")
    wait_until_live(inbox)
    send(chat, "Remember that I live in Rome")
    chat.locator("article.msg-assistant[data-state=complete]").wait_for()
    proposal = Proposal.objects.get(user=person)
    card = chat.locator(f"article.msg-assistant #proposal-{proposal.pk}")
    card.wait_for()
    assert "- home: lives in Rome -> home.md" in card.inner_text()
    assert card.get_by_role("button", name="Confirm").is_visible()
    inbox.locator(f"#proposal-{proposal.pk}").wait_for()
    screenshot("card-in-chat")
    inbox.locator(f"#proposal-{proposal.pk}").get_by_role("button", name="Confirm").click()
    inbox.get_by_text("Saved to memory.").first.wait_for()
    card.wait_for(state="detached")
    proposal.refresh_from_db()
    assert proposal.state == Proposal.State.CONFIRMED


def test_confirming_in_the_chat_removes_the_card_from_the_inbox_live(
    chat_worker, fake_openai, sign_in, person, conversation
):
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_HOME}]},
        {"content": "Proposed."},
    ]
    chat = open_chat(sign_in, person, conversation)
    send(chat, "Remember that I live in Rome")
    chat.locator("article.msg-assistant[data-state=complete]").wait_for()
    proposal = Proposal.objects.get(user=person)
    inbox = chat.context.new_page()
    inbox.goto("/inbox/")
    wait_until_live(inbox)
    inbox.locator(f"#proposal-{proposal.pk}").wait_for()
    chat.locator(f"#proposal-{proposal.pk}").get_by_role("button", name="Confirm").click()
    # Decided in place under the answer: the chat page is not left or reloaded.
    chat.get_by_text("Proposal confirmed.").wait_for()
    assert chat.url.endswith(f"/chat/{conversation.pk}/")
    inbox.locator(f"#proposal-{proposal.pk}").wait_for(state="detached")
    index = MemoryFile.objects.get(scope=ensure_user_scope(person), path="index.md").content
    assert "lives in Rome" in index


def test_auto_mode_shows_saved_to_memory_and_undo_restores_the_file_byte_for_byte(
    chat_worker, fake_openai, sign_in, person, conversation, screenshot
):
    original = "My own notes.\r\n\n- tea: green  \n"
    off_loop(
        file_write,
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content=original,
        base_sha256="",
    )
    before = MemoryFile.objects.get(scope=ensure_user_scope(person), path="index.md")
    addon_setting_put(user=person, addon=MEMORY_ADDON, key=SAVE_MODE, value="auto")
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_HOME}]},
        {"content": "Saved that you live in Rome."},
    ]
    chat = open_chat(sign_in, person, conversation)
    send(chat, "Remember that I live in Rome")
    answer = chat.locator("article.msg-assistant[data-state=complete]")
    answer.wait_for()
    saved = answer.locator(".saved-note")
    saved.filter(has_text="Saved to memory").wait_for()
    assert "lives in Rome" in MemoryFile.objects.get(pk=before.pk).content
    screenshot("saved")
    saved.get_by_role("button", name="Undo").click()
    chat.get_by_text("Change undone.").wait_for()
    after = MemoryFile.objects.get(pk=before.pk)
    assert after.content.encode() == before.content.encode() == original.encode()
    assert after.sha256 == before.sha256
    assert "then undone" in chat.locator("article.msg-assistant .saved-note").inner_text()


def test_sent_along_lists_the_memory_items_and_excerpts(
    chat_worker, fake_openai, sign_in, person, conversation, screenshot
):
    off_loop(
        file_write,
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="- diet: vegetarian, no fish -> diet.md\n",
        base_sha256="",
    )
    fake_openai.chat_replies.append({"content": "Try a lentil curry."})
    chat = open_chat(sign_in, person, conversation)
    send(chat, "What should I cook?")
    answer = chat.locator("article.msg-assistant[data-state=complete]")
    answer.wait_for()
    row = answer.locator("details.sent-along")
    assert "Sent along: 1 memory item" in row.locator("summary").inner_text()
    assert not row.locator(".sent-items").is_visible()
    row.locator("summary").click()
    item = row.locator(".sent-items li")
    assert "vegetarian, no fish" in item.inner_text()
    assert "My memory" in item.inner_text() and "tokens" in item.inner_text()
    screenshot("sent-along")
    assert "vegetarian, no fish" in fake_openai.prompt()


def test_an_r1_link_opens_the_excerpt_and_names_its_file(
    chat_worker, fake_openai, sign_in, person, conversation, screenshot
):
    store = store_create(owner=person, name="Handbook", provider="none")
    source = Source.objects.create(
        store=store, kind=Source.Kind.UPLOAD, path="/uploads/x", chunk_count=1
    )
    document = Document.objects.create(
        source=source, path="guide/alpacas.md", sha256="x", format="markdown", size=10
    )
    Chunk.objects.create(
        document=document,
        store=store,
        source=source,
        ordinal=0,
        text="Alpacas are calm animals that live in the Andes.",
        token_count=12,
    )
    conversation.stores.add(store)
    fake_openai.chat_replies.append({"content": "Alpacas live in the Andes [R1]."})
    chat = open_chat(sign_in, person, conversation)
    send(chat, "Where do alpacas live?")
    answer = chat.locator("article.msg-assistant[data-state=complete]")
    answer.wait_for()
    assert "<retrieved_context" in fake_openai.chat_requests[-1]["messages"][-2]["content"]
    link = answer.locator(".md a", has_text="[R1]")
    excerpt = answer.locator("details[id^=cite-]").first
    assert not excerpt.locator("blockquote").is_visible()
    link.click()
    excerpt.locator("blockquote").wait_for(state="visible")
    assert "calm animals" in excerpt.inner_text()
    assert "guide/alpacas.md" in excerpt.inner_text()
    assert excerpt.get_by_role("link", name="Open the collection").get_attribute("href") == (
        f"/knowledge/{store.pk}/"
    )
    screenshot("citation")


def test_stop_stops_the_answer_within_a_second(
    chat_worker, fake_openai, sign_in, person, conversation
):
    fake_openai.chat_replies.append(
        {"deltas": [f"word{i} " for i in range(400)], "chunk_delay": 0.02}
    )
    chat = open_chat(sign_in, person, conversation)
    send(chat, "Tell me a long story")
    chat.locator("article.msg-assistant .md", has_text="word3").wait_for()
    chat.get_by_role("button", name="Stop").click()
    stopped = chat.locator("article.msg-assistant[data-state=stopped]")
    stopped.wait_for(timeout=3000)
    answer = answer_of(conversation)
    assert answer.state == Message.State.STOPPED
    assert "word399" not in answer.content and answer.content.startswith("word0")
    assert stopped.get_by_text("Stopped").first.is_visible()


def test_a_reload_mid_answer_shows_the_text_so_far_and_continues_live(
    chat_worker, fake_openai, sign_in, person, conversation
):
    fake_openai.chat_replies.append(
        {"deltas": ["First part.", " Second part.", " Third part."], "gate_after": 2}
    )
    chat = open_chat(sign_in, person, conversation)
    send(chat, "Hi")
    chat.locator("article.msg-assistant .md", has_text="Second part.").wait_for()
    chat.reload()
    chat.locator("article.msg-assistant .md", has_text="First part. Second part.").wait_for()
    assert chat.locator("article.msg-assistant[data-state=streaming]").is_visible()
    wait_until_live(chat)
    second_tab = chat.context.new_page()
    second_tab.goto(f"/chat/{conversation.pk}/")
    second_tab.locator("article.msg-assistant .md", has_text="Second part.").wait_for()
    wait_until_live(second_tab)
    fake_openai.chat_gate.set()
    for tab in (chat, second_tab):
        tab.locator("article.msg-assistant[data-state=complete]").wait_for()
        assert (
            "First part. Second part. Third part."
            in tab.locator("article.msg-assistant .md").inner_text()
        )


def test_a_failed_answer_says_why_and_retry_answers_again(
    chat_worker, fake_openai, sign_in, person, conversation
):
    fake_openai.chat_replies += [
        {"status": 500, "message": "out of memory"},
        {"content": "Works now."},
    ]
    chat = open_chat(sign_in, person, conversation)
    send(chat, "Hi")
    failed = chat.locator("article.msg-assistant[data-state=failed]")
    failed.wait_for()
    assert "out of memory" in failed.locator(".msg-error").inner_text()
    failed.get_by_role("button", name="Retry").click()
    chat.locator("article.msg-assistant[data-state=complete]", has_text="Works now.").wait_for()
    assert list(conversation.messages.values_list("role", "state")) == [
        ("user", "complete"),
        ("assistant", "complete"),
    ]


def test_an_answer_that_ends_before_the_send_returns_still_shows_its_end(
    chat_worker, fake_openai, sign_in, person, conversation
):
    """The failed answer's push reaches the page before the send's response does."""
    fake_openai.chat_replies.append({"status": 500, "message": "out of memory"})
    chat = sign_in(person)
    held: dict = {}

    def release_when_both_arrived() -> None:
        if held.get("pushed") and "route" in held and not held.get("done"):
            held["done"] = True
            held["route"].fulfill(response=held["response"])

    def relay(ws) -> None:
        server = ws.connect_to_server()

        def forward(message) -> None:
            ws.send(message)
            if 'data-state="failed"' in str(message):
                held["pushed"] = True
                release_when_both_arrived()

        server.on_message(forward)

    def hold_send(route) -> None:
        response = route.fetch()
        held["route"], held["response"] = route, response
        release_when_both_arrived()

    chat.route_web_socket("**/ws/events/", relay)
    chat.route(f"**/chat/{conversation.pk}/send/", hold_send)
    chat.goto(f"/chat/{conversation.pk}/")
    wait_until_live(chat)
    send(chat, "Hi")
    failed = chat.locator("article.msg-assistant[data-state=failed]")
    failed.wait_for()
    assert held.get("done")
    assert "out of memory" in failed.locator(".msg-error").inner_text()


def test_the_chat_fits_a_390_px_screen(
    chat_worker, fake_openai, sign_in, person, conversation, screenshot
):
    fake_openai.chat_replies.append(
        {
            "content": "Here is code:\n\n```python\n"
            + "print('a very long line of code that should scroll inside its box only')" * 2
            + "\n```\n\nAnd a longwordwithoutanyspaces"
            + "x" * 80
        }
    )
    chat = sign_in(person)
    chat.set_viewport_size({"width": 390, "height": 844})
    chat.goto(f"/chat/{conversation.pk}/")
    wait_until_live(chat)
    send(chat, "Show me code")
    chat.locator("article.msg-assistant[data-state=complete]").wait_for()
    chat.locator("article.msg-assistant pre button.copy").wait_for()
    screenshot("390px")
    overflow = chat.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    assert chat.get_by_role("button", name="Send").is_visible()


def test_without_a_profile_the_chat_says_how_to_start(sign_in, person, screenshot):
    page = sign_in(person)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/chat/")
    page.get_by_role("heading", name="No AI profile yet").wait_for()
    assert page.get_by_role("link", name="Add an AI profile in Settings").is_visible()
    screenshot("no-profile")
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


def test_two_turns_keep_one_regenerate_and_editing_the_last_message_resends_it(
    chat_worker, fake_openai, sign_in, person, conversation
):
    fake_openai.chat_replies += [
        {"content": "First answer."},
        {"content": "Second answer."},
        {"content": "Answer to the edited message."},
    ]
    chat = open_chat(sign_in, person, conversation)
    send(chat, "First question")
    chat.locator("article.msg-assistant[data-state=complete]", has_text="First answer.").wait_for()
    send(chat, "Secnd question")
    chat.locator("article.msg-assistant[data-state=complete]", has_text="Second answer.").wait_for()
    assert chat.get_by_role("button", name="Regenerate").count() == 1
    chat.get_by_text("Edit your last message").click()
    box = chat.get_by_label("Your last message")
    assert box.input_value() == "Secnd question"
    box.fill("Second question")
    chat.get_by_role("button", name="Resend edited message").click()
    chat.locator(
        "article.msg-assistant[data-state=complete]", has_text="Answer to the edited message."
    ).wait_for()
    rows = list(conversation.messages.values_list("role", "content"))
    assert rows == [
        ("user", "First question"),
        ("assistant", "First answer."),
        ("user", "Second question"),
        ("assistant", "Answer to the edited message."),
    ]
    assert fake_openai.chat_requests[-1]["messages"][-1]["content"] == "Second question"


def test_a_schedule_is_created_on_its_page_and_run_now_opens_its_conversation(
    chat_worker, fake_openai, sign_in, person, profile, screenshot
):
    fake_openai.chat_replies.append({"content": "Your morning summary."})
    page = sign_in(person)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/chat/schedules/")
    page.get_by_label("Name").fill("Morning summary")
    page.get_by_label("Prompt").fill("Summarize my notes")
    page.get_by_label("Every … minutes").fill("60")
    page.get_by_role("button", name="Create schedule").click()
    page.get_by_text("Schedule created.").wait_for()
    screenshot("schedules")
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    page.get_by_role("button", name="Run now").click()
    page.wait_for_url("**/chat/*/")
    page.locator("#scheduled-run").wait_for()
    page.locator(
        "article.msg-assistant[data-state=complete]", has_text="morning summary"
    ).wait_for()
    assert Conversation.objects.get(owner=person).run_kind == "scheduled"
