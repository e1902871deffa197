"""Export and restore (M18): restore adds only missing files and never replaces memory."""

from __future__ import annotations

import io
import zipfile

import pytest

from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_agent_scope, ensure_user_scope
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
        user=user,
        scope=ensure_agent_scope(agent),
        path="index.md",
        content="Use tabs.\n",
        base_sha256="",
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
    assert not MemoryFile.objects.filter(scope=ensure_user_scope(user)).exists()


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


# --- Hostile archives (issue 10, item 15) -------------------------------------


def _raw_zip(
    name: str,
    payload: bytes,
    *,
    declared_size: int | None = None,
    crc: int | None = None,
    method: int = zipfile.ZIP_DEFLATED,
    flags: int = 0,
) -> bytes:
    """One-entry zip written by hand, so the header can lie about size, CRC or method."""
    import struct
    import zlib

    if method == zipfile.ZIP_DEFLATED:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        data = packer.compress(payload) + packer.flush()
    else:
        data = payload
    real_crc = zlib.crc32(payload)
    size = len(payload) if declared_size is None else declared_size
    crc = real_crc if crc is None else crc
    encoded = name.encode()
    local = struct.pack(
        "<4s5H3L2H", b"PK\x03\x04", 20, flags, method, 0, 0, crc, len(data), size, len(encoded), 0
    )
    central = struct.pack(
        "<4s6H3L5H2L",
        b"PK\x01\x02",
        20,
        20,
        flags,
        method,
        0,
        0,
        crc,
        len(data),
        size,
        len(encoded),
        0,
        0,
        0,
        0,
        0,
        0,
    )
    body = local + encoded + data
    directory = central + encoded
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(directory), len(body), 0)
    return body + directory + end


