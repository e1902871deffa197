"""The project-bank command-line client against the live API (M17)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from accounts.services import api_token_create
from config.cli import project_identity
from memory_addon.services.tools import tool_call_execute
from memory_addon.turns import Turn
from tests.config.console_script import client_env, launcher_code
from tests.conftest import ROOT
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _cli(live, token, project, *args):
    result = subprocess.run(
        [sys.executable, "-m", "config.cli", *args, "--project", str(project)],
        cwd=ROOT,
        env={"MEMORY_HOST_URL": live.url, "MEMORY_HOST_TOKEN": token, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_status_files_show_off_on_and_path(live_asgi_server, tmp_path):
    person = UserFactory()
    _, token = api_token_create(user=person, name="cli")
    project = tmp_path / "repo"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    key, _ = project_identity(project)
    turn = Turn(user=person, project_key=key)
    assert tool_call_execute(
        turn=turn, name="write_memory", arguments={"content": "# Build\nmake test\n"}
    )[0]

    status = _cli(live_asgi_server, token, project, "status")
    assert "memory: on" in status and "files: 1" in status and "make test" in status
    assert "MEMORY.md" in _cli(live_asgi_server, token, project, "files")
    assert _cli(live_asgi_server, token, project, "show") == "# Build\nmake test\n"
    assert "memory: off" in _cli(live_asgi_server, token, project, "off")
    ok, output = tool_call_execute(turn=turn, name="read_memory", arguments={})
    assert not ok and "off" in output
    assert "memory: on" in _cli(live_asgi_server, token, project, "on")
    assert "Projects/" in _cli(live_asgi_server, token, project, "path")


def test_linked_worktrees_share_a_bank_and_clones_do_not(tmp_path):
    main = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(main),
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    subprocess.run(
        ["git", "-C", str(main), "worktree", "add", "-q", str(tmp_path / "wt")], check=True
    )
    subprocess.run(["git", "clone", "-q", str(main), str(tmp_path / "clone")], check=True)
    assert project_identity(main)[0] == project_identity(tmp_path / "wt")[0]
    assert project_identity(main)[0] != project_identity(tmp_path / "clone")[0]


def _cli_failing(url: str, token: str, project, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "config.cli", *args, "--project", str(project)],
        cwd=ROOT,
        env={"MEMORY_HOST_URL": url, "MEMORY_HOST_TOKEN": token, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_a_host_that_is_down_a_bad_token_and_a_missing_file_are_one_line_each(
    live_asgi_server, tmp_path
):
    from tests.conftest import free_port

    person = UserFactory()
    _, token = api_token_create(user=person, name="cli")
    down = _cli_failing(f"http://127.0.0.1:{free_port()}", token, tmp_path, "status")
    assert down.stderr.count("\n") == 1
    assert "cannot reach the memory host" in down.stderr and "MEMORY_HOST_URL" in down.stderr
    refused = _cli_failing(live_asgi_server.url, "mh_not-a-token", tmp_path, "status")
    assert "refused the token" in refused.stderr and "MEMORY_HOST_TOKEN" in refused.stderr
    missing = _cli_failing(live_asgi_server.url, token, tmp_path, "show", "notes/todo.md")
    assert "no file notes/todo.md" in missing.stderr


def test_the_stdio_proxy_to_a_host_that_is_down_ends_with_one_line(tmp_path):
    from tests.conftest import free_port

    result = subprocess.run(
        [sys.executable, "-m", "config.cli", "mcp", "--project", str(tmp_path)],
        cwd=ROOT,
        env={
            "MEMORY_HOST_URL": f"http://127.0.0.1:{free_port()}",
            "MEMORY_HOST_TOKEN": "mh_x",
            "PATH": "/usr/bin:/bin",
        },
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    assert "MCP proxy" in result.stderr and "MEMORY_HOST_URL" in result.stderr


LAUNCHES = {
    "python -m config.cli": ["-m", "config.cli"],
    "the console script's entry point": ["-c", launcher_code()],
}


def _run_elsewhere(launch, url, token, folder, *args):
    return subprocess.run(
        [sys.executable, *launch, *args],
        cwd=folder,
        env=client_env(url, token),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("launch", LAUNCHES.values(), ids=LAUNCHES.keys())
def test_the_client_works_from_any_folder_with_only_the_url_and_token(
    live_asgi_server, tmp_path, launch
):
    _, token = api_token_create(user=UserFactory(), name="cli")
    project = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    key, _ = project_identity(project)

    def run(*args):
        result = _run_elsewhere(launch, live_asgi_server.url, token, elsewhere, *args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert "memory: on" in run("on", "--project", str(project))
    status = run("status", "--key", key)
    assert "memory: on" in status and "files: 0" in status
    assert "Projects/repo" in run("path", "--project", str(project))


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["mcp", "--bank"], ["--project", "--key"]),
        (["status", "--project", "/no/such/folder"], ["--project /no/such/folder"]),
        (["files", "--key", " "], ["--key"]),
    ],
    ids=["mcp-bank-without-a-project", "project-not-a-folder", "empty-key"],
)
def test_a_missing_or_bad_project_is_one_line_naming_the_option(tmp_path, args, named):
    result = _run_elsewhere(
        LAUNCHES["python -m config.cli"], "http://127.0.0.1:1", "mh_x", tmp_path, *args
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert all(option in result.stderr for option in named), result.stderr
