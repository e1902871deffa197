"""Updating an installed add-on in place: from a zip and from a newer installed distribution,
through the REST API and the library pages. People's settings, learned rules and the
server-wide switch survive; new permissions and downgrades are asked for first."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from addons.models import AddonFile, InstalledAddon
from tests.addons.conftest import EXAMPLE_PACKAGE, example_zip, folder_files, manifest, zip_of
from tests.addons.test_api import Api

pytestmark = pytest.mark.django_db

ADDON = "tone-of-voice"


@pytest.fixture
def as_admin(admin):
    return Api(admin)


@pytest.fixture
def as_person(person):
    return Api(person)


def version_zip(version: str, *, formal: str = "", **changes) -> bytes:
    files = folder_files(EXAMPLE_PACKAGE)
    files["manifest.json"] = json.dumps(manifest(version=version, **changes))
    if formal:
        files["context/formal.md"] = formal
    return zip_of(files)


def upload(api: Api, data: bytes, **fields):
    return api.client.post(
        "/api/addons/install",
        {"package": SimpleUploadedFile("addon.zip", data, "application/zip"), **fields},
    )


@pytest.fixture
def tone_on(as_admin, as_person):
    assert upload(as_admin, example_zip()).status_code == 201
    as_admin.put(f"/api/addons/{ADDON}/enabled", {"enabled": True})
    as_person.put(f"/api/addons/{ADDON}/settings/tone", {"value": "formal"})


def test_an_update_from_a_zip_replaces_the_files_and_keeps_settings_and_the_switch(
    as_admin, as_person, tone_on
):
    response = upload(
        as_admin, version_zip("1.1.0", formal="Tone: formal, version two."), update=True
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["version"] == "1.1.0" and body["enabled_for_server"] is True
    assert body["changes"]["direction"] == "upgrade"
    assert body["changes"]["changed_files"] == ["context/formal.md"]
    assert as_person.get(f"/api/addons/{ADDON}/settings/tone").json()["value"] == "formal"
    assert "version two" in as_person.turn()["addons_block"]
    assert InstalledAddon.objects.count() == 1
    assert AddonFile.objects.filter(addon__addon_id=ADDON).count() == 6


def test_installing_an_installed_add_on_again_is_a_409_with_what_would_change(as_admin, tone_on):
    response = upload(as_admin, version_zip("1.1.0", formal="new"))
    assert response.status_code == 409
    body = response.json()
    assert "already installed (version 1.0.0)" in body["detail"] and "update" in body["detail"]
    assert body["changes"]["from_version"] == "1.0.0" and body["changes"]["to_version"] == "1.1.0"
    assert InstalledAddon.objects.get(addon_id=ADDON).manifest["version"] == "1.0.0"


def test_an_update_that_asks_for_a_new_permission_needs_consent_to_it(as_admin, tone_on):
    skill = {
        "name": "lookup",
        "description": "Looks up",
        "instructions": "Look it up.",
        "allowedTools": ["list_memory"],
    }
    newer = version_zip(
        "2.0.0",
        permissions=["context-files", "user-settings", "pages", "memory-tools"],
        skills=[skill],
    )
    refused = upload(as_admin, newer, update=True)
    assert refused.status_code == 409
    assert "new permissions: memory-tools" in refused.json()["detail"]
    assert refused.json()["changes"]["new_permissions"] == ["memory-tools"]
    agreed = upload(as_admin, newer, update=True, consent="memory-tools")
    assert agreed.status_code == 200, agreed.content
    assert agreed.json()["manifest"]["skills"][0]["name"] == "lookup"


def test_a_downgrade_is_installed_only_when_confirmed(as_admin, tone_on):
    assert upload(as_admin, version_zip("1.2.0"), update=True).status_code == 200
    refused = upload(as_admin, example_zip(), update=True)
    assert (
        refused.status_code == 409 and "older than the installed 1.2.0" in refused.json()["detail"]
    )
    confirmed = upload(as_admin, example_zip(), update=True, downgrade=True)
    assert confirmed.status_code == 200 and confirmed.json()["version"] == "1.0.0"


def test_the_preview_says_what_an_install_would_change_and_writes_nothing(as_admin, tone_on):
    response = as_admin.client.post(
        "/api/addons/install/preview",
        {
            "package": SimpleUploadedFile(
                "a.zip", version_zip("1.0.1", formal="x"), "application/zip"
            )
        },
    )
    assert response.status_code == 200, response.content
    assert response.json()["changed_files"] == ["context/formal.md"]
    assert InstalledAddon.objects.get(addon_id=ADDON).manifest["version"] == "1.0.0"


def test_learned_rules_of_a_skill_survive_an_update(as_admin, as_person):
    skill = {"name": "style", "description": "Style", "instructions": "Write well."}
    first = version_zip("1.0.0", skills=[skill])
    assert upload(as_admin, first).status_code == 201
    as_admin.put(f"/api/addons/{ADDON}/enabled", {"enabled": True})
    saved = as_person.put(f"/api/addons/{ADDON}/skills/style/rules", {"text": "Use short lines."})
    assert saved.status_code == 200, saved.content
    assert upload(as_admin, version_zip("1.1.0", skills=[skill]), update=True).status_code == 200
    rules = as_person.get(f"/api/addons/{ADDON}/skills/style/rules").json()
    assert rules["text"] == "Use short lines."


def test_an_install_refusal_is_logged_with_the_reason_and_the_person(as_admin, admin, caplog):
    with caplog.at_level(logging.WARNING, logger="addons.services"):
        assert upload(as_admin, b"not a zip").status_code == 400
    assert f"for {admin.get_username()}: This is not a zip file." in caplog.text


@pytest.fixture
def newer_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The example as an installed distribution whose files a later `pip install` replaces."""
    folder = tmp_path / "site"
    shutil.copytree(EXAMPLE_PACKAGE, folder / "tone_of_voice")
    info = folder / "memory_host_tone_of_voice-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memory-host-tone-of-voice\n")
    (info / "entry_points.txt").write_text("[memory_host.addons]\ntone-of-voice = tone_of_voice\n")
    monkeypatch.syspath_prepend(str(folder))

    def upgrade(version: str) -> None:
        path = folder / "tone_of_voice" / "manifest.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "version": version}))
        (folder / "tone_of_voice" / "context" / "brief.md").write_text("Tone: brief, newer.")

    yield upgrade
    sys.modules.pop("tone_of_voice", None)


