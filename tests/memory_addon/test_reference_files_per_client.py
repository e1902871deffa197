"""A token whose client reads its own rule files gets no reference files in its turn
context, through every outside entry point (REST turn-context, MCP), over real HTTP."""

from __future__ import annotations

import asyncio
import sys

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from accounts.services import api_token_create
from config.mcp_server import TURN_CONTEXT_URI
from memory_addon.services import references
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.conftest import ROOT
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

RULE = "Always run the linter before a commit."
CLIENT_READS_OWN = "This client reads its own rule files"


@pytest.fixture
def person():
    person = UserFactory()
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="I live in Rome.\n",
        base_sha256=None,
    )
    ref = references.reference_upload(user=person, name="AGENTS.md", data=f"{RULE}\n".encode())
    references.reference_approve(
        user=person, ref=ref, sha256=references.reference_review(ref).sha256
    )
    return person


def rest_context(live, token: str) -> str:
    response = httpx.post(
        f"{live.url}/api/memory/turn-context",
        json={},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert "I live in Rome." in body["block"]
    return body["reference_block"] + "\n" + body["reference_files"]["off"]


async def _read_turn_context(client: Client) -> str:
    [content] = (await client.read_resource(TURN_CONTEXT_URI)).contents
    assert "I live in Rome." in content.text
    return content.text


def mcp_context(live, token: str) -> str:
    async def run():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with http, Client(streamable_http_client(f"{live.url}/mcp/", http_client=http)) as c:
            return await _read_turn_context(c)

    return asyncio.run(run())


def stdio_context(live, token: str) -> str:
    """Through `memory-host mcp`, the stdio proxy a client starts as a command."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "config.cli", "mcp"],
        env={"MEMORY_HOST_URL": live.url, "MEMORY_HOST_TOKEN": token, "PATH": "/usr/bin:/bin"},
        cwd=str(ROOT),
    )

    async def run():
        async with Client(params) as client:
            return await _read_turn_context(client)

    return asyncio.run(run())


ENTRY_POINTS = [
    pytest.param(rest_context, id="rest"),
    pytest.param(mcp_context, id="mcp"),
    pytest.param(stdio_context, id="mcp-stdio"),
]


@pytest.mark.parametrize("read", ENTRY_POINTS)
def test_a_token_whose_client_reads_its_own_rule_files_gets_no_reference_files(
    live_asgi_server, person, read
):
    token = api_token_create(user=person, name="claude code", reads_own_rule_files=True)[1]
    context = read(live_asgi_server, token)
    assert RULE not in context
    assert CLIENT_READS_OWN in context


@pytest.mark.parametrize("read", ENTRY_POINTS)
def test_any_other_token_gets_the_approved_reference_files_after_the_memory(
    live_asgi_server, person, read
):
    token = api_token_create(user=person, name="script")[1]
    context = read(live_asgi_server, token)
    assert RULE in context and '<reference_files trust="reference-data">' in context
    assert CLIENT_READS_OWN not in context
