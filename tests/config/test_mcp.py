"""MCP server (B1): the SDK's own client over real HTTP against the live ASGI server."""

from __future__ import annotations

import asyncio
import sys
from contextlib import asynccontextmanager

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from accounts.models import ApiToken
from accounts.services import api_token_create, api_token_revoke
from addons.services import addon_setting_put
from config.mcp_server import STARTUP_URI, TURN_CONTEXT_URI
from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import bank_find, bank_set_enabled, ensure_user_scope
from tests.conftest import ROOT
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

CHAT_TOOLS = {
    "context_read",
    "propose_change",
    "revert_change",
    "list_memory",
    "search",
    "search_conversations",
}
BANK_TOOLS = {
    "read_memory",
    "list_memory",
    "write_memory",
    "edit_memory",
    "delete_memory",
    "bank_status",
}


def _session(live, token, project_key=""):
    headers = {"Authorization": f"Bearer {token}"}
    if project_key:
        headers["X-Memory-Project"] = project_key
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return http, Client(streamable_http_client(f"{live.url}/mcp/", http_client=http))


def mcp(live, token, calls, project_key=""):
    """Open one MCP client, run [(tool, arguments) | "list"], return the answers."""

    async def run():
        http, client = _session(live, token, project_key)
        answers = []
        async with http, client:
            for call in calls:
                if call == "list":
                    listed = await client.list_tools()
                    answers.append({tool.name for tool in listed.tools})
                else:
                    result = await client.call_tool(*call)
                    answers.append((not result.is_error, result.content[0].text))
        return answers

    return asyncio.run(run())


@pytest.fixture
def person():
    return UserFactory()


@pytest.fixture
def token(person):
    return api_token_create(user=person, name="mcp")[1]


def _notes(person, text="- home: lives in Rome -> home.md\n"):
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content=text,
        base_sha256=None,
    )


