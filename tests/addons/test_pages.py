"""The add-on library and add-on pages through Django's client (forms, CSRF, 404s, headers)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from addons.models import InstalledAddon, SkillRule
from addons.services import (
    addon_install_zip,
    addon_set_enabled,
    addon_setting_put,
    addon_user_set_enabled,
)
from tests.addons.conftest import example_zip, manifest, zip_of

pytestmark = pytest.mark.django_db


def signed_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


@pytest.fixture
def tone(admin):
    addon_install_zip(user=admin, data=example_zip())
    addon_set_enabled(user=admin, addon_id="tone-of-voice", enabled=True)


def test_the_library_lists_installed_add_ons_and_offers_entry_points_to_admins(
    admin, person, example_distribution
):
    page = signed_in(admin).get("/addons/").content.decode()
    assert "Short memory" in page and "built in" in page
    assert "Tone of voice" in page and 'name="name" value="tone-of-voice"' in page
    assert 'enctype="multipart/form-data"' in page
    mine = signed_in(person).get("/addons/").content.decode()
    assert "Short memory" in mine and "Upload and install" not in mine
    assert "Available from installed" not in mine


def test_uploading_through_the_form_installs_switched_off(admin):
    client = signed_in(admin)
    upload = SimpleUploadedFile("tone.zip", example_zip(), content_type="application/zip")
    response = client.post("/addons/install/", {"package": upload}, follow=True)
    assert response.redirect_chain[-1][0] == "/addons/tone-of-voice/"
    page = response.content.decode()
    assert "It is off until you turn it on" in page and "Enable for everyone" in page
    assert InstalledAddon.objects.get(addon_id="tone-of-voice").enabled is False


def test_a_bad_upload_is_a_message_not_a_500(admin):
    client = signed_in(admin)
    for data in (b"junk", zip_of({"manifest.json": json.dumps({**manifest(), "id": "X"})})):
        upload = SimpleUploadedFile("bad.zip", data, content_type="application/zip")
        response = client.post("/addons/install/", {"package": upload}, follow=True)
        assert response.status_code == 200 and "Not installed:" in response.content.decode()
    assert (
        "Choose an add-on package" in client.post("/addons/install/", follow=True).content.decode()
    )
    assert not InstalledAddon.objects.exists()


def test_forms_need_the_csrf_token(admin):
    client = signed_in(admin, enforce_csrf_checks=True)
    upload = SimpleUploadedFile("tone.zip", example_zip(), content_type="application/zip")
    assert client.post("/addons/install/", {"package": upload}).status_code == 403
    assert client.post("/addons/memory/enabled/", {"enabled": "0"}).status_code == 403


def test_the_add_on_page_shows_the_manifest_settings_kit_and_pages(person, tone):
    addon_setting_put(user=person, addon="tone-of-voice", key="tone", value="formal")
    page = signed_in(person).get("/addons/tone-of-voice/").content.decode()
    assert "context/{tone}.md" in page and "context-files" in page
    # The settings kit: a line per choice, the person's value checked, the default marked.
    assert page.count('name="setting-tone-of-voice-tone"') == 3
    assert 'value="&quot;formal&quot;" checked' in page
    assert 'Friendly <span class="muted">(default)</span>' in page
    assert "/addons/tone-of-voice/pages/0/" in page
    assert "Disable for everyone" not in page  # not an administrator


def test_the_memory_page_shows_its_manifest_and_both_skills(person):
    page = signed_in(person).get("/addons/memory/").content.decode()
    assert "The whole manifest (manifest.json)" in page
    assert 'id="skill-memory"' in page and 'id="skill-memory-check-own-files"' in page
    assert page.count('name="setting-memory-save-mode"') == 3


def test_removing_asks_first_and_says_what_is_kept(admin, person, tone):
    addon_setting_put(user=person, addon="tone-of-voice", key="tone", value="brief")
    client = signed_in(admin)
    ask = client.get("/addons/tone-of-voice/remove/").content.decode()
    assert "Remove Tone of voice?" in ask and "1 saved setting value" in ask
    assert "notes and files" in ask
    assert InstalledAddon.objects.filter(
        addon_id="tone-of-voice"
    ).exists()  # asking removes nothing
    done = client.post("/addons/tone-of-voice/remove/", follow=True).content.decode()
    assert "Removed Tone of voice. Kept: 1 setting value(s)" in done
    assert not InstalledAddon.objects.filter(addon_id="tone-of-voice").exists()
    assert signed_in(person).post("/addons/memory/remove/", follow=True).status_code == 200
    assert signed_in(person).get("/addons/nothing/").status_code == 404


def test_a_person_cannot_switch_or_remove_for_everyone(person, tone):
    client = signed_in(person)
    client.post("/addons/tone-of-voice/enabled/", {"enabled": "0"})
    client.post("/addons/tone-of-voice/remove/")
    row = InstalledAddon.objects.get(addon_id="tone-of-voice")
    assert row.enabled is True


def test_skill_rules_are_edited_on_the_page(person):
    client = signed_in(person)
    client.post("/addons/skills-check/", {})  # unknown add-on pages are 404, not 500
    response = client.post(
        "/addons/memory/skills/memory/rules/", {"text": "Use metric units."}, follow=True
    )
    assert "Saved the learned rules of memory." in response.content.decode()
    assert SkillRule.objects.get(user=person, skill="memory").text == "Use metric units."
    assert ">Use metric units.</textarea>" in client.get("/addons/memory/").content.decode()
    assert client.post("/addons/memory/skills/nope/rules/", {"text": "x"}).status_code == 404


def test_package_files_are_served_sandboxed_and_only_while_on(person, admin, tone):
    client = signed_in(person)
    page = client.get("/addons/tone-of-voice/files/pages/index.html")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    policy = page["Content-Security-Policy"]
    assert "sandbox allow-scripts" in policy and "connect-src 'none'" in policy
    assert "allow-same-origin" not in policy and page["X-Frame-Options"] == "SAMEORIGIN"
    script = Client().get("/addons/tone-of-voice/files/pages/page.js")  # no session needed
    assert script.status_code == 200 and script["Content-Type"].startswith("text/javascript")
    assert "sandbox allow-scripts" in script["Content-Security-Policy"]
    # Context files go to the model, not to the browser; pages need the person signed in.
    assert client.get("/addons/tone-of-voice/files/context/formal.md").status_code == 404
    assert Client().get("/addons/tone-of-voice/files/pages/index.html").status_code == 404
    frame = client.get("/addons/tone-of-voice/pages/0/").content.decode()
    assert 'sandbox="allow-scripts"' in frame and "allow-same-origin" not in frame
    addon_user_set_enabled(user=person, addon_id="tone-of-voice", enabled=False)
    assert client.get("/addons/tone-of-voice/files/pages/index.html").status_code == 404
    assert client.get("/addons/tone-of-voice/pages/0/").status_code == 404
    addon_set_enabled(user=admin, addon_id="tone-of-voice", enabled=False)
    assert Client().get("/addons/tone-of-voice/files/pages/page.js").status_code == 404


def test_a_package_over_the_cap_is_refused_with_its_size_in_the_persons_language(
    admin, monkeypatch
):
    monkeypatch.setattr("addons.views.MAX_PACKAGE_BYTES", 1024)
    client = signed_in(admin)
    upload = SimpleUploadedFile("big.zip", b"x" * 3000, content_type="application/zip")
    response = client.post(
        "/addons/install/", {"package": upload}, follow=True, headers={"Accept-Language": "de"}
    )
    assert "Das Paket ist 3 KiB groß; erlaubt sind höchstens 1 KiB." in response.content.decode()
    assert not InstalledAddon.objects.exists()


def test_skills_are_shown_by_their_title_not_their_id(person):
    page = signed_in(person).get("/addons/memory/").content.decode()
    assert ">Honest about what memory holds</a>" in page
    assert ">memory-check-own-files</a>" not in page
