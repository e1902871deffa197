from __future__ import annotations

import pytest

from host.errors import ChangeRefused, LimitExceeded, NothingToChange, SecretRefused
from memory_addon.models import ChangeSet, FileChange, MemoryFile
from memory_addon.services.changes import (
    FileWrite,
    change_set_apply,
    change_set_undo,
    file_write,
    history_prune,
    version_restore,
)

pytestmark = pytest.mark.django_db


def _read(api, scope, path):
    return api.get(f"/api/memory/scopes/{scope.pk}/file?path={path}")


def test_person_writes_and_reads_a_file(api, scope):
    written = api.put(
        f"/api/memory/scopes/{scope.pk}/file?path=home.md",
        {"content": "I live in Rome.\n", "base_sha256": ""},
    )
    assert written.status_code == 200, written.content
    read = _read(api, scope, "home.md").json()
    assert read["content"] == "I live in Rome.\n"
    assert written.json()["origin"] == "person"


def test_a_stale_base_hash_is_a_409_and_nothing_is_lost(api, scope):
    first = api.put(
        f"/api/memory/scopes/{scope.pk}/file?path=home.md", {"content": "v1\n", "base_sha256": ""}
    )
    assert first.status_code == 200
    base = _read(api, scope, "home.md").json()["sha256"]
    api.put(
        f"/api/memory/scopes/{scope.pk}/file?path=home.md",
        {"content": "v2 elsewhere\n", "base_sha256": base},
    )
    stale = api.put(
        f"/api/memory/scopes/{scope.pk}/file?path=home.md",
        {"content": "my edit\n", "base_sha256": base},
    )
    assert stale.status_code == 409
    assert "changed since" in stale.json()["detail"]
    assert _read(api, scope, "home.md").json()["content"] == "v2 elsewhere\n"


def test_undo_restores_the_exact_earlier_bytes(user, scope):
    original = "Line one  \r\nwith odd  spacing\t\n\n"
    file_write(user=user, scope=scope, path="a.md", content=original, base_sha256="")
    change = file_write(user=user, scope=scope, path="a.md", content="replaced\n", base_sha256=None)
    undo = change_set_undo(user=user, change_set=change)
    assert MemoryFile.objects.get(scope=scope, path="a.md").content == original
    assert undo.origin == ChangeSet.Origin.UNDO and undo.undoes_id == change.pk


def test_undo_of_a_created_file_deletes_it(user, scope):
    change = file_write(user=user, scope=scope, path="new.md", content="x\n", base_sha256="")
    change_set_undo(user=user, change_set=change)
    assert not MemoryFile.objects.filter(scope=scope, path="new.md").exists()


def test_undo_is_refused_when_a_later_change_touched_the_file(user, scope):
    change = file_write(user=user, scope=scope, path="a.md", content="one\n", base_sha256="")
    file_write(user=user, scope=scope, path="a.md", content="two\n", base_sha256=None)
    with pytest.raises(ChangeRefused, match="changed again"):
        change_set_undo(user=user, change_set=change)
    assert MemoryFile.objects.get(scope=scope, path="a.md").content == "two\n"


def test_a_change_set_applies_all_files_or_none(user, scope):
    with pytest.raises(LimitExceeded):
        with_transaction_apply(
            user, scope, [FileWrite("ok.md", "fine\n"), FileWrite("big.md", "x" * (64 * 1024 + 1))]
        )
    assert not MemoryFile.objects.filter(scope=scope).exists()
    assert not ChangeSet.objects.exists()


def with_transaction_apply(user, scope, writes):
    from django.db import transaction

    with transaction.atomic():
        change_set_apply(
            user=user, scope=scope, writes=writes, origin="person", source="api", machine=False
        )


def test_restore_asks_nothing_here_but_keeps_the_replaced_text_in_history(user, scope, api):
    file_write(user=user, scope=scope, path="a.md", content="old text\n", base_sha256="")
    file_write(user=user, scope=scope, path="a.md", content="new text\n", base_sha256=None)
    versions = api.get(f"/api/memory/scopes/{scope.pk}/history").json()
    oldest = versions[-1]
    assert oldest["path"] == "a.md"
    restored = api.post(f"/api/memory/versions/{oldest['id']}/restore")
    assert restored.status_code == 200
    assert MemoryFile.objects.get(scope=scope, path="a.md").content == "old text\n"
    replaced = FileChange.objects.filter(scope=scope).first()
    assert replaced.before == "new text\n" and replaced.change_set.origin == "restore"


def test_an_index_over_its_cap_is_refused_listing_the_current_entries(user, scope):
    lines = "\n".join(f"- topic{i}: note {i} -> t{i}.md" for i in range(40))
    file_write(user=user, scope=scope, path="index.md", content=lines + "\n", base_sha256="")
    with pytest.raises(LimitExceeded) as refusal:
        file_write(
            user=user,
            scope=scope,
            path="index.md",
            content=lines + "\n- one more: x -> x.md\n",
            base_sha256=None,
        )
    assert "40 lines" in refusal.value.message
    assert "topic39: note 39" in refusal.value.message