def test_a_newer_distribution_is_offered_as_an_update_and_updates_in_place(
    admin, as_admin, as_person, newer_distribution
):
    assert as_admin.post("/api/addons/install-entry-point", {"name": ADDON}).status_code == 201
    as_admin.put(f"/api/addons/{ADDON}/enabled", {"enabled": True})
    as_person.put(f"/api/addons/{ADDON}/settings/tone", {"value": "brief"})
    newer_distribution("1.1.0")

    page = Client()
    page.force_login(admin)
    library = page.get("/addons/").content.decode()
    assert "update available: 1.0.0 → 1.1.0" in library
    preview = page.post("/addons/install-entry-point/", {"name": ADDON})
    assert preview.status_code == 200
    shown = preview.content.decode()
    assert "Update Tone of voice from 1.0.0 to 1.1.0?" in shown and "context/brief.md" in shown
    assert InstalledAddon.objects.get(addon_id=ADDON).manifest["version"] == "1.0.0"
    done = page.post("/addons/install-entry-point/", {"name": ADDON, "update": "1"})
    assert done.status_code == 302
    row = InstalledAddon.objects.get(addon_id=ADDON)
    assert row.manifest["version"] == "1.1.0" and row.enabled is True
    assert "Tone: brief, newer." in as_person.turn()["addons_block"]
    assert "update available" not in page.get("/addons/").content.decode()


