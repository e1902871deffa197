"""A folder swapped for a symbolic link between review and index is never followed (K4).

Issue 10, item 13: an attacker who can write inside an allowed folder swaps a
directory, the root or a parent of the root for a link to a secret folder after
the person reviewed the scan; the index job must not read through the link, and
every file must still hold the content that was reviewed.
"""

from __future__ import annotations

import pytest

from knowledge import services
from knowledge.models import Chunk, Job, Source
from tests.knowledge.conftest import barrier

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "ADMIN-CREDENTIALS zebra-42"


@pytest.fixture
def secrets(tmp_path_factory):
    """A folder outside every allowed root, shaped like the source so a swap would fit."""
    outside = tmp_path_factory.mktemp("secrets")
    (outside / "guide").mkdir()
    (outside / "guide" / "setup.md").write_text(f"# Setup\n\n{SECRET}\n")
    (outside / "notes.txt").write_text(f"{SECRET}\n")
    return outside


def _reviewed(store, folder):
    source, job = services.source_add_folder(store=store, path=str(folder))
    barrier()
    job.refresh_from_db()
    assert job.state == Job.State.REVIEW, job.error
    return source, job


def _confirm(job):
    index_job = services.scan_confirm(scan_job=job)
    barrier()
    index_job.refresh_from_db()
    return index_job


def _leaked():
    return Chunk.objects.filter(text__contains=SECRET).exists()


def test_a_directory_swapped_for_a_symlink_after_review_is_not_followed(
    celery_worker, store, sample_folder, allowed_root, secrets
):
    _source, job = _reviewed(store, sample_folder)
    (sample_folder / "guide").rename(sample_folder.parent / "guide-moved")
    (sample_folder / "guide").symlink_to(secrets / "guide", target_is_directory=True)
    index_job = _confirm(job)
    assert not _leaked()
    problems = {p["path"]: p["reason"] for p in index_job.problems}
    assert "symbolic link" in problems["guide/setup.md"]
    assert Chunk.objects.filter(document__path="notes.txt").exists()  # the rest is indexed


def test_a_root_swapped_for_a_symlink_after_review_indexes_nothing(
    celery_worker, store, sample_folder, allowed_root, secrets
):
    source, job = _reviewed(store, sample_folder)
    sample_folder.rename(sample_folder.parent / "docs-moved")
    sample_folder.symlink_to(secrets, target_is_directory=True)
    index_job = _confirm(job)
    assert not _leaked() and not Chunk.objects.exists()
    assert index_job.state == Job.State.FAILED and "symbolic link" in index_job.error
    source.refresh_from_db()
    assert source.status == Source.Status.ERROR and "symbolic link" in source.status_message


def test_a_parent_of_the_root_swapped_for_a_symlink_after_review_indexes_nothing(
    celery_worker, store, allowed_root, secrets
):
    folder = allowed_root / "team" / "docs"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("Tapirs swim well.\n")
    (secrets / "docs").mkdir()
    (secrets / "docs" / "notes.txt").write_text(f"{SECRET}\n")
    _source, job = _reviewed(store, folder)
    (allowed_root / "team").rename(allowed_root / "team-moved")
    (allowed_root / "team").symlink_to(secrets, target_is_directory=True)
    index_job = _confirm(job)
    assert not _leaked() and not Chunk.objects.exists()
    assert index_job.state == Job.State.FAILED and "symbolic link" in index_job.error


def test_a_file_changed_after_review_is_a_problem_not_indexed(
    celery_worker, store, sample_folder, allowed_root
):
    _source, job = _reviewed(store, sample_folder)
    (sample_folder / "notes.txt").write_text(f"{SECRET}\n")
    index_job = _confirm(job)
    assert not _leaked()
    problems = {p["path"]: p["reason"] for p in index_job.problems}
    assert "changed since the review" in problems["notes.txt"]
    assert Chunk.objects.filter(document__path="tool.py").exists()