def test_a_scope_holds_at_most_100_files(user, scope, settings):
    settings.MEMORY_SCOPE_MAX_FILES = 3
    for name in ("a", "b", "c"):
        file_write(user=user, scope=scope, path=f"{name}.md", content="x\n", base_sha256="")
    with pytest.raises(LimitExceeded, match="limit is 3"):
        file_write(user=user, scope=scope, path="d.md", content="x\n", base_sha256="")


def test_a_user_holds_at_most_1_mib_in_all(user, scope, settings):
    settings.MEMORY_USER_MAX_BYTES = 100
    file_write(user=user, scope=scope, path="a.md", content="x" * 80, base_sha256="")
    with pytest.raises(LimitExceeded, match="limit is 100 bytes"):
        file_write(user=user, scope=scope, path="b.md", content="y" * 30, base_sha256="")


def test_a_person_write_with_a_secret_is_refused_naming_line_and_kind(api, scope):
    response = api.put(
        f"/api/memory/scopes/{scope.pk}/file?path=db.md",
        {"content": "# DB\nhost: db.local\ndb_password=hunter22\n", "base_sha256": ""},
    )
    body = response.json()
    assert response.status_code == 400
    assert body["line"] == 3 and body["kind"] == "password assignment"
    assert "hunter22" not in response.content.decode()
    assert not MemoryFile.objects.filter(path="db.md").exists()


def test_a_flagged_file_is_reported_with_its_line(user, scope, api):
    MemoryFile.objects.create(
        scope=scope, path="old.md", content="a\nthe password is swordfish\n", sha256="x"
    )
    body = _read(api, scope, "old.md").json()
    assert body["secret_flag"] == {"line": 2, "kind": "password in prose"}
    with pytest.raises(SecretRefused):
        file_write(
            user=user,
            scope=scope,
            path="old.md",
            content="a\nthe password is swordfish\nmore\n",
            base_sha256=None,
        )


def test_bad_paths_are_a_400_with_the_reason(api, scope):
    response = api.put(f"/api/memory/scopes/{scope.pk}/file?path=../escape.md", {"content": "x"})
    assert response.status_code == 400
    assert "'..'" in response.json()["detail"]


def test_history_keeps_at_most_n_versions_per_scope(user, scope, settings):
    settings.MEMORY_HISTORY_MAX_VERSIONS = 3
    for i in range(6):
        file_write(user=user, scope=scope, path="a.md", content=f"v{i}\n", base_sha256=None)
    history_prune()
    kept = list(FileChange.objects.filter(scope=scope).values_list("after", flat=True))
    assert kept == ["v5\n", "v4\n", "v3\n"]


def test_history_drops_versions_older_than_the_retention(user, scope):
    from datetime import timedelta

    from django.utils import timezone

    file_write(user=user, scope=scope, path="a.md", content="old\n", base_sha256=None)
    file_write(user=user, scope=scope, path="a.md", content="new\n", base_sha256=None)
    FileChange.objects.filter(after="old\n").update(created_at=timezone.now() - timedelta(days=366))
    history_prune()
    assert list(FileChange.objects.values_list("after", flat=True)) == ["new\n"]


def test_restoring_a_version_with_the_same_text_is_refused(user, scope):
    change = file_write(user=user, scope=scope, path="a.md", content="same\n", base_sha256=None)
    with pytest.raises(NothingToChange, match=r"^The file already has this text\.$"):
        version_restore(user=user, version=change.changes.get())


def test_a_write_that_changes_nothing_is_refused_with_its_own_error(user, scope):
    file_write(user=user, scope=scope, path="a.md", content="same\n", base_sha256=None)
    with pytest.raises(NothingToChange, match="Nothing would change"):
        file_write(user=user, scope=scope, path="a.md", content="same\n", base_sha256=None)
    assert ChangeSet.objects.filter(scope=scope).count() == 1


def test_entry_fences_do_not_count_toward_the_index_byte_cap(user, scope):
    from memory_addon.core import entries as entry_lib

    notes = [
        entry_lib.render_entry(
            f"- n{i}: short note {i} -> n{i}.md",
            entry_id=f"e{i:02d}",
            origin="assistant",
            created="2026-01-01",
            source="chat",
        )
        for i in range(30)
    ]
    content = "\n\n".join(notes) + "\n"
    assert len(content.encode()) > 2048 >= entry_lib.sent_bytes(content)
    file_write(user=user, scope=scope, path="index.md", content=content, base_sha256="")


def test_the_index_byte_cap_counts_the_text_the_model_is_sent(user, scope):
    from host.errors import LimitExceeded

    text = "\n".join(f"- topic{i}: " + "x" * 90 + f" -> t{i}.md" for i in range(20)) + "\n"
    assert len(text.encode()) > 2048
    with pytest.raises(LimitExceeded, match="2048 bytes"):
        file_write(user=user, scope=scope, path="index.md", content=text, base_sha256="")
