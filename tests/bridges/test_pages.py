"""Settings → Messaging and Outgoing events: forms, secrets once, owner checks, German."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import MessagingBinding
from bridges.models import EventEndpoint
from bridges.services import Incoming, binding_create, inbound_accept
from memory_addon.models import MemoryScope
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for():
    def make(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


def test_a_binding_is_created_with_its_secret_shown_once_and_stored_encrypted(client_for):
    person = UserFactory()
    client = client_for(person)
    response = client.post(
        "/bridges/messaging/",
        {"kind": "standard", "title": "Family", "callback_url": "http://127.0.0.1:9/cb"},
        follow=True,
    )
    assert response.status_code == 200
    assert response.redirect_chain and "secret" not in response.redirect_chain[0][0]
    binding = MessagingBinding.objects.get(owner=person)
    secret = binding.webhook_secret
    assert secret in response.content.decode()
    assert secret not in binding.webhook_secret_encrypted
    assert f"/bridges/in/{binding.public_id}/" in response.content.decode()
    assert secret not in client.get("/bridges/messaging/").content.decode()
    # The conversation scope exists at once, so the Memory tab's picker lists it.
    assert MemoryScope.objects.filter(kind="channel", binding=binding).exists()
    assert "Conversation memory" in client.get("/memory/").content.decode()


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"kind": "slack", "title": "S"}, "signing secret"),
        ({"kind": "standard", "title": "S", "callback_url": "http://10.1.2.3/cb"}, "private"),
        ({"kind": "standard", "title": "S", "callback_url": "ftp://x"}, "valid URL"),
        ({"kind": "pigeon", "title": "S"}, "Select a valid choice"),
        ({"kind": "standard", "title": ""}, "required"),
    ],
)
def test_bad_input_is_a_form_error_not_a_500(client_for, data, error):
    response = client_for(UserFactory()).post("/bridges/messaging/", data)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not MessagingBinding.objects.exists()


def test_another_persons_binding_and_endpoint_are_404(client_for):
    owner = UserFactory()
    binding, _ = binding_create(owner=owner, kind="standard", title="Mine")
    stranger = client_for(UserFactory())
    for path in ("rotate", "enabled", "delete"):
        assert stranger.post(f"/bridges/messaging/{binding.pk}/{path}/").status_code == 404
    assert stranger.get(f"/bridges/messaging/{binding.pk}/deliveries/").status_code == 404
    binding.refresh_from_db()
    assert binding.enabled and binding.deleted_at is None


def test_disable_enable_and_delete_keep_the_conversation_notes(client_for):
    person = UserFactory()
    client = client_for(person)
    binding, _ = binding_create(owner=person, kind="standard", title="Mine")
    client.post(f"/bridges/messaging/{binding.pk}/enabled/")
    binding.refresh_from_db()
    assert not binding.enabled
    client.post(f"/bridges/messaging/{binding.pk}/enabled/", {"enabled": "on"})
    binding.refresh_from_db()
    assert binding.enabled
    client.post(f"/bridges/messaging/{binding.pk}/delete/")
    binding.refresh_from_db()
    assert binding.deleted_at is not None and not binding.enabled
    assert MemoryScope.objects.filter(kind="channel", binding=binding).exists()
    page = client.get("/bridges/messaging/").content.decode()
    assert "conversation notes stay on the Files page" in page  # the one-time notice
    assert f'id="binding-{binding.pk}"' not in page


def test_rotating_shows_the_new_secret_once(client_for):
    person = UserFactory()
    binding, old = binding_create(owner=person, kind="standard", title="Mine")
    client = client_for(person)
    response = client.post(f"/bridges/messaging/{binding.pk}/rotate/", follow=True)
    binding.refresh_from_db()
    assert binding.webhook_secret != old
    assert binding.webhook_secret in response.content.decode()
    assert binding.webhook_secret not in client.get(response.redirect_chain[-1][0]).content.decode()
    assert binding.previous_secret_expires_at is not None


def test_an_endpoint_is_registered_with_event_types_and_its_secret_once(client_for):
    person = UserFactory()
    client = client_for(person)
    response = client.post(
        "/bridges/events/",
        {"url": "http://127.0.0.1:9/hook", "event_types": ["memory.changed", "proposal.created"]},
        follow=True,
    )
    assert response.status_code == 200
    assert endpoint_secret_gone_on_reload(client, response)
    endpoint = EventEndpoint.objects.get(owner=person)
    assert endpoint.event_types == ["memory.changed", "proposal.created"]
    assert endpoint.secret in response.content.decode()
    bad = client.post("/bridges/events/", {"url": "http://127.0.0.1:9/x", "event_types": ["x"]})
    assert bad.status_code == 400


def test_the_pages_speak_german(client_for, settings):
    client = client_for(UserFactory())
    # The locale middleware picks the language per request, from the browser's header.
    german = {"accept-language": "de-DE,de;q=0.9"}
    messaging = client.get("/bridges/messaging/", headers=german).content.decode()
    events = client.get("/bridges/events/", headers=german).content.decode()
    assert "Messaging-App verbinden" in messaging and "Verknüpfung anlegen" in messaging
    assert "Art der Brücke" in messaging
    assert "Ausgehende Ereignisse" in events and "Endpunkt hinzufügen" in events


def endpoint_secret_gone_on_reload(client, response) -> bool:
    """After the redirect, reloading the page neither repeats the POST nor shows the secret."""
    endpoint = EventEndpoint.objects.get()
    again = client.get(response.redirect_chain[-1][0]).content.decode()
    return EventEndpoint.objects.count() == 1 and endpoint.secret not in again


def test_reloading_after_creating_a_binding_makes_no_second_one(client_for):
    person = UserFactory()
    client = client_for(person)
    response = client.post(
        "/bridges/messaging/", {"kind": "standard", "title": "Family"}, follow=True
    )
    secret = MessagingBinding.objects.get(owner=person).webhook_secret
    assert secret in response.content.decode()
    again = client.get(response.redirect_chain[-1][0]).content.decode()
    assert MessagingBinding.objects.filter(owner=person).count() == 1
    assert secret not in again


def test_the_last_deliveries_name_the_chat_and_thread_each_message_came_from(client_for):
    person = UserFactory()
    binding, _ = binding_create(owner=person, kind="standard", title="Many chats")
    inbound_accept(
        binding=binding, incoming=Incoming("m1", "hi", chat_id="family<b>", thread_id="trips")
    )
    inbound_accept(binding=binding, incoming=Incoming("m2", "no chat"))
    page = client_for(person).get(f"/bridges/messaging/{binding.pk}/deliveries/").content.decode()
    assert '<code class="chat">family&lt;b&gt; / trips</code>' in page
    assert page.count('class="chat"') == 1
