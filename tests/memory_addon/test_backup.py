"""Export and restore (M18): restore adds only missing files and never replaces memory."""

from __future__ import annotations

import io
import zipfile

import pytest

from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import agent_scope, user_scope
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_export_holds_every_scope_as_markdown(api, user, scope):
    agent = AgentFactory(owner=user, slug="coder")
    file_write(
        user=user, scope=scope, path="index.md", content="- home: Rome -> home.md\n", base_sha256=""
    )
    file_write(
        user=user, scope=agent_scope(agent), path="index.md", content="Use tabs.\n", base_sha256=""
    )
    response = api.get("/api/memory/export")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert sorted(archive.namelist()) == ["Memory/agents/coder/index.md", "Memory/index.md"]
    assert archive.read("Memory/agents/coder/index.md").decode() == "Use tabs.\n"


def test_restore_adds_missing_files_and_never_replaces_current_ones(client, user, scope):
    file_write(user=user, scope=scope, path="index.md", content="Current.\n", base_sha256="")
    client.force_login(user)
    archive = _zip({"Memory/index.md": "Old export.\n", "Memory/home.md": "Lives in Rome.\n"})
    response = client.post("/api/memory/restore", {"archive": io.BytesIO(archive)})
    body = response.json()
    assert response.status_code == 200, body
    assert body["added"] == ["Memory/home.md"] and body["kept"] == ["Memory/index.md"]
    assert MemoryFile.objects.get(scope=scope, path="index.md").content == "Current.\n"
    assert MemoryFile.objects.get(scope=scope, path="home.md").content == "Lives in Rome.\n"
    assert ChangeSet.objects.filter(origin="restore").count() == 1


def test_restore_refuses_secrets_traversal_and_unknown_folders(client, user):
    client.force_login(user)
    archive = _zip(
        {
            "Memory/db.md": "db_password=hunter22\n",
            "Memory/../../etc/x.md": "escape\n",
            "Memory/agents/ghost/index.md": "no such agent\n",
        }
    )
    body = client.post("/api/memory/restore", {"archive": io.BytesIO(archive)}).json()
    reasons = dict(body["refused"])
    assert "Line 1 looks like it holds a secret" in reasons["Memory/db.md"]
    assert "'..'" in reasons["Memory/../../etc/x.md"]
    assert "no matching memory folder" in reasons["Memory/agents/ghost/index.md"]
    assert body["added"] == [] and "hunter22" not in str(body)
    assert not MemoryFile.objects.filter(scope=user_scope(user)).exists()


def test_restore_of_something_that_is_not_a_zip_is_a_clear_400(client, user):
    client.force_login(user)
    response = client.post("/api/memory/restore", {"archive": io.BytesIO(b"not a zip")})
    assert response.status_code == 400 and "not a zip" in response.json()["detail"]


def test_the_files_page_restores_through_the_form(client, user, scope):
    client.force_login(user)
    archive = _zip({"Memory/food.md": "Likes pasta.\n"})
    response = client.post("/files/restore/", {"archive": io.BytesIO(archive)}, follow=True)
    assert "Restored 1 file(s)" in response.content.decode()
    assert MemoryFile.objects.get(scope=scope, path="food.md").content == "Likes pasta.\n"
