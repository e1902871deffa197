"""A file or folder name holding a secret is refused on every way a memory path comes in,
naming the kind of secret and never the value (memory_addon/core/paths.py is the one gate)."""

from __future__ import annotations

import pytest

from host.errors import PathNotAllowed
from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import bank_create
from memory_addon.services.tools import tool_call_execute
from memory_addon.turns import Turn

pytestmark = pytest.mark.django_db

VALUE = "Sommer2024xQ"
TOKEN = "ghp_R8kq2LmZ0vX4tYp7Wn3bQe9Hc5Jd1Fs6Ga2K"
SECRET_PATHS = [f"notes/password-{VALUE}.md", f"{TOKEN}.md", f"{TOKEN}/notes.md"]


def _leaks(text: str) -> bool:
    return VALUE in text or TOKEN[4:] in text


@pytest.mark.parametrize("path", SECRET_PATHS)
def test_the_write_service_refuses_a_secret_path_without_the_value(user, scope, path):
    with pytest.raises(PathNotAllowed) as refused:
        file_write(user=user, scope=scope, path=path, content="x\n", base_sha256=None)
    assert "secret" in str(refused.value) and not _leaks(str(refused.value))
    assert not MemoryFile.objects.filter(scope=scope).exclude(path="index.md").exists()


@pytest.mark.parametrize("path", SECRET_PATHS)
def test_the_rest_api_refuses_a_secret_path_with_a_400(api, scope, path):
    response = api.put(f"/api/memory/scopes/{scope.pk}/file?path={path}", {"content": "x\n"})
    assert response.status_code == 400
    assert "secret" in response.json()["detail"] and not _leaks(response.content.decode())


def test_the_memory_tool_refuses_a_secret_path(api, user):
    response = api.post(
        "/api/memory/memory-tool",
        {
            "input": {
                "command": "create",
                "path": f"/memories/password-{VALUE}.md",
                "file_text": "x\n",
            },
            "project_key": "git:names",
        },
    )
    body = response.json()
    assert response.status_code == 200 and not body["ok"]
    assert body["output"].startswith("Refused:") and not _leaks(body["output"])


def test_the_chat_tool_refuses_a_secret_path(user):
    turn = Turn(user=user, project_key="proj-names")
    ok, output = tool_call_execute(
        turn=turn, name="write_memory", arguments={"path": f"{TOKEN}.md", "content": "x\n"}
    )
    assert not ok and "secret" in output and not _leaks(output)


def test_the_bank_page_refuses_a_secret_path_as_a_form_error(client, user):
    bank = bank_create(user=user, project_key="git:names", project_name="names")
    client.force_login(user)
    response = client.post(
        f"/memory/banks/{bank.pk}/file/",
        {"path": f"password-{VALUE}.md", "content": "x\n", "base_sha256": ""},
    )
    assert response.status_code == 422
    assert 'id="file-error"' in response.content.decode()
    assert not MemoryFile.objects.filter(scope=bank, path__contains=VALUE).exists()


@pytest.mark.parametrize(
    "path", ["wifi-password.md", "password-policy.md", "tokens/budget-2024.md"]
)
def test_names_that_only_mention_a_secret_are_written(user, scope, path):
    file_write(user=user, scope=scope, path=path, content="x\n", base_sha256=None)
    assert MemoryFile.objects.filter(scope=scope, path=path).exists()


def test_the_refusal_is_in_the_persons_language_with_the_kind_in_words(api, client, scope):
    response = client.put(
        f"/api/memory/scopes/{scope.pk}/file?path=password-{VALUE}.md",
        {"content": "x\n"},
        content_type="application/json",
        headers={"accept-language": "de-DE,de;q=0.9"},
    )
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "Ein Datei- oder Ordnername scheint ein Geheimnis zu enthalten (ein Passwort oder "
        "Token mit zugewiesenem Wert). Benennen Sie ihn nach seinem Thema und halten Sie "
        "Geheimnisse aus dem Gedächtnis heraus."
    )