def test_a_stream_longer_than_its_declared_size_is_read_in_bounded_chunks_and_refused(client, user):
    import tracemalloc

    from host.errors import Refusal
    from memory_addon.services.backup import memory_restore

    bomb = _raw_zip("Memory/bomb.md", b"\0" * (64 * 1024 * 1024), declared_size=10)
    tracemalloc.start()
    try:
        with pytest.raises(Refusal) as refused:
            memory_restore(user=user, archive_bytes=bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, f"restore allocated {peak} bytes"
    assert "damaged" in refused.value.message
    client.force_login(user)
    response = client.post("/api/memory/restore", {"archive": io.BytesIO(bomb)})
    assert response.status_code == 400 and "damaged" in response.json()["detail"]
    assert not MemoryFile.objects.exists()


@pytest.mark.parametrize(
    ("archive", "message"),
    [
        (_raw_zip("Memory/a.md", b"Hello.\n", crc=1234), "damaged"),
        (_raw_zip("Memory/a.md", b"Hello.\n", method=98), "compression"),
        (_raw_zip("Memory/a.md", b"Hello.\n", flags=0x1), "encrypted"),
        (_raw_zip("Memory/a.md", b"x" * (2 * 1024 * 1024)), "too large"),
        (b"PK\x03\x04" + b"\0" * 100, "not a zip"),
    ],
    ids=["bad-crc", "unsupported-compression", "encrypted", "entry-too-large", "truncated"],
)
def test_every_broken_archive_is_a_clear_400_and_restores_nothing(client, user, archive, message):
    client.force_login(user)
    response = client.post("/api/memory/restore", {"archive": io.BytesIO(archive)})
    assert response.status_code == 400, response.content
    assert message in response.json()["detail"]
    assert not MemoryFile.objects.exists()


@pytest.mark.parametrize("path", ["/api/memory/restore", "/files/restore/"])
def test_a_file_with_a_nul_byte_restores_nothing_and_is_a_clear_refusal(client, user, path):
    client.force_login(user)
    archive = _zip(
        {"Memory/a.md": "First.\n", "Memory/b.md": "Bro\x00ken.\n", "Memory/c.md": "x\n"}
    )
    response = client.post(path, {"archive": io.BytesIO(archive)}, follow=True)
    if path.startswith("/api/"):
        assert response.status_code == 400
        assert "Memory/b.md holds a NUL byte" in response.json()["detail"]
    else:
        assert response.status_code == 200
        assert "Memory/b.md holds a NUL byte" in response.content.decode()
    assert not MemoryFile.objects.exists()


def test_too_many_entries_is_a_clear_400(client, user, monkeypatch):
    from memory_addon.services import backup

    monkeypatch.setattr(backup, "MAX_ARCHIVE_ENTRIES", 3)
    client.force_login(user)
    archive = _zip({f"Memory/n{i}.md": "x\n" for i in range(4)})
    response = client.post("/api/memory/restore", {"archive": io.BytesIO(archive)})
    assert response.status_code == 400 and "more than 3 files" in response.json()["detail"]


def test_a_bad_crc_on_the_files_page_is_a_form_error_not_a_500(client, user):
    client.force_login(user)
    archive = _raw_zip("Memory/a.md", b"Hello.\n", crc=1234)
    response = client.post("/files/restore/", {"archive": io.BytesIO(archive)}, follow=True)
    assert response.status_code == 200
    assert "damaged" in response.content.decode()
    assert not MemoryFile.objects.exists()


# --- Exports that always restore ------------------------------------------------


def _fill(user, scope, binding):
    from memory_addon.services.scopes import ensure_bank, ensure_channel_scope

    upper, lower = AgentFactory(owner=user, slug="Coder"), AgentFactory(owner=user, slug="coder")
    writes = [
        (scope, "index.md", "- home: Rome -> home.md\n"),
        (scope, "home.md", "Lives in Rome.\n"),
        (ensure_agent_scope(upper), "index.md", "Use tabs.\n"),
        (ensure_agent_scope(lower), "index.md", "Use spaces.\n"),
        (ensure_channel_scope(binding), "index.md", "Family chat.\n"),
        # Later external chats of the same binding, one a thread: a folder each.
        (ensure_channel_scope(binding, "-1001"), "index.md", "Group chat.\n"),
        (ensure_channel_scope(binding, "-1001\n7"), "index.md", "Group topic.\n"),
        (ensure_bank(user, "key-one", "../../Memory"), "MEMORY.md", "Bank one.\n"),
        (ensure_bank(user, "key-two", "Same"), "MEMORY.md", "Bank two.\n"),
        (ensure_bank(user, "key-three", "same"), "MEMORY.md", "Bank three.\n"),
    ]
    for target, path, text in writes:
        file_write(user=user, scope=target, path=path, content=text, base_sha256="")
    return {(target.pk, path): text for target, path, text in writes}


def test_exports_have_no_dot_dot_duplicate_or_case_colliding_names(api, user, scope, binding):
    _fill(user, scope, binding)
    names = zipfile.ZipFile(io.BytesIO(api.get("/api/memory/export").content)).namelist()
    assert len(names) == 10
    assert len({name.casefold() for name in names}) == len(names)
    assert not any(".." in name.split("/") for name in names)
    assert not any(name.startswith("/") or "\\" in name for name in names)


def test_every_export_restores_completely(api, user, scope, binding):
    expected = _fill(user, scope, binding)
    exported = api.get("/api/memory/export").content
    MemoryFile.objects.filter(scope__owner=user).delete()
    response = api.client.post("/api/memory/restore", {"archive": io.BytesIO(exported)})
    body = response.json()
    assert response.status_code == 200, body
    assert body["refused"] == [] and body["kept"] == [] and len(body["added"]) == 10
    restored = {
        (row.scope_id, row.path): row.content
        for row in MemoryFile.objects.filter(scope__owner=user)
    }
    assert restored == expected


def test_each_external_chat_of_a_binding_exports_to_a_folder_of_its_own(api, user, binding):
    from memory_addon.services.scopes import ensure_channel_scope, scope_folder

    chats = [ensure_channel_scope(binding, key) for key in ("", "-1001", "-1001\n7")]
    for number, chat in enumerate(chats):
        file_write(
            user=user, scope=chat, path="index.md", content=f"Chat {number}.\n", base_sha256=""
        )
    archive = zipfile.ZipFile(io.BytesIO(api.get("/api/memory/export").content))
    folders = [scope_folder(chat) for chat in chats]
    assert len(set(folders)) == 3
    for number, folder in enumerate(folders):
        assert archive.read(f"{folder}/index.md").decode() == f"Chat {number}.\n"
