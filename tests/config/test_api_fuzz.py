"""Schemathesis against the live API: generated requests never get a 500."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from accounts.services import api_token_create
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_generated_requests_never_get_a_server_error(live_asgi_server, tmp_path):
    user = UserFactory()
    file_write(
        user=user,
        scope=ensure_user_scope(user),
        path="index.md",
        content="- a: b -> a.md\n",
        base_sha256="",
    )
    memory_change_request(
        turn=Turn(user=user), operation={"action": "add", "text": "- c: d -> c.md"}
    )
    _, token = api_token_create(user=user, name="fuzz")
    binary = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert binary, "schemathesis is a test dependency"
    result = subprocess.run(
        [
            binary,
            "run",
            f"{live_asgi_server.url}/api/openapi.json",
            "--url",
            live_asgi_server.url,
            "-H",
            f"Authorization: Bearer {token}",
            "--checks",
            "not_a_server_error",
            "--max-examples",
            "10",
            "--seed",
            "1",
            "--generation-deterministic",
            "--request-timeout",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
