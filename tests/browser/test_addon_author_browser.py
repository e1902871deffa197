"""An add-on author's whole loop in the browser: scaffold with `memory-host addon new`,
check and pack it, install it, change its number setting and see it in the next turn's
context, edit it, update it in place with the person's setting kept, and remove it; and
the SDK's change event and its refusal outside the host."""

from __future__ import annotations

import json

import pytest

from addons.context import addon_context_build
from addons.models import AddonSetting, InstalledAddon
from addons.services import addon_install_zip, addon_set_enabled
from config.addon_cli import addon_main
from tests.addons.conftest import EXAMPLE_PACKAGE, folder_files, zip_of
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def context_block(user) -> str:
    return addon_context_build(
        user=user, context_window=8192, tools=set(), memory_readable=True
    ).files_block


def pack(folder, target) -> dict:
    assert addon_main(["check", str(folder)]) == 0
    assert addon_main(["pack", str(folder), "-o", str(target)]) == 0
    return {"name": target.name, "mimeType": "application/zip", "buffer": target.read_bytes()}


def test_an_author_builds_installs_updates_and_removes_an_add_on(sign_in, tmp_path, screenshot):
    admin = UserFactory(is_superuser=True, is_staff=True)
    folder = tmp_path / "detail-level"
    assert addon_main(["new", str(folder), "--name", "Detail level"]) == 0
    page = sign_in(admin)

    page.goto("/addons/")
    page.get_by_label("Add-on package").set_input_files(pack(folder, tmp_path / "one.zip"))
    page.get_by_role("button", name="Upload and install").click()
    page.get_by_text("It is off until you turn it on").wait_for()
    page.get_by_role("button", name="Enable for everyone").click()
    page.get_by_text("On for this server", exact=True).wait_for()
    assert "Level of detail: 3 of 5." in context_block(admin)

    field = page.get_by_label("Level of detail", exact=True)
    field.fill("4")
    field.dispatch_event("change")
    page.get_by_role("status").filter(has_text="Saved.").wait_for()
    assert "Level of detail: 4 of 5." in context_block(admin)

    (folder / "context" / "detail.md").write_text("Detail {{detail}} of 5, second edition.")
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "version": "0.2.0"}))
    page.goto("/addons/")
    page.get_by_label("Add-on package").set_input_files(pack(folder, tmp_path / "two.zip"))
    page.get_by_role("button", name="Upload and install").click()
    page.get_by_text("Update Detail level from 0.1.0 to 0.2.0?").wait_for()
    assert "context/detail.md" in page.locator(".update-plan").inner_text()
    screenshot("addon-update-asks")
    page.get_by_role("button", name="Update Detail level").click()
    page.get_by_text("Updated Detail level to version 0.2.0").wait_for()
    assert page.get_by_label("Level of detail", exact=True).input_value() == "4"
    assert "Detail 4 of 5, second edition." in context_block(admin)

    page.get_by_role("link", name="Remove…").click()
    page.get_by_role("button", name="Remove the add-on").click()
    page.get_by_text("Removed Detail level.").wait_for()
    assert not InstalledAddon.objects.filter(addon_id="detail-level").exists()
    assert AddonSetting.objects.get(user=admin, addon="detail-level").value == 4


WATCH_JS = """
const heard = document.getElementById("heard");
window.sdk.userSettings.onChange("tone", (value) => { heard.textContent = "heard " + value; });
document.getElementById("go").addEventListener("click", () => {
  window.sdk.userSettings.set("tone", "formal");
});
window.sdk.userSettings.get("tone").then(
  () => { document.body.dataset.ready = "yes"; },
  (error) => { document.getElementById("why").textContent = error.message; },
);
"""


@pytest.fixture
def watching():
    """The example add-on with a page that listens for changes of its setting."""
    admin = UserFactory(is_superuser=True, is_staff=True)
    files = folder_files(EXAMPLE_PACKAGE)
    files["pages/index.html"] = (
        '<!doctype html><script src="/static/js/addon-sdk.js"></script>'
        '<script src="page.js" defer></script><button id="go">Go</button>'
        '<p id="heard">nothing</p><p id="why"></p>'
    )
    files["pages/page.js"] = WATCH_JS
    addon_install_zip(user=admin, data=zip_of(files))
    addon_set_enabled(user=admin, addon_id="tone-of-voice", enabled=True)
    return admin


def test_on_change_hears_a_value_saved_from_the_page(sign_in, watching):
    page = sign_in(watching)
    page.goto("/addons/tone-of-voice/pages/0/")
    frame = page.frame_locator("iframe[data-addon-frame]")
    frame.locator("body[data-ready=yes]").wait_for()
    frame.get_by_role("button", name="Go").click()
    frame.get_by_text("heard formal").wait_for()


def test_a_page_opened_outside_the_host_says_why_it_cannot_work(sign_in, watching):
    page = sign_in(watching)
    page.goto("/addons/tone-of-voice/files/pages/index.html")
    page.get_by_text("This page works only inside the memory host").wait_for()
