"""The Clean-up page in Chromium: merge diff → Apply → Undo, with a real worker."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from memory_addon.core import entries
from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.conftest import off_loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_merge_shows_a_diff_then_apply_then_undo(
    chat_worker, fake_openai, sign_in, person, profile, screenshot
):
    texts = ["likes green tea", "Likes green tea", "lives in Rome", "lives in Rome"]
    body = (
        "My own words.\n\n"
        + "\n\n".join(
            entries.render_entry(
                t,
                entry_id=entries.new_entry_id(),
                origin="assistant",
                created=timezone.localdate(),
                source="chat",
            )
            for t in texts
        )
        + "\n"
    )
    off_loop(
        file_write,
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content=body,
        base_sha256=None,
    )
    original = MemoryFile.objects.get(scope__owner=person, path="index.md").content
    fake_openai.chat_replies.append(
        {"content": json.dumps({"entries": ["likes green tea", "lives in Rome"]})}
    )
    page = sign_in(person)
    page.goto("/learning/cleanup/")
    page.get_by_role("button", name="Merge entries…").click()
    job = page.locator("#cleanup-job-merge")
    removed = job.locator(".rdiff-removed", has_text="Likes green tea")
    removed.wait_for(timeout=30_000)
    assert "memory:entry" not in job.locator(".rdiff").inner_text()
    job.get_by_text("Raw diff").click()
    assert "-Likes green tea" in job.locator("pre.diff").inner_text()
    assert MemoryFile.objects.get(scope__owner=person, path="index.md").content == original
    screenshot("merge-diff")
    page.locator("#cleanup-job-merge").get_by_role("button", name="Apply").click()
    page.get_by_text("Clean-up applied.").wait_for()
    merged = MemoryFile.objects.get(scope__owner=person, path="index.md").content
    assert merged.startswith("My own words.")
    assert [i.text for i in entries.machine_entries(merged)] == ["likes green tea", "lives in Rome"]
    page.locator("[data-change-set]").get_by_role("button", name="Undo").first.click()
    page.get_by_text("Change undone.").wait_for()
    assert MemoryFile.objects.get(scope__owner=person, path="index.md").content == original
