"""A Markdown file with terminal colour codes is text: indexed, the codes stripped."""

from __future__ import annotations

import pytest

from knowledge import services
from knowledge.models import Chunk, Job
from knowledge.retrieval import retrieve

pytestmark = pytest.mark.django_db


def test_a_markdown_file_with_ansi_colour_codes_is_indexed_without_them(
    user, allowed_root, django_capture_on_commit_callbacks
):
    folder = allowed_root / "notes"
    folder.mkdir()
    (folder / "build.md").write_bytes(
        b"# Build log\n\n\x1b[32mOK\x1b[0m the alpacas compiled \x1b[1;31mwithout errors\x1b[m.\n"
    )
    store = services.store_create(owner=user, name="Logs", provider="none")
    _, scan = services.source_add_folder(store=store, path=str(folder))
    services.scan_run(scan.pk)
    scan.refresh_from_db()
    assert {row["path"]: row["status"] for row in scan.review} == {"build.md": "new"}
    job = services.scan_confirm(scan_job=scan)
    with django_capture_on_commit_callbacks(execute=True):
        services.index_run(job.pk)
    job.refresh_from_db()
    assert job.state == Job.State.SUCCEEDED, job.error
    (chunk,) = Chunk.objects.filter(store=store)
    assert "\x1b" not in chunk.text and "OK the alpacas compiled without errors." in chunk.text
    found = retrieve([store], "alpacas compiled", context_window=8192)
    assert found.excerpts and "\x1b" not in found.block
    assert "without errors" in found.block