def test_uploading_an_installed_add_on_on_the_library_page_shows_the_changes_then_updates(
    admin, as_person, tone_on
):
    page = Client()
    page.force_login(admin)
    newer = SimpleUploadedFile("a.zip", version_zip("1.1.0", formal="Tone: formal two."))
    preview = page.post("/addons/install/", {"package": newer})
    assert preview.status_code == 200
    shown = preview.content.decode()
    assert "Changed files" in shown and "context/formal.md" in shown
    token = shown.split('name="token" value="', 1)[1].split('"', 1)[0]
    done = page.post("/addons/install/", {"token": token, "update": "1"}, follow=True)
    assert "Updated Tone of voice to version 1.1.0" in done.content.decode()
    assert "Tone: formal two." in as_person.turn()["addons_block"]


def test_admins_read_a_log_of_installs_updates_refusals_switches_and_removals(
    admin, person, as_admin, tone_on
):
    upload(as_admin, version_zip("1.1.0"), update=True)
    upload(as_admin, version_zip("1.2.0"))  # refused: not sent as an update
    as_admin.delete(f"/api/addons/{ADDON}")
    page = Client()
    page.force_login(admin)
    shown = page.get(f"/addons/log/?addon={ADDON}").content.decode()
    for text in (
        "Installed",
        "version 1.0.0 from upload",
        "on for the server",
        "1.0.0 → 1.1.0, 0 file(s) changed",
        "Install refused",
        "already installed (version 1.1.0)",
        "Removed",
        admin.get_username(),
    ):
        assert text in shown, text
    outsider = Client()
    outsider.force_login(person)
    assert outsider.get("/addons/log/").status_code == 404


def test_a_newer_distribution_updates_in_place_through_the_api(
    as_admin, as_person, newer_distribution
):
    assert as_admin.post("/api/addons/install-entry-point", {"name": ADDON}).status_code == 201
    as_person.put(f"/api/addons/{ADDON}/settings/tone", {"value": "brief"})
    newer_distribution("1.1.0")
    preview = as_admin.post("/api/addons/install-entry-point/preview", {"name": ADDON})
    assert preview.status_code == 200 and preview.json()["changed_files"] == ["context/brief.md"]
    refused = as_admin.post("/api/addons/install-entry-point", {"name": ADDON})
    assert refused.status_code == 409 and refused.json()["changes"]["to_version"] == "1.1.0"
    updated = as_admin.post("/api/addons/install-entry-point", {"name": ADDON, "update": True})
    assert updated.status_code == 200, updated.content
    assert updated.json()["version"] == "1.1.0" and updated.json()["enabled_for_server"] is False
    assert as_person.get(f"/api/addons/{ADDON}/settings/tone").json()["value"] == "brief"


def test_the_update_page_asks_for_each_new_permission_before_updating(admin, tone_on):
    skill = {
        "name": "lookup",
        "description": "Looks up",
        "instructions": "Look it up.",
        "allowedTools": ["list_memory"],
    }
    newer = version_zip(
        "2.0.0",
        permissions=["context-files", "user-settings", "pages", "memory-tools"],
        skills=[skill],
    )
    page = Client()
    page.force_login(admin)
    shown = page.post("/addons/install/", {"package": SimpleUploadedFile("a.zip", newer)})
    body = shown.content.decode()
    assert 'name="consent" value="memory-tools" required' in body
    token = body.split('name="token" value="', 1)[1].split('"', 1)[0]
    refused = page.post("/addons/install/", {"token": token, "update": "1"}, follow=True)
    assert "new permissions: memory-tools" in refused.content.decode()
    assert InstalledAddon.objects.get(addon_id=ADDON).manifest["version"] == "1.0.0"
    shown = page.post("/addons/install/", {"package": SimpleUploadedFile("a.zip", newer)})
    token = shown.content.decode().split('name="token" value="', 1)[1].split('"', 1)[0]
    done = page.post(
        "/addons/install/", {"token": token, "update": "1", "consent": "memory-tools"}, follow=True
    )
    assert "Updated Tone of voice to version 2.0.0" in done.content.decode()
