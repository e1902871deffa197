"""A page whose live socket dropped catches up on what it missed when it reconnects."""

from __future__ import annotations

import pytest

from memory_addon.services.proposals import memory_change_request
from memory_addon.turns import Turn
from tests.conftest import off_loop, wait_until_live
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Relay:
    """Sits between the page and the server's socket; can lose pushes and drop the line."""

    def __init__(self, page) -> None:
        self.forward = True
        self.routes: list = []
        page.route_web_socket("**/ws/events/", self._connect)

    def _connect(self, ws) -> None:
        server = ws.connect_to_server()
        server.on_message(lambda message: ws.send(message) if self.forward else None)
        self.routes.append((ws, server))

    def drop(self) -> None:
        """What a restarted server or a network blip looks like to the page."""
        ws, server = self.routes[-1]
        server.close()
        ws.close(code=1012)
        self.forward = True


def _propose(person, text: str):
    return off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": text},
        reason="Said in a chat.",
    ).proposal


def test_a_reconnected_page_shows_what_was_pushed_while_it_was_away(sign_in, screenshot):
    person = UserFactory()
    page = sign_in(person)
    relay = Relay(page)
    page.goto("/inbox/")
    wait_until_live(page)
    relay.forward = False  # the push of this proposal is lost on the way
    proposal = _propose(person, "- home: lives in Rome -> home.md")
    relay.drop()
    page.locator("body[data-resynced='1']").wait_for(state="attached")
    page.locator(f"#proposal-{proposal.pk}").wait_for()
    assert len(relay.routes) == 2
    screenshot("resynced")


def test_a_page_with_typed_text_is_not_reloaded_and_says_so(sign_in):
    person = UserFactory()
    page = sign_in(person)
    relay = Relay(page)
    page.goto("/memory/")
    wait_until_live(page)
    field = page.locator("#new-entry")
    field.fill("half-typed note")
    relay.drop()
    page.locator("#live-missed").wait_for()
    wait_until_live(page)
    assert field.input_value() == "half-typed note"
    assert page.locator("body[data-resynced]").count() == 0


def test_text_typed_while_the_resync_is_on_its_way_is_kept(sign_in):
    person = UserFactory()
    page = sign_in(person)
    relay = Relay(page)
    page.goto("/memory/")
    wait_until_live(page)
    held: list = []

    def hold_resync(route) -> None:
        if route.request.headers.get("hx-request"):
            held.append(route)  # answered below, once the person has typed
        else:
            route.continue_()

    page.route("**/memory/", hold_resync)
    relay.drop()
    page.wait_for_function("() => document.getElementById('main').dataset.resyncing === '1'")
    field = page.locator("#new-entry")
    field.fill("typed while it was loading")
    for _ in range(1000):  # the held request reaches Python with the page's next event
        if held:
            break
        page.evaluate("1")
    held[0].continue_()
    page.locator("#live-missed").wait_for()
    assert field.input_value() == "typed while it was loading"
    assert page.locator("body[data-resynced]").count() == 0
