"""Collection pages in Chromium (issue 14 item 9): drag-and-drop upload with per-file
progress, the files page with status and remove, problems, refusals, relevance scores."""

from __future__ import annotations

import pytest

from knowledge.services import store_create
from tests.conftest import off_loop, submit_and_load, wait_until_live
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
LIMIT = 1024 * 1024

# Built in the page: two text files, a PNG that lies about being Markdown, a picture
# of a format collections do not index, and a file over the limit.
DROP = """([limit]) => {
  const text = (word, size) => new File([(word + " ").repeat(size / (word.length + 1))],
    word + ".md", {type: "text/markdown"});
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10, 0, 0, 0, 13]);
  const data = new DataTransfer();
  data.items.add(text("alpacas", 240000));
  data.items.add(text("llamas", 240000));
  data.items.add(new File([png], "photo.md", {type: "text/markdown"}));
  data.items.add(new File([png], "holiday.png", {type: "image/png"}));
  data.items.add(new File([new Uint8Array(limit + 1).fill(97)], "huge.md"));
  return data;
}"""


def _fits(page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_drop_files_watch_each_upload_then_manage_the_files(
    sign_in, page, celery_worker, settings, screenshot
):
    settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES = LIMIT
    person = UserFactory()
    store = off_loop(store_create, owner=person, name="Camelids", provider="none")
    sign_in(person)
    page.goto(f"/knowledge/{store.pk}/")
    wait_until_live(page)
    # The rules come from the server's settings, before any file is picked.
    assert "at most 1.0\xa0MB each" in page.get_by_test_id("upload-rules").inner_text()

    # The drop zone listens once upload.js has set the form up.
    page.locator("form[data-upload][data-upload-ready]").wait_for(state="attached")
    data = page.evaluate_handle(DROP, [LIMIT])
    page.dispatch_event("[data-drop-zone]", "drop", {"dataTransfer": data})
    items = page.locator(".upload-list li")
    items.nth(4).wait_for()
    assert items.count() == 5
    refused = page.locator(".upload-list li[data-state=refused]")
    assert refused.count() == 2
    assert "not a format collections index" in refused.nth(0).inner_text()
    assert "larger than 1.0\xa0MB" in refused.nth(1).inner_text()
    screenshot("dropped")

    # A slow line, so the per-file progress can be seen moving.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 100_000},
    )
    page.get_by_role("button", name="Upload").click()
    page.wait_for_function(
        """() => {
          const bars = Array.from(document.querySelectorAll('.upload-list progress'));
          const [first, , last] = bars;
          return bars.length === 3 && first.value > 0 && first.value < 100 && last.value === 0;
        }""",
        timeout=20_000,
    )
    screenshot("uploading")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    message = page.locator(".message", has_text="Checking the uploaded files")
    message.wait_for(timeout=30_000)
    assert "alpacas.md, llamas.md, photo.md" in message.inner_text()
    sources = page.locator("[id^=sources-table]")
    assert "alpacas.md, llamas.md, photo.md" in sources.inner_text()
    assert "/store-" not in page.content()  # never our copy's server path

    wait_until_live(page)
    page.locator("#review").wait_for(timeout=30_000)
    # Waiting for review is not a finished (green, full) bar.
    # The review and the job's state arrive as separate live fragments.
    status = page.locator(".job-status[data-state=review]")
    status.wait_for(timeout=30_000)
    assert status.locator(".progress").count() == 0
    submit_and_load(page, page.get_by_role("button", name="Index these files"))
    page.locator(".job-status[data-state=succeeded][data-progress='100']").wait_for(timeout=60_000)

    page.get_by_role("link", name="Problems: 1").click()
    problems = page.locator("table.files tbody tr")
    assert problems.count() == 1
    assert "photo.md" in problems.inner_text() and "binary" in problems.inner_text()
    screenshot("problems")

    page.get_by_role("link", name="All files").click()
    rows = page.locator("table.files tbody tr")
    assert rows.count() == 3
    assert page.locator("tr[data-status=indexed]").count() == 2
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Remove llamas.md").click()
    page.locator(".message", has_text="Removed llamas.md").wait_for()
    assert page.locator("tr[data-status=indexed]").count() == 1
    assert "llamas.md" not in page.locator("table.files").inner_text()
    page.set_viewport_size(PHONE)
    screenshot("files-390")
    assert _fits(page)

    page.get_by_role("link", name="Camelids").click()
    page.get_by_label("Question or search words").fill("alpacas")
    page.get_by_role("button", name="Search").click()
    relevance = page.get_by_test_id("relevance").first
    relevance.wait_for()
    assert "keyword score" in relevance.inner_text()
    screenshot("search-390")
    assert _fits(page)


def test_refusals_are_shown_where_the_person_typed(
    sign_in, page, celery_worker, settings, tmp_path, screenshot
):
    from knowledge.models import FolderGrant

    settings.KNOWLEDGE_ALLOWED_ROOTS = [str(tmp_path)]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("Vicunas graze in the high Andes.\n")
    person = UserFactory()
    off_loop(FolderGrant.objects.create, path=str(tmp_path), user=person)
    store = off_loop(store_create, owner=person, name="Andes", provider="none")
    sign_in(person)
    page.set_viewport_size(PHONE)
    page.goto(f"/knowledge/{store.pk}/")

    folder = page.get_by_label("Folder on the server")
    folder.fill(str(tmp_path / "nowhere"))
    submit_and_load(page, page.get_by_role("button", name="Add folder"))
    assert (
        f"There is no folder at {tmp_path / 'nowhere'}" in page.locator(".field").first.inner_text()
    )
    folder = page.get_by_label("Folder on the server")
    folder.fill(f"{docs}/../docs")
    submit_and_load(page, page.get_by_role("button", name="Add folder"))
    assert "without '..'" in page.locator(".field").first.inner_text()
    screenshot("folder-refused-390")
    assert _fits(page)

    page.get_by_label("Folder on the server").fill(str(docs))
    submit_and_load(page, page.get_by_role("button", name="Add folder"))
    wait_until_live(page)
    page.locator("#review").wait_for(timeout=30_000)
    submit_and_load(page, page.get_by_role("button", name="Index these files"))
    page.locator(".job-status[data-state=succeeded][data-progress='100']").wait_for(timeout=60_000)

    # The sources table came in live: on a phone its cells are still labelled cards.
    table = page.locator("[id^=sources-table]", has_text="1 / 1")
    table.wait_for()
    # The script labels a swapped-in table's cells right after the swap: wait for it.
    table.locator("tbody td").first.and_(table.locator("td[data-label=Path]")).wait_for()

    # The same file picked with the plain input: the server refuses it, naming the folder.
    page.get_by_label("Files").set_input_files(
        {"name": "copy.md", "mimeType": "text/markdown", "buffer": (docs / "guide.md").read_bytes()}
    )
    page.get_by_role("button", name="Upload").click()
    error = page.locator("#upload-card .error")
    error.wait_for()
    assert f"copy.md is already covered by the folder source {docs} (as guide.md)" in (
        error.inner_text()
    )
    screenshot("duplicate-refused-390")
    assert _fits(page)
