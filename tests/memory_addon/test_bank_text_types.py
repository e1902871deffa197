"""A project bank keeps .txt and .xml files (the memory tool's examples use them) through
every way in; a person's notes stay Markdown (M6, M17)."""

from __future__ import annotations

import pytest

from memory_addon.models import MemoryFile
from memory_addon.services.scopes import bank_create, ensure_user_scope

pytestmark = pytest.mark.django_db

BANK = "git:bank-text-types"


def _tool(api, name, arguments, project_key=BANK):
    answer = api.post(
        "/api/memory/tools/call",
        {"turn": {"project_key": project_key}, "name": name, "arguments": arguments},
    )
    assert answer.status_code == 200, answer.content
    return answer.json()


@pytest.mark.parametrize("path", ["todo.txt", "plans/steps.xml"])
def test_the_bank_tools_write_read_edit_and_delete_text_files(api, user, path):
    assert _tool(api, "write_memory", {"path": path, "content": "<a>one</a>\n"})["ok"]
    assert _tool(api, "edit_memory", {"path": path, "old_string": "one", "new_string": "two"})["ok"]
    read = _tool(api, "read_memory", {"path": path})
    assert read["ok"] and "<a>two</a>" in read["output"]
    shown = api.get(f"/api/memory/banks/file?project_key={BANK}&path={path}")
    assert shown.status_code == 200 and shown.json()["path"] == path
    assert _tool(api, "delete_memory", {"path": path})["ok"]
    assert not MemoryFile.objects.filter(scope__project_key=BANK).exists()


def test_another_type_is_refused_in_a_bank_naming_the_types(api, user):
    answer = _tool(api, "write_memory", {"path": "photo.png", "content": "x"})
    assert not answer["ok"] and "Only text files ending in .md, .txt, .xml" in answer["output"]


def test_the_persons_notes_refuse_a_text_file(api, user):
    scope = ensure_user_scope(user)
    answer = api.put(
        f"/api/memory/scopes/{scope.pk}/file?path=todo.txt", {"content": "x\n", "base_sha256": ""}
    )
    assert answer.status_code in (400, 422) and "Only Markdown" in answer.content.decode()
    assert not MemoryFile.objects.filter(scope=scope).exists()


def test_the_bank_page_saves_a_text_file_and_the_files_page_opens_it(client, user):
    client.force_login(user)
    bank = bank_create(user=user, project_key=BANK, project_name="shop")
    saved = client.post(
        f"/memory/banks/{bank.pk}/file/", {"path": "todo.txt", "content": "ship it\n"}
    )
    assert saved.status_code in (200, 302), saved.content
    assert MemoryFile.objects.get(scope=bank, path="todo.txt").content == "ship it\n"
    opened = client.get(f"/files/{bank.pk}/?path=todo.txt")
    assert opened.status_code == 200 and "ship it" in opened.content.decode()
