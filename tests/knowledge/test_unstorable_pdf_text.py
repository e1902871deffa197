"""A PDF whose text holds a NUL (PostgreSQL cannot store it) is skipped with its reason;
the other files of the same upload are indexed (scan, index, files page, real worker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge import services
from knowledge.core.extract import Page, Unreadable, pdf_pages, storable_pages
from knowledge.models import Document, Job, Source
from knowledge.selectors import store_files
from tests.knowledge.conftest import barrier
from tests.knowledge.pdfs import text_pdf

pytestmark = pytest.mark.django_db(transaction=True)
NUL_PDF = text_pdf(["Guanacos hum\x00 softly in the evening."])
GOOD_PDF = text_pdf(["Vicunas graze on the high plains."])


def _upload(user):
    store = services.store_create(owner=user, name="Docs", provider="none")
    files = [
        SimpleUploadedFile("broken.pdf", NUL_PDF, "application/pdf"),
        SimpleUploadedFile("good.pdf", GOOD_PDF, "application/pdf"),
        SimpleUploadedFile("notes.txt", b"Alpacas are calm animals.\n", "text/plain"),
    ]
    source, scan = services.source_add_upload(store=store, files=files)
    barrier()
    scan.refresh_from_db()
    assert scan.state == Job.State.REVIEW, scan.error
    return store, source, scan


def _confirm(scan):
    index_job = services.scan_confirm(scan_job=scan)
    barrier()
    index_job.refresh_from_db()
    return index_job


def _skipped(store):
    return {row.path: row.reason for row in store_files(store).rows if row.status == "skipped"}


def test_a_pdf_with_a_nul_in_its_text_is_skipped_and_the_rest_of_the_upload_indexed(
    celery_worker, user
):
    store, source, scan = _upload(user)
    review = {row["path"]: row for row in scan.review}
    assert review["broken.pdf"]["status"] == "skipped"
    assert "NUL" in review["broken.pdf"]["reason"]
    index_job = _confirm(scan)
    assert index_job.state == Job.State.SUCCEEDED, index_job.error
    assert sorted(Document.objects.values_list("path", flat=True)) == ["good.pdf", "notes.txt"]
    source.refresh_from_db()
    assert source.status == Source.Status.OK and source.problem_count == 1
    skipped = _skipped(store)
    assert list(skipped) == ["broken.pdf"] and "cannot be stored" in skipped["broken.pdf"]


def test_text_a_scan_kept_is_checked_again_before_the_index_stores_it(celery_worker, user):
    store, _source, scan = _upload(user)
    good = next(row for row in scan.review if row["path"] == "good.pdf")
    # Text kept by an earlier scan (before this check) holding a NUL: the index job skips it.
    kept = Path(settings.DATA_DIR) / "extracted" / f"{good['sha256']}.json"
    kept.write_text(json.dumps([[1, "Vicunas\x00 graze."]]))
    index_job = _confirm(scan)
    assert index_job.state == Job.State.SUCCEEDED, index_job.error
    assert list(Document.objects.values_list("path", flat=True)) == ["notes.txt"]
    assert [problem["path"] for problem in index_job.problems] == ["good.pdf"]
    assert "NUL byte" in _skipped(store)["good.pdf"]


def test_extracted_text_with_a_lone_surrogate_is_unstorable_too():
    with pytest.raises(Unreadable, match="on page 2"):
        storable_pages([Page(1, "fine"), Page(2, "broken \ud800 text")])
    assert pdf_pages(GOOD_PDF, max_chars=10_000)[0].text.startswith("Vicunas")
