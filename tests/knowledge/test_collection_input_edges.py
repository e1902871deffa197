"""Collections under odd input.

Ids in other digits, raced uploads, long names, home paths, too many files at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge import services as knowledge
from knowledge.errors import KnowledgeRefusal, StoreGone
from knowledge.models import Job, Source, Store
from knowledge.services import sources as knowledge_sources


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "9" * 40, "-1"])
def test_a_source_filter_that_is_not_a_plain_id_is_a_404(client, user, value):
    store = knowledge.store_create(owner=user, name="Notes", provider="none")
    client.force_login(user)
    assert client.get(f"/knowledge/{store.pk}/files/", {"source": value}).status_code == 404


@pytest.mark.django_db
def test_an_upload_that_passed_its_check_before_a_parallel_one_was_scanned_is_skipped(
    user, monkeypatch
):
    store = knowledge.store_create(owner=user, name="Notes", provider="none")
    _first, first_scan = knowledge.source_add_upload(
        store=store, files=[SimpleUploadedFile("par.md", b"parallel identical content")]
    )
    knowledge.scan_run(first_scan.pk)
    assert Job.objects.get(pk=first_scan.pk).state == Job.State.REVIEW
    # The second request checked before the first scan had run: its check saw nothing.
    monkeypatch.setattr(knowledge_sources, "_check_uploads", lambda *args: None)
    _second, second_scan = knowledge.source_add_upload(
        store=store, files=[SimpleUploadedFile("par.md", b"parallel identical content")]
    )
    knowledge.scan_run(second_scan.pk)
    row = Job.objects.get(pk=second_scan.pk).review[0]
    assert row["status"] == "skipped"
    assert row["reason"] == "already in this collection as par.md"
    assert Source.objects.filter(store=store).count() == 2


@pytest.mark.django_db
def test_a_long_upload_name_keeps_its_suffix():
    name = knowledge.upload_safe_name("A" * 400 + ".md")
    assert name.endswith(".md") and len(name) == 120


@pytest.mark.django_db
@pytest.mark.parametrize("letter", ["名", "\U00020000", "é"])
def test_a_long_name_in_wide_letters_fits_a_folder_entry_even_twice(client, user, letter):
    """Names were cut at 120 characters: 200 CJK letters made a name of 363 bytes, which no
    file system keeps (a 500, "File name too long"), and 84 of them sent twice did with
    the " (2)" of the second."""
    store = knowledge.store_create(owner=user, name="Wide", provider="none")
    client.force_login(user)
    for stem in (letter * 200, letter * 84):
        files = [SimpleUploadedFile(f"{stem}.md", f"{n} {stem}".encode()) for n in range(2)]
        answer = client.post(f"/api/knowledge/stores/{store.pk}/uploads", {"documents": files})
        assert answer.status_code == 201, answer.content[:300]
    names = [f.name for s in Source.objects.filter(store=store) for f in Path(s.path).iterdir()]
    assert len(names) == 4 and all(n.endswith(".md") and len(n.encode()) <= 255 for n in names)


@pytest.mark.django_db
def test_a_home_folder_path_is_not_expanded(client, user, settings, tmp_path):
    store = knowledge.store_create(owner=user, name="Notes", provider="none")
    with pytest.raises(KnowledgeRefusal) as refusal:
        knowledge.source_add_folder(store=store, path="~/x")
    assert "starting with /" in str(refusal.value)
    assert "/root" not in str(refusal.value)


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["\u202egnp.md", "two\nlines", "   "])
def test_a_collection_name_is_one_plain_line(user, name):
    with pytest.raises(KnowledgeRefusal, match="one plain line"):
        knowledge.store_create(owner=user, name=name, provider="none")


@pytest.mark.django_db
def test_more_files_than_django_reads_get_a_page_that_says_why(client, user, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    store = knowledge.store_create(owner=user, name="Notes", provider="none")
    client.force_login(user)
    files = [SimpleUploadedFile(f"f{n}.md", b"x") for n in range(4)]
    answer = client.post(f"/knowledge/{store.pk}/uploads/", {"documents": files})
    assert answer.status_code == 400
    assert "more than 3 files at once" in answer.content.decode()


@pytest.mark.django_db
def test_an_upload_to_a_collection_deleted_meanwhile_is_a_404_that_says_so(user):
    """The upload's checks passed on the row it was sent for; the row went before the
    upload locked it (an API delete 1.75 s into a large upload): that was a 500."""
    store = knowledge.store_create(owner=user, name="Going", provider="none")
    stale = Store.objects.get(pk=store.pk)
    knowledge.store_delete(store=store)
    with pytest.raises(StoreGone, match="deleted meanwhile") as refusal:
        knowledge.source_add_upload(
            store=stale, files=[SimpleUploadedFile("late.md", b"Arrived too late.\n")]
        )
    assert refusal.value.status == 404
    assert not Source.objects.exists()