def test_no_token_is_a_401(live_asgi_server):
    response = httpx.post(
        f"{live_asgi_server.url}/mcp/",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_revoked_token_is_a_401(live_asgi_server, person):
    row, token = api_token_create(user=person, name="gone")
    api_token_revoke(token=row)
    response = httpx.post(
        f"{live_asgi_server.url}/mcp/",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 401


def test_lists_the_memory_tools_and_search(live_asgi_server, token):
    [names] = mcp(live_asgi_server, token, ["list"])
    assert names == CHAT_TOOLS


def test_context_read_and_list_memory_read_the_persons_notes(live_asgi_server, person, token):
    _notes(person)
    (read_ok, read), (list_ok, found) = mcp(
        live_asgi_server,
        token,
        [("context_read", {"path": "index.md"}), ("list_memory", {"query": "Rome"})],
    )
    assert read_ok and "lives in Rome" in read and 'trust="untrusted-observation"' in read
    assert list_ok and "Rome" in found


def test_propose_change_asks_first_and_revert_change_takes_back_a_saved_note(
    live_asgi_server, person, token
):
    [(ok, proposed)] = mcp(
        live_asgi_server,
        token,
        [("propose_change", {"action": "add", "text": "- tea: likes green tea -> tea.md"})],
    )
    assert ok and "Proposed" in proposed
    assert not MemoryFile.objects.filter(scope__owner=person).exists()

    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")
    [(ok, saved)] = mcp(
        live_asgi_server,
        token,
        [("propose_change", {"action": "add", "text": "- tea: likes green tea -> tea.md"})],
    )
    assert ok and "Saved to memory" in saved
    change_id = int(saved.split("change ")[1].split(")")[0])
    [(ok, reverted)] = mcp(live_asgi_server, token, [("revert_change", {"change_id": change_id})])
    assert ok, reverted
    assert not MemoryFile.objects.filter(
        scope=ensure_user_scope(person), content__contains="green tea"
    ).exists()


def test_refusals_are_tool_errors_with_the_reason(live_asgi_server, person, token):
    [(ok, text)] = mcp(
        live_asgi_server,
        token,
        [("propose_change", {"action": "add", "text": "- db: db_password=hunter22"})],
    )
    assert not ok and "Refused" in text and "hunter22" not in text


def test_a_foreign_token_sees_nothing_of_another_persons_notes(live_asgi_server, person):
    _notes(person, "- secret place: the key is under the blue pot -> home.md\n")
    stranger_token = api_token_create(user=UserFactory(), name="other")[1]
    (_, read), (_, found) = mcp(
        live_asgi_server,
        stranger_token,
        [("context_read", {"path": "index.md"}), ("list_memory", {"query": "blue pot"})],
    )
    assert "blue pot" not in read and "There is no file index.md" in read
    assert found == "No note matches 'blue pot'."


def test_with_a_project_key_the_bank_tools_are_served(live_asgi_server, person, token):
    names, (c_ok, _), (w_ok, _), (e_ok, _), (r_ok, read) = mcp(
        live_asgi_server,
        token,
        [
            "list",
            ("bank_status", {"create": True}),
            ("write_memory", {"content": "# Build\nmake test\n"}),
            ("edit_memory", {"old_string": "make test", "new_string": "make check"}),
            ("read_memory", {}),
        ],
        project_key="git:mcp-bank",
    )
    assert names == BANK_TOOLS
    assert c_ok and w_ok and e_ok and r_ok and "make check" in read
    assert bank_find(person, "git:mcp-bank") is not None


def test_a_read_only_token_lists_and_calls_only_read_tools(live_asgi_server, person):
    token = api_token_create(user=person, name="ro", scope=ApiToken.Scope.READ_ONLY)[1]
    names, (ok, text) = mcp(
        live_asgi_server,
        token,
        ["list", ("propose_change", {"action": "add", "text": "- a: b -> a.md"})],
    )
    assert names == {"context_read", "list_memory", "search", "search_conversations"}
    assert not ok and "read-only" in text


def test_a_bank_only_token_needs_a_project_key(live_asgi_server, person):
    token = api_token_create(user=person, name="bank", scope=ApiToken.Scope.BANK_ONLY)[1]
    response = httpx.post(
        f"{live_asgi_server.url}/mcp/",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 403
    [names] = mcp(live_asgi_server, token, ["list"], project_key="git:x")
    assert names == BANK_TOOLS


def test_search_without_collections_says_so(live_asgi_server, token):
    [(ok, text)] = mcp(live_asgi_server, token, [("search", {"query": "anything"})])
    assert ok and "no knowledge collections" in text


def _stdio(live, token, *args):
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "config.cli", "mcp", *args],
        env={
            "MEMORY_HOST_URL": live.url,
            "MEMORY_HOST_TOKEN": token,
            "PATH": "/usr/bin:/bin",
        },
        cwd=str(ROOT),
    )


def test_stdio_through_the_command_line_client(live_asgi_server, person, token):
    _notes(person)
    params = _stdio(live_asgi_server, token)

    async def run():
        async with Client(params) as client:
            listed = await client.list_tools()
            result = await client.call_tool("context_read", {"path": "index.md"})
            return {t.name for t in listed.tools}, result

    names, result = asyncio.run(run())
    assert names == CHAT_TOOLS
    assert not result.is_error and "lives in Rome" in result.content[0].text


def test_search_returns_cited_excerpts_of_the_persons_collections_only(
    live_asgi_server, person, token, client, tmp_path, settings, celery_worker
):
    from knowledge.models import FolderGrant
    from tests.knowledge.conftest import barrier

    settings.KNOWLEDGE_ALLOWED_ROOTS = [str(tmp_path)]
    FolderGrant.objects.create(path=str(tmp_path), user=person)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.txt").write_text("Alpacas are calm animals that live in the Andes.\n")
    client.force_login(person)

    def post(url, body):
        return client.post(url, body, content_type="application/json").json()

    store_id = post("/api/knowledge/stores", {"name": "Plain", "provider": "none"})["id"]
    job_id = post(f"/api/knowledge/stores/{store_id}/sources", {"path": str(folder)})["job"]["id"]
    barrier()
    post(f"/api/knowledge/jobs/{job_id}/confirm", {})
    barrier()

    [(ok, text)] = mcp(live_asgi_server, token, [("search", {"query": "animals in the Andes"})])
    assert ok and "[R1]" in text and "Alpacas" in text and "<retrieved_context" in text
    stranger = api_token_create(user=UserFactory(), name="other")[1]
    [(ok, text)] = mcp(live_asgi_server, stranger, [("search", {"query": "animals in the Andes"})])
    assert ok and "Alpacas" not in text


def test_stdio_with_bank_serves_the_bank_of_the_project_folder(
    live_asgi_server, person, token, tmp_path
):
    import subprocess

    from config.cli import project_identity

    project = tmp_path / "Projekt Ω"  # not Latin-1 safe as a header: sent percent-encoded
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    params = _stdio(live_asgi_server, token, "--bank", "--project", str(project))

    async def run():
        async with Client(params) as client:
            listed = await client.list_tools()
            await client.call_tool("bank_status", {"create": True})
            await client.call_tool("write_memory", {"content": "# Notes\nuse make\n"})
            return {t.name for t in listed.tools}

    assert asyncio.run(run()) == BANK_TOOLS
    key, _ = project_identity(project)
    bank = bank_find(person, key)
    assert bank.project_name == "Projekt Ω"  # the folder's name came along for the new bank
    assert MemoryFile.objects.get(scope=bank, path="MEMORY.md").content == "# Notes\nuse make\n"


@pytest.mark.parametrize("project_key", ["", "proj-unknown-tool"])
def test_an_unknown_tool_is_a_json_rpc_invalid_params_error_naming_every_tool(
    live_asgi_server, token, project_key
):
    from mcp.shared.exceptions import MCPError

    async def run():
        http, client = _session(live_asgi_server, token, project_key)
        async with http, client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("forget_everything", {})
            return raised.value

    error = asyncio.run(run())
    assert error.code == -32602
    assert "forget_everything" in error.message
    listed = BANK_TOOLS if project_key else CHAT_TOOLS
    assert all(name in error.message for name in listed)


# --- banks over MCP: both transports reach the same gate ---------------------------

VIA = ["http", "stdio"]


@asynccontextmanager
async def _connected(live, token, via, project_key):
    """An MCP client for the bank of `project_key`, over /mcp/ or the stdio proxy."""
    if via == "http":
        http, client = _session(live, token, project_key)
        async with http, client:
            yield client
    else:
        async with Client(_stdio(live, token, "--bank", "--key", project_key)) as client:
            yield client


def _bank_with(person, key, content):
    bank = bank_set_enabled(user=person, project_key=key, enabled=True)
    file_write(user=person, scope=bank, path="MEMORY.md", content=content, base_sha256=None)


@pytest.mark.parametrize("via", VIA)
def test_a_key_without_a_bank_is_refused_with_how_to_create_it_and_creates_nothing(
    live_asgi_server, person, token, via
):
    async def run():
        async with _connected(live_asgi_server, token, via, "git:typo") as client:
            calls = [("write_memory", {"content": "x"}), ("read_memory", {}), ("list_memory", {})]
            return client.instructions, [await client.call_tool(*call) for call in calls]

    instructions, results = asyncio.run(run())
    for result in results:
        text = result.content[0].text
        assert result.is_error and "No project memory bank exists for the key git:typo" in text
        assert "memory-host on" in text and "bank_status with create: true" in text
    assert "memory-host on" in instructions and "bank_status with create: true" in instructions
    assert bank_find(person, "git:typo") is None


@pytest.mark.parametrize("via", VIA)
def test_bank_status_with_create_makes_the_bank_on_and_reports_it(
    live_asgi_server, person, token, via
):
    async def run():
        async with _connected(live_asgi_server, token, via, "git:new") as client:
            before = await client.call_tool("bank_status", {})
            created = await client.call_tool("bank_status", {"create": True})
            wrote = await client.call_tool("write_memory", {"content": "# Build\nmake\n"})
            after = await client.call_tool("bank_status", {})
            return before, created, wrote, after

    before, created, wrote, after = asyncio.run(run())
    assert not before.is_error and "No project memory bank exists" in before.content[0].text
    assert not created.is_error and "memory: on" in created.content[0].text
    assert not wrote.is_error
    assert "files: 1, 13 bytes" in after.content[0].text and "make" in after.content[0].text
    assert bank_find(person, "git:new").enabled


def test_bank_status_arguments_are_checked_naming_the_field(live_asgi_server, token):
    [(ok, text)] = mcp(
        live_asgi_server, token, [("bank_status", {"create": "yes"})], project_key="git:x"
    )
    assert not ok and "create" in text


def test_a_read_only_token_sees_bank_status_but_cannot_create_a_bank(live_asgi_server, person):
    token = api_token_create(user=person, name="ro", scope=ApiToken.Scope.READ_ONLY)[1]
    names, (ok, text) = mcp(
        live_asgi_server, token, ["list", ("bank_status", {"create": True})], project_key="git:ro"
    )
    assert names == {"read_memory", "list_memory", "bank_status"}
    assert not ok and "read-only" in text
    assert bank_find(person, "git:ro") is None


@pytest.mark.parametrize("via", VIA)
def test_the_startup_context_is_a_resource_and_in_the_instructions(
    live_asgi_server, person, token, via
):
    _bank_with(person, "git:ctx", "# Project\nRun make check before a commit.\n")

    async def run():
        async with _connected(live_asgi_server, token, via, "git:ctx") as client:
            listed = await client.list_resources()
            read = await client.read_resource(STARTUP_URI)
            return client.instructions, listed.resources, read.contents

    instructions, resources, contents = asyncio.run(run())
    assert [str(resource.uri) for resource in resources] == [STARTUP_URI]
    [content] = contents
    assert "Run make check before a commit." in content.text
    assert 'trust="untrusted-observations"' in content.text
    assert content.text in instructions  # the same startup context, after the guidance
    assert "read_memory" in instructions and "never secrets" in instructions


def test_a_bank_that_is_off_gives_no_startup_context_and_says_why(live_asgi_server, person, token):
    _bank_with(person, "git:off", "# Project\nsecret plan\n")
    bank_set_enabled(user=person, project_key="git:off", enabled=False)

    async def run():
        async with _connected(live_asgi_server, token, "http", "git:off") as client:
            return client.instructions, (await client.read_resource(STARTUP_URI)).contents

    instructions, [content] = asyncio.run(run())
    assert "secret plan" not in instructions and "secret plan" not in content.text
    assert "Project memory is off for this project" in instructions
    assert "Project memory is off for this project" in content.text


def test_without_a_project_key_the_one_resource_is_the_turn_context_and_the_notes_instructions(
    live_asgi_server, token
):
    async def run():
        http, client = _session(live_asgi_server, token)
        async with http, client:
            return client.instructions, (await client.list_resources()).resources

    instructions, resources = asyncio.run(run())
    assert [str(resource.uri) for resource in resources] == [TURN_CONTEXT_URI]
    assert "context_read" in instructions and TURN_CONTEXT_URI in instructions


def test_a_project_name_header_that_is_not_one_line_is_a_400_naming_it(live_asgi_server, token):
    response = httpx.post(
        f"{live_asgi_server.url}/mcp/",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Authorization": f"Bearer {token}",
            "X-Memory-Project": "git:x",
            "X-Memory-Project-Name": "two%0Alines",
        },
    )
    assert response.status_code == 400
    assert "x-memory-project-name" in response.json()["detail"]
