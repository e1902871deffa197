"""Limits one person cannot push past: banks, storage, pending proposals, uploads (H1)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge import services as knowledge
from knowledge.errors import JobBusy, KnowledgeRefusal
from knowledge.models import Source
from memory_addon.models import MemoryScope, Proposal
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.tools import tool_call_execute
from memory_addon.turns import Turn

pytestmark = pytest.mark.django_db


def _bank_write(user, key, content):
    return tool_call_execute(
        turn=Turn(user=user, project_key=key), name="write_memory", arguments={"content": content}
    )


def test_a_person_has_a_limited_number_of_project_banks(user, settings):
    settings.MEMORY_MAX_BANKS_PER_PERSON = 2
    assert _bank_write(user, "p1", "one\n")[0] and _bank_write(user, "p2", "two\n")[0]
    ok, output = _bank_write(user, "p3", "three\n")
    assert not ok and "limit is 2" in output
    assert MemoryScope.objects.filter(kind=MemoryScope.Kind.PROJECT).count() == 2
    assert _bank_write(user, "p1", "still writable\n")[0]


def test_project_banks_and_uploads_count_toward_one_storage_quota(user, settings, tmp_path):
    settings.PERSON_STORAGE_MAX_BYTES = 3000
    assert _bank_write(user, "p1", "a" * 1500)[0]
    ok, output = _bank_write(user, "p2", "b" * 1000)
    assert ok, output
    ok, output = _bank_write(user, "p3", "c" * 600)
    assert not ok and "storage" in output
    store = knowledge.store_create(owner=user, name="Docs", provider="none")
    with pytest.raises(KnowledgeRefusal, match="storage"):
        knowledge.source_add_upload(store=store, files=[SimpleUploadedFile("big.txt", b"x" * 800)])
    assert not Source.objects.exists()


def test_the_oldest_pending_proposals_expire_beyond_the_cap(user, settings):
    settings.MEMORY_MAX_PENDING_PROPOSALS = 3
    turn = Turn(user=user, conversation_ref="c", reply_ref_trusted=True)
    made = [
        memory_change_request(
            turn=replace(turn, message_ref=f"m{i}"),
            operation={"action": "add", "text": f"- n{i}: note {i} -> n{i}.md"},
        ).proposal.pk
        for i in range(5)
    ]
    pending = set(
        Proposal.objects.filter(state=Proposal.State.PENDING).values_list("pk", flat=True)
    )
    assert pending == set(made[-3:])
    assert set(
        Proposal.objects.filter(state=Proposal.State.EXPIRED).values_list("pk", flat=True)
    ) == set(made[:2])


def test_a_refused_upload_leaves_no_files_behind(user, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.MEDIA_ROOT = tmp_path / "uploads"  # where the default (local) storage writes
    settings.KNOWLEDGE_JOBS_WAITING_PER_STORE = 0
    store = knowledge.store_create(owner=user, name="Docs", provider="none")
    knowledge.source_add_upload(store=store, files=[SimpleUploadedFile("a.txt", b"first")])
    # A scan is still queued for this store and no upload may wait in line behind it:
    # the second upload is refused …
    with pytest.raises(JobBusy):
        knowledge.source_add_upload(store=store, files=[SimpleUploadedFile("b.txt", b"second")])
    # … and nothing of it stays on disk.
    written = sorted(p.name for p in (tmp_path / "uploads").rglob("*") if p.is_file())
    assert written == ["a.txt"]


def test_upload_names_never_collide(user, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.MEDIA_ROOT = tmp_path / "uploads"  # where the default (local) storage writes
    store = knowledge.store_create(owner=user, name="Docs", provider="none")
    files = [
        SimpleUploadedFile("über.txt", b"one"),
        SimpleUploadedFile("_ber.txt", b"two"),
        SimpleUploadedFile("../_BER.txt", b"three"),
    ]
    source, _ = knowledge.source_add_upload(store=store, files=files)
    contents = sorted(p.read_bytes() for p in (tmp_path / "uploads").rglob("*.txt"))
    assert contents == [b"one", b"three", b"two"]
    assert source.path.startswith(str(tmp_path))
