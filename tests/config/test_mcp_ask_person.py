"""ask_person over MCP (M19): offered only to a client that can ask its person (form
elicitation); the question is a form in the tool call's answer, and the person's reply
is the tool result. The SDK's own client over real HTTP."""

from __future__ import annotations

import asyncio

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from accounts.services import api_token_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

CITY = {
    "question": "Which city should the trip start from?",
    "why": "Only you know where you will be.",
    "options": ["Milan", "Rome"],
    "recommended": "Rome",
}


@pytest.fixture
def token():
    return api_token_create(user=UserFactory(), name="mcp")[1]


def session(live, token, reply=None, calls=()):
    """One client; `reply` answers elicitations (None: the client cannot elicit)."""
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context, params):
        asked.append(params)
        return reply

    async def run():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        client = Client(
            streamable_http_client(f"{live.url}/mcp/", http_client=http),
            elicitation_callback=elicit if reply is not None else None,
        )
        async with http, client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            results = []
            for arguments in calls:
                result = await client.call_tool("ask_person", arguments)
                results.append((not result.is_error, result.content[0].text))
        return names, results

    names, results = asyncio.run(run())
    return names, results, asked


def test_a_client_that_cannot_ask_its_person_is_not_offered_ask_person(live_asgi_server, token):
    names, _, _ = session(live_asgi_server, token)
    assert "ask_person" not in names


def test_the_question_is_elicited_and_the_persons_answer_is_the_tool_result(
    live_asgi_server, token
):
    reply = types.ElicitResult(action="accept", content={"choice": "Milan", "other": "by train"})
    names, results, asked = session(live_asgi_server, token, reply, [CITY])
    assert "ask_person" in names
    (form,) = asked
    assert form.message.startswith("Which city should the trip start from?")
    assert "Why it asks: Only you know where you will be." in form.message
    assert "1. Rome (recommended)" in form.message
    assert form.requested_schema["properties"]["choice"]["enum"] == ["Rome", "Milan"]
    assert results == [(True, "The person answered: Milan — by train")]


def test_a_declined_question_tells_the_model_to_decide_and_name_its_choice(live_asgi_server, token):
    reply = types.ElicitResult(action="decline")
    _, results, _ = session(live_asgi_server, token, reply, [CITY])
    ((ok, text),) = results
    assert ok and "Decide by yourself" in text and "Decided without you" in text


@pytest.mark.parametrize(
    ("arguments", "named"),
    [({}, "'question' is missing"), ({**CITY, "extra": 1}, "'extra' is not a field")],
)
def test_bad_ask_person_arguments_are_a_tool_error_and_nothing_is_asked(
    live_asgi_server, token, arguments, named
):
    reply = types.ElicitResult(action="accept", content={"choice": "Rome"})
    _, results, asked = session(live_asgi_server, token, reply, [arguments])
    ((ok, text),) = results
    assert not ok and named in text
    assert asked == []
