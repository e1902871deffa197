"""Add-ons in the browser: the example add-on from upload to removal, and the sandbox that
keeps an add-on page's script from acting as the person on the host."""

from __future__ import annotations

import json

import pytest

from addons.context import addon_context_build
from addons.models import AddonFile, AddonSetting, InstalledAddon
from addons.services import addon_install_zip, addon_set_enabled
from memory_addon.services.user_settings import save_mode_for
from tests.addons.conftest import example_zip, manifest, zip_of
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin():
    return UserFactory(is_superuser=True, is_staff=True)


def context_files(user) -> list[str]:
    context = addon_context_build(user=user, context_window=8192, tools=set(), memory_readable=True)
    return [f"{f.addon}/{f.path}" for f in context.files]


def test_the_example_add_on_from_upload_to_removal(sign_in, admin, screenshot):
    page = sign_in(admin)
    page.goto("/addons/")
    page.get_by_label("Add-on package").set_input_files(
        {"name": "tone-of-voice.zip", "mimeType": "application/zip", "buffer": example_zip()}
    )
    page.get_by_role("button", name="Upload and install").click()
    page.get_by_text("It is off until you turn it on").wait_for()
    assert context_files(admin) == []
    page.get_by_role("button", name="Enable for everyone").click()
    page.get_by_text("On for this server", exact=True).wait_for()
    assert context_files(admin) == ["tone-of-voice/context/friendly.md"]

    # The add-on's own page, sandboxed, changes the setting through sdk.userSettings.
    page.get_by_role("link", name="Choose a tone").click()
    frame = page.frame_locator("iframe[data-addon-frame]")
    frame.locator("output#tone", has_text="friendly").wait_for()
    frame.get_by_role("button", name="Formal").click()
    frame.get_by_role("status").filter(has_text="Saved.").wait_for()
    screenshot("addon-page")
    assert AddonSetting.objects.get(user=admin, addon="tone-of-voice").value == "formal"
    assert context_files(admin) == ["tone-of-voice/context/formal.md"]

    # The settings kit on the add-on page shows it and changes it too.
    page.goto("/addons/tone-of-voice/")
    assert page.get_by_label("Formal").is_checked()
    page.get_by_label("Brief").check()
    page.get_by_role("status").filter(has_text="Saved.").wait_for()
    assert context_files(admin) == ["tone-of-voice/context/brief.md"]

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Disable for everyone").click()
    page.get_by_role("button", name="Enable for everyone").wait_for()
    assert context_files(admin) == []
    assert AddonFile.objects.filter(addon__addon_id="tone-of-voice").count() == 6

    page.get_by_role("link", name="Remove…").click()
    page.get_by_text("It keeps:").wait_for()
    screenshot("remove-asks")
    assert "1 saved setting value" in page.locator(".kept").inner_text()
    page.get_by_role("button", name="Remove the add-on").click()
    page.get_by_text("Removed Tone of voice.").wait_for()
    assert not InstalledAddon.objects.filter(addon_id="tone-of-voice").exists()
    assert AddonSetting.objects.get(user=admin, addon="tone-of-voice").value == "brief"


ATTACK_JS = """
const out = document.getElementById("result");
const report = (name, value) => { out.dataset[name] = value; };
async function attempt(name, run) {
  try { const r = await run(); report(name, "reached:" + r); }
  catch (error) { report(name, "blocked:" + error.name); }
}
(async () => {
  await attempt("me", async () => {
    const r = await fetch("/api/me", { credentials: "include" });
    return r.status + ":" + (await r.text()).slice(0, 80);
  });
  await attempt("absolute", async () => {
    const r = await fetch(location.origin === "null" ? document.referrer + "api/me" : "/api/me",
                          { credentials: "include" });
    return r.status;
  });
  await attempt("write", async () => {
    const r = await fetch("/api/addons/memory/settings/save-mode", {
      method: "PUT", credentials: "include",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ value: "auto" }),
    });
    return r.status;
  });
  await attempt("parent", async () => parent.document.cookie.length);
  await attempt("cookie", async () => document.cookie.length);
  await attempt("bridge_other", async () => window.sdk.userSettings.set("save-mode", "auto"));
  await attempt("bridge_own", async () => window.sdk.userSettings.set("mood", "calm"));
  report("done", "yes");
})();
"""


def test_an_add_on_page_script_cannot_call_the_host_api_as_the_person(
    sign_in, admin, live_asgi_server, screenshot
):
    files = {
        "manifest.json": json.dumps(
            manifest(
                id="curious",
                name="Curious",
                capabilities={},
                permissions=["user-settings", "pages"],
                settings=[
                    {
                        "key": "mood",
                        "label": "Mood",
                        "type": "string",
                        "choices": [{"value": "calm", "label": "Calm"}],
                        "default": "calm",
                    }
                ],
                pages=[{"path": "page.html", "title": "Curious page"}],
            )
        ),
        "page.html": (
            '<!doctype html><script src="/static/js/addon-sdk.js"></script>'
            '<script src="attack.js" defer></script><p id="result">running</p>'
        ),
        "attack.js": ATTACK_JS,
    }
    addon_install_zip(user=admin, data=zip_of(files))
    addon_set_enabled(user=admin, addon_id="curious", enabled=True)
    page = sign_in(admin)
    page.goto("/addons/curious/pages/0/")
    result = page.frame_locator("iframe[data-addon-frame]").locator("#result[data-done=yes]")
    result.wait_for()
    screenshot("sandbox")
    seen = {
        name: result.get_attribute(f"data-{name}")
        for name in ("me", "absolute", "write", "parent", "cookie", "bridge_other", "bridge_own")
    }
    # Every way to the host's API as the person fails ...
    for name in ("me", "absolute", "write", "parent", "cookie"):
        assert seen[name].startswith("blocked:"), (name, seen)
    # ... the bridge answers only for this add-on's own declared settings ...
    assert seen["bridge_other"].startswith("blocked:"), seen
    assert seen["bridge_own"] == "reached:calm", seen
    # ... and nothing changed on the host.
    assert save_mode_for(admin) == "ask"
    assert AddonSetting.objects.get(user=admin, addon="curious").value == "calm"


def test_the_library_and_an_add_on_page_fit_a_390_px_screen(sign_in, admin, screenshot):
    addon_install_zip(user=admin, data=example_zip())
    page = sign_in(admin)
    page.set_viewport_size({"width": 390, "height": 844})
    for url in ("/addons/", "/addons/tone-of-voice/", "/addons/memory/"):
        page.goto(url)
        screenshot(url.strip("/").replace("/", "-"))
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, url
