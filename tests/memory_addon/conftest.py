from __future__ import annotations

import json

import pytest

from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn


class Api:
    """JSON calls against the real API through Django's test client."""

    def __init__(self, client) -> None:
        self.client = client

    def _call(self, method: str, url: str, body=None):
        kwargs = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        return getattr(self.client, method)(url, **kwargs)

    def get(self, url):
        return self._call("get", url)

    def post(self, url, body=None):
        return self._call("post", url, body if body is not None else {})

    def put(self, url, body):
        return self._call("put", url, body)

    def delete(self, url):
        return self._call("delete", url)


@pytest.fixture
def api(client, user):
    client.force_login(user)
    return Api(client)


@pytest.fixture
def scope(user):
    return ensure_user_scope(user)


@pytest.fixture
def turn(user):
    return Turn(user=user, conversation_ref="conv-1", message_ref="msg-1", reply_ref_trusted=True)


@pytest.fixture
def binding(user):
    from accounts.services import messaging_binding_create

    binding, _ = messaging_binding_create(owner=user, bridge="telegram", external_id="chat-42")
    return binding
