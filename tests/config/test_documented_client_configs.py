"""Every client config in docs/mcp.md starts `memory-host mcp` and works, as written there.

The configs are read from the doc itself, so the doc and this test cannot drift apart.
Only what each client fills in before it starts the command is replaced: its
placeholders (`${workspaceFolder}`, `/path/to/your/project`, the two settings).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess

import pytest
from mcp import Client, StdioServerParameters

from accounts.services import api_token_create
from config.cli import project_identity
from memory_addon.models import MemoryFile
from memory_addon.services.scopes import bank_find
from tests.config.console_script import SCRIPT, client_env, install_script
from tests.conftest import ROOT
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

DOC = ROOT / "docs" / "mcp.md"
# A `### Client` heading, then (before the next heading) its ```json block.
CONFIG_BLOCK = re.compile(r"^### (.+?)\n(?:(?!^##).)*?```json\n(.*?)```", re.M | re.S)
PROJECT_PLACEHOLDERS = ("${workspaceFolder}", "/path/to/your/project")


def documented_configs() -> dict[str, dict[str, object]]:
    """{client heading: its one server entry} for every JSON block under a ### heading."""
    text = DOC.read_text()
    found = {}
    for heading, block in re.findall(
        r"^### (.+?)\n(?:(?!^##).)*?```json\n(.*?)```", text, re.M | re.S
    ):
        [(_, entry)] = json.loads(block)["mcpServers"].items()
        found[heading] = entry
    return found


CONFIGS = documented_configs()


def test_the_doc_shows_the_four_kinds_of_client():
    assert set(CONFIGS) == {
        "Claude Desktop",
        "Claude Code",
        "Cursor",
        "Any other stdio client",
    }


@pytest.mark.parametrize("client_name", CONFIGS)
def test_the_documented_command_line_serves_from_another_folder(
    live_asgi_server, tmp_path, client_name
):
    entry = CONFIGS[client_name]
    assert entry["command"] == SCRIPT and entry["args"][0] == "mcp"
    assert set(entry["env"]) == {"MEMORY_HOST_URL", "MEMORY_HOST_TOKEN"}
    person = UserFactory()
    _, token = api_token_create(user=person, name=client_name)
    project = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = [str(project) if arg in PROJECT_PLACEHOLDERS else arg for arg in entry["args"]]
    # `--project .` is the folder the client starts the command in: the project's.
    cwd = project if "." in args else elsewhere
    bin_dir = install_script(tmp_path / "bin")
    env = client_env(live_asgi_server.url, token, path=f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    params = StdioServerParameters(
        command=shutil.which(entry["command"], path=env["PATH"]),
        args=args,
        env=env,
        cwd=str(cwd),
    )
    bank = "--bank" in args

    async def run():
        async with Client(params) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            if bank:
                await client.call_tool("bank_status", {"create": True})
                result = await client.call_tool("write_memory", {"content": "# Repo\nmake\n"})
            else:
                result = await client.call_tool("context_read", {"path": "index.md"})
            return names, result, client.instructions

    names, result, instructions = asyncio.run(run())
    assert not result.is_error, result.content[0].text
    assert instructions
    if bank:
        assert "bank_status" in names and "write_memory" in names
        scope = bank_find(person, project_identity(project)[0])
        assert scope.project_name == "repo"
        assert MemoryFile.objects.get(scope=scope, path="MEMORY.md").content == "# Repo\nmake\n"
    else:
        assert "context_read" in names and "search" in names
