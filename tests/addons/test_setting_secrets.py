"""Add-on setting texts reach the add-on's prompts: a secret in one is refused when stored."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from addons.models import AddonSetting
from tests.addons.conftest import EXAMPLE_PACKAGE, folder_files, manifest, zip_of

pytestmark = pytest.mark.django_db

ADDON = "signature"


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _install(admin) -> None:
    files = folder_files(EXAMPLE_PACKAGE)
    signature = {"key": "signature", "label": "Signature", "type": "string", "default": ""}
    files["manifest.json"] = json.dumps(
        manifest(id=ADDON, name="Signature", settings=[*manifest()["settings"], signature])
    )
    client = _client(admin)
    upload = SimpleUploadedFile("a.zip", zip_of(files), content_type="application/zip")
    assert client.post("/api/addons/install", {"package": upload}).status_code == 201
    enabled = client.put(
        f"/api/addons/{ADDON}/enabled", json.dumps({"enabled": True}), "application/json"
    )
    assert enabled.status_code == 200, enabled.content


def _put(person, value: str):
    return _client(person).put(
        f"/api/addons/{ADDON}/settings/signature",
        json.dumps({"value": value}),
        content_type="application/json",
    )


@pytest.mark.parametrize(
    "value", ["Anna\n**Passwort**: Sommer2024!xQ", "| token | a8Fk29dLq0Zx7Wm3Yt |"]
)
def test_a_setting_text_holding_a_secret_is_refused(admin, person, value):
    _install(admin)
    response = _put(person, value)
    assert response.status_code == 400
    assert "signature" in response.json()["detail"]
    assert "Sommer2024" not in response.content.decode()
    assert not AddonSetting.objects.filter(user=person, addon=ADDON).exists()


def test_an_ordinary_setting_text_is_stored(admin, person):
    _install(admin)
    assert _put(person, "Best, Anna (password reset: see the help page)").status_code == 200
    assert AddonSetting.objects.filter(user=person, addon=ADDON).exists()
