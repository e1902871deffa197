"""The memory-tool endpoint (B2) against the SDK's reference tool, command by command.

The same generated command sequences run against `BetaLocalFilesystemMemoryTool` in a
temporary folder and, over real HTTP, against POST /api/memory/memory-tool on a
project bank. Both are driven through the `anthropic` SDK's tool interface, so each
command is parsed the way a client parses Claude's tool_use input. After every command
the two results (ok, text) and the two sets of files must be the same.

Normalised, because they must differ (docs/memory-tool.md lists why):
- the reference keeps a folder after its last file goes; here a folder is a path
  prefix, so the reference's empty folders are removed after each command;
- a folder's size is the file system's directory entry there and the sum of its
  files here;
- file text shown to the model is wrapped here as an untrusted observation.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import httpx
import pytest
from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from accounts.services import api_token_create
from memory_addon.models import MemoryFile
from memory_addon.services.scopes import bank_find
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

FILES = [
    "/memories/a.md",
    "/memories/d.md",
    "/memories/notes.txt",
    "/memories/d/a.md",
    "/memories/d/plan.xml",
    "/memories/d/e/b.md",
]
FOLDERS = ["/memories", "/memories/d", "/memories/e", "/memories/d/e"]
TEXT = st.text(alphabet="ab \n", max_size=10)


class HostMemoryTool(BetaAbstractMemoryTool):
    """A client's memory tool that forwards every command to the host's endpoint."""

    def __init__(self, http: httpx.Client, project_key: str) -> None:
        super().__init__()
        self.http, self.project_key = http, project_key

    def _send(self, command) -> str:
        answer = self.http.post(
            "/api/memory/memory-tool",
            json={"input": command.to_dict(), "project_key": self.project_key},
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        if not body["ok"]:
            raise ToolError(body["output"])
        return body["output"]

    view = create = str_replace = insert = delete = rename = _send


def _commands():
    view_range = st.none() | st.tuples(st.integers(-1, 4), st.integers(-1, 5)).map(list)
    renames = st.tuples(st.sampled_from(FILES), st.sampled_from(FILES)) | st.tuples(
        st.sampled_from(FOLDERS), st.sampled_from(FOLDERS)
    )
    return st.one_of(
        st.builds(
            lambda path, shown: (
                {"command": "view", "path": path} | ({"view_range": shown} if shown else {})
            ),
            st.sampled_from(FILES + FOLDERS),
            view_range,
        ),
        st.builds(
            lambda path, text: {"command": "create", "path": path, "file_text": text},
            st.sampled_from(FILES),
            TEXT,
        ),
        st.builds(
            lambda path, old, new: {
                "command": "str_replace",
                "path": path,
                "old_str": old,
                "new_str": new,
            },
            st.sampled_from(FILES),
            st.text(alphabet="ab \n", min_size=1, max_size=3),
            TEXT,
        ),
        st.builds(
            lambda path, line, text: {
                "command": "insert",
                "path": path,
                "insert_line": line,
                "insert_text": text,
            },
            st.sampled_from(FILES),
            st.integers(-1, 5),
            TEXT,
        ),
        st.builds(
            lambda path: {"command": "delete", "path": path},
            st.sampled_from(FILES + FOLDERS),
        ),
        renames.filter(lambda pair: not pair[1].startswith(pair[0] + "/")).map(
            lambda pair: {"command": "rename", "old_path": pair[0], "new_path": pair[1]}
        ),
    )


def _result(tool: BetaAbstractMemoryTool, command: dict) -> tuple[bool, str]:
    try:
        return True, str(tool.call(command))
    except ToolError as error:
        return False, str(error.content)


_FOLDER_LINE = re.compile(r"^[0-9.]+[BKMG]\t(/memories\S*/|/memories(/[de])*)$")


def _normalised(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        if line.startswith("<memory_file ") or line == "</memory_file>":
            continue
        lines.append(_FOLDER_LINE.sub(lambda m: f"<folder>\t{m.group(1)}", line))
    return "\n".join(lines)


def _prune_empty_folders(root: Path) -> None:
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def _reference_files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in root.rglob("*")
        if p.is_file()
    }


def _host_files(user, project_key: str) -> dict[str, str]:
    scope = bank_find(user, project_key)
    rows = MemoryFile.objects.filter(scope=scope) if scope else MemoryFile.objects.none()
    return dict(rows.values_list("path", "content"))


@hypothesis_settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(commands=st.lists(_commands(), min_size=1, max_size=12))
def test_the_endpoint_answers_every_command_as_the_reference_tool_does(live_asgi_server, commands):
    # A person and a folder per example: the bank cap per person and the files stay apart.
    person = UserFactory()
    _, token = api_token_create(user=person, name="parity")
    project_key = f"git:parity-{person.pk}"
    headers = {"Authorization": f"Bearer {token}"}
    with (
        tempfile.TemporaryDirectory() as folder,
        httpx.Client(base_url=live_asgi_server.url, headers=headers, timeout=30) as http,
    ):
        reference = BetaLocalFilesystemMemoryTool(folder)
        host = HostMemoryTool(http, project_key)
        for step, command in enumerate(commands):
            expected = _result(reference, command)
            _prune_empty_folders(reference.memory_root)
            answered = _result(host, command)
            seen = f"step {step}: {command} -> {answered!r} vs {expected!r}"
            assert (answered[0], _normalised(answered[1])) == (
                expected[0],
                _normalised(expected[1]),
            ), seen
            assert _host_files(person, project_key) == _reference_files(reference.memory_root), seen
