"""Settings → Messaging in the browser: create a binding, copy its secret once, talk to it
with the sample bridge, find the conversation scope and the proposal; at 390 px too."""

from __future__ import annotations

import json
import time

import pytest

from accounts.models import MessagingBinding
from bridges.models import InboundMessage
from bridges.services import callback_send, inbound_process
from scripts.sample_bridge import CallbackReceiver, send_message
from tests.conftest import off_loop
from tests.factories import AIProfileFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADD_NOTE = json.dumps(
    {"scope": "conversation", "action": "add", "text": "- train: takes the train on Mondays"}
)


@pytest.fixture
def person(fake_openai):
    user = UserFactory()
    AIProfileFactory(owner=user, base_url=fake_openai.base_url, model="fake-model", is_default=True)
    return user


def _worker(inbound_id: int) -> None:
    inbound_process(inbound_id=inbound_id)
    callback_send(inbound_id=inbound_id)


def _delivered(inbound_id: int, deadline_s: float = 30) -> None:
    deadline = time.monotonic() + deadline_s
    rows = InboundMessage.objects.filter(pk=inbound_id)
    while not rows.filter(callback_state=InboundMessage.Callback.DELIVERED).exists():
        assert time.monotonic() < deadline, rows.values_list("callback_state", flat=True)[0]
        time.sleep(0.05)


def test_create_copy_send_with_the_sample_bridge_then_scope_and_inbox(
    sign_in, person, fake_openai, screenshot
):
    receiver = CallbackReceiver([]).start()
    try:
        page = sign_in(person)
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page.goto("/accounts/settings/")
        page.get_by_role("link", name="Messaging").click()
        assert page.get_by_text("No binding yet").is_visible()
        page.get_by_label("Bridge kind").select_option("standard")
        page.get_by_label("Name").fill("Family group")
        page.get_by_label("Callback URL").fill(receiver.url)
        page.get_by_role("button", name="Create binding").click()
        page.get_by_text("it is shown only this once").wait_for()
        page.get_by_role("button", name="Copy").click()
        page.get_by_role("status").filter(has_text="Copied.").wait_for()
        secret = page.evaluate("navigator.clipboard.readText()")
        assert secret.startswith("whsec_")
        webhook = page.locator(".webhook-url").inner_text()
        screenshot("created")

        page.goto("/bridges/messaging/")  # shown once: a second visit has no secret
        assert secret not in page.content()

        receiver.secrets.append(secret)
        fake_openai.chat_replies += [
            {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_NOTE}]},
            {"content": "Noted."},
        ]
        response = send_message(webhook, secret, "Remember: I take the train on Mondays")
        assert response.status_code == 202
        inbound = InboundMessage.objects.get()
        off_loop(_worker, inbound.pk)
        assert receiver.wait_for(1)
        assert "Inbox" in receiver.received[0]["text"]
        # A session worker may have taken the queued callback first: its "delivered" is
        # stored once the receiver has answered, so wait for the row, not the receiver.
        off_loop(_delivered, inbound.pk)

        page.goto("/bridges/messaging/")
        delivery = page.locator(".delivery").first
        assert "Answered" in delivery.inner_text() and "Delivered" in delivery.inner_text()

        binding = MessagingBinding.objects.get(owner=person)
        page.goto("/memory/")
        options = page.locator("#scope-picker option").all_inner_texts()
        assert any("Conversation memory" in option for option in options)
        page.locator("#scope-picker").select_option(
            label=next(o for o in options if "Conversation" in o)
        )
        page.wait_for_url(lambda url: "scope=" in url)
        page.goto("/inbox/")
        card = page.locator(".proposal, [id^=proposal-]").first
        card.wait_for()
        assert "train on Mondays" in page.content()
        screenshot("inbox")
        assert binding.enabled
    finally:
        receiver.stop()


def test_the_messaging_page_fits_a_390_px_screen_and_delete_asks(sign_in, person, screenshot):
    from bridges.services import binding_create

    binding_create(owner=person, kind="standard", title="A binding with a rather long name to wrap")
    page = sign_in(person)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/bridges/messaging/")
    screenshot("390")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Delete").click()
    assert MessagingBinding.objects.filter(deleted_at__isnull=True).count() == 1
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    page.get_by_text("conversation notes stay").wait_for()
    assert MessagingBinding.objects.filter(deleted_at__isnull=True).count() == 0
    page.goto("/bridges/events/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
