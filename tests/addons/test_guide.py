"""docs/addons.md against the code: every endpoint in its REST table, every message it
quotes produced as quoted, and its walkthrough followed step by step with the scaffold."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from addons.core.manifest import ManifestError, manifest_parse
from addons.core.package import MAX_PACKAGE_BYTES, PackageRefused, package_from_zip
from addons.models import AddonSetting, InstalledAddon
from config.addon_cli import addon_main
from tests.addons.conftest import manifest, zip_of
from tests.addons.test_api import Api
from tests.conftest import ROOT

GUIDE = (ROOT / "docs" / "addons.md").read_text()


def section(title: str) -> str:
    start = GUIDE.index(f"## {title}")
    end = GUIDE.find("\n## ", start + 1)
    return GUIDE[start : end if end != -1 else None]


def test_every_add_on_and_skill_endpoint_is_in_the_guides_rest_table():
    from config.api import api

    served = {
        (method.upper(), re.sub(r"\{[^}]+\}", "{}", path))
        for path, operations in api.get_openapi_schema()["paths"].items()
        if path.startswith(("/api/addons", "/api/skills"))
        for method in operations
    }
    documented = {
        (method, re.sub(r"\{[^}]+\}", "{}", path))
        for method, path in re.findall(
            r"^\| `(GET|PUT|POST|DELETE) (/api/\S+)`", GUIDE, flags=re.MULTILINE
        )
    }
    assert documented == served


def _manifest_problem(**changes) -> str:
    with pytest.raises(ManifestError) as raised:
        manifest_parse(manifest(**changes))
    [problem] = raised.value.problems
    return problem


def _package_problem(data: bytes) -> str:
    with pytest.raises(PackageRefused) as raised:
        package_from_zip(data)
    return str(raised.value)


def _setting_problem() -> str:
    declared = manifest_parse(manifest()).setting("tone")
    assert declared is not None
    with pytest.raises(ValueError, match="must be one of") as raised:
        declared.check("loud")
    return str(raised.value)


def _units(capabilities: dict) -> dict:
    return manifest(
        id="units",
        permissions=["context-files", "user-settings"],
        capabilities=capabilities,
        pages=[],
        settings=[{"key": "decimals", "label": "Decimals", "type": "integer", "default": 2}],
    )


def test_every_message_the_guide_quotes_is_what_the_host_says():
    quoted = re.findall(r"^- `(.+)`$", section("8. Messages you may see"), flags=re.MULTILINE)
    units = _units({"contextFiles": ["context/units.md"]})
    said = [
        _manifest_problem(id="Units"),
        _manifest_problem(version="one"),
        _manifest_problem(permisions=[]),
        _manifest_problem(permissions=["pagez", "context-files", "user-settings"]),
        _manifest_problem(settings=[{**manifest()["settings"][0], "default": "loud"}]),
        _manifest_problem(**_units({"contextFiles": ["context/{decimals}.md"]})),
        _package_problem(
            zip_of({"manifest.json": json.dumps(units), "context/units.md": "{{decimal}}"})
        ),
        _package_problem(b"0" * (MAX_PACKAGE_BYTES + 1)),
        _setting_problem(),
    ]
    assert quoted == said


@pytest.mark.django_db
def test_the_guides_walkthrough_works_step_by_step_with_the_scaffold(
    capsys, tmp_path, monkeypatch, admin
):
    monkeypatch.chdir(tmp_path)
    page = Client()
    page.force_login(admin)
    # 1. and 2.
    assert addon_main(["new", "detail-level"]) == 0
    assert addon_main(["check", "detail-level"]) == 0
    assert "detail-level 0.1.0 can be installed" in capsys.readouterr().out
    # 3.
    assert addon_main(["pack", "detail-level"]) == 0
    first = (tmp_path / "detail-level-0.1.0.zip").read_bytes()
    page.post("/addons/install/", {"package": SimpleUploadedFile("a.zip", first)})
    page.post("/addons/detail-level/enabled/", {"enabled": "1"})
    # 4.
    as_admin = Api(admin)
    assert as_admin.put("/api/addons/detail-level/settings/detail", {"value": 5}).status_code == 200
    assert "Level of detail: 5 of 5." in as_admin.turn()["addons_block"]
    # 5.
    folder = tmp_path / "detail-level"
    (folder / "context" / "detail.md").write_text("Detail {{detail}} of 5, edited.")
    data = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**data, "version": "0.2.0"}))
    assert addon_main(["pack", "detail-level"]) == 0
    second = (tmp_path / "detail-level-0.2.0.zip").read_bytes()
    shown = page.post("/addons/install/", {"package": SimpleUploadedFile("b.zip", second)})
    assert "context/detail.md" in shown.content.decode()
    token = shown.content.decode().split('name="token" value="', 1)[1].split('"', 1)[0]
    page.post("/addons/install/", {"token": token, "update": "1"})
    assert InstalledAddon.objects.get(addon_id="detail-level").manifest["version"] == "0.2.0"
    assert "Detail 5 of 5, edited." in as_admin.turn()["addons_block"]
    # 6.
    page.post("/addons/detail-level/remove/")
    assert not InstalledAddon.objects.filter(addon_id="detail-level").exists()
    assert AddonSetting.objects.get(user=admin, addon="detail-level").value == 5
