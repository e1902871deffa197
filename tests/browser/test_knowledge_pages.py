from __future__ import annotations

import pytest

from accounts.models import AIProfile
from tests.conftest import submit_and_load, wait_until_live
from tests.factories import AIProfileFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_a_collection_add_a_folder_review_index_live_and_search(
    sign_in, celery_worker, fake_openai, sample_folder, settings, screenshot
):
    from knowledge.models import FolderGrant

    settings.KNOWLEDGE_ALLOWED_ROOTS = [str(sample_folder.parent)]
    person = UserFactory()
    FolderGrant.objects.create(path=str(sample_folder.parent), user=person)
    AIProfileFactory(
        owner=person,
        name="Embedder",
        role=AIProfile.Role.EMBEDDING,
        base_url=fake_openai.base_url,
        model="fake-embed",
    )
    page = sign_in(person)
    page.goto("/knowledge/")
    page.get_by_role("link", name="New collection").click()
    page.get_by_label("Name").fill("Farm notes")
    page.get_by_label("Embedding model").select_option(label="Embedder: fake-embed")
    page.get_by_role("button", name="Create").click()
    page.get_by_role("heading", name="Farm notes").wait_for()
    wait_until_live(page)

    page.get_by_label("Folder on the server").fill(str(sample_folder))
    submit_and_load(page, page.get_by_role("button", name="Add folder"))
    review = page.locator("#review")
    review.wait_for()
    wait_until_live(page)
    screenshot("review")
    assert review.locator("tr[data-status=new]").count() == 4
    assert "binary content" in review.inner_text() and "symbolic link" in review.inner_text()

    # Hold the embedder so the page is up before indexing ends; progress then arrives live.
    fake_openai.hold_after = len(fake_openai.embedding_inputs)
    submit_and_load(page, page.get_by_role("button", name="Index these files"))
    status = page.locator(".job-status")
    status.wait_for()
    wait_until_live(page)
    assert fake_openai.reached_hold.wait(timeout=60)
    assert status.get_attribute("data-state") in ("queued", "running")
    fake_openai.release.set()
    page.locator(".job-status[data-state=succeeded][data-progress='100']").wait_for(timeout=60_000)
    screenshot("indexed")
    assert "4 new or changed" in status.inner_text()
    assert "4 / 5" in page.locator("[id^=sources-table]").inner_text()

    page.get_by_label("Question or search words").fill("guanaco care")
    page.get_by_role("button", name="Search").click()
    block = page.get_by_test_id("retrieved-block")
    block.wait_for()
    screenshot("search")
    assert "[R1] manual.pdf, page 1" in block.inner_text()
