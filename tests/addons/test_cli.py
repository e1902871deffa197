"""`memory-host addon new|check|pack|dev`: an author scaffolds an add-on, checks it with the
install's rules, packs it, and runs it on a live host in development mode."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from accounts.services import api_token_create
from addons.models import AddonSetting, InstalledAddon
from addons.services import addon_install_zip, addon_set_enabled, addon_setting_put
from config.addon_cli import addon_main
from tests.addons.test_api import Api
from tests.conftest import ROOT


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = addon_main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.django_db
def test_new_writes_an_add_on_that_checks_packs_installs_and_shapes_the_turn(
    capsys, tmp_path, admin, person
):
    folder = tmp_path / "detail-level"
    code, said = run(capsys, "new", str(folder))
    assert code == 0, said
    assert {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} == {
        "manifest.json",
        "context/detail.md",
        "pages/index.html",
        "pages/page.js",
        "sdk.d.ts",
    }
    code, said = run(capsys, "check", str(folder))
    assert code == 0 and "detail-level 0.1.0 can be installed (4 files" in said
    target = tmp_path / "out.zip"
    code, said = run(capsys, "pack", str(folder), "-o", str(target))
    assert code == 0, said
    assert sorted(zipfile.ZipFile(target).namelist())[0] == "context/detail.md"

    addon_install_zip(user=admin, data=target.read_bytes())
    addon_set_enabled(user=admin, addon_id="detail-level", enabled=True)
    addon_setting_put(user=person, addon="detail-level", key="detail", value=5)
    block = Api(person).turn()["addons_block"]
    assert "Level of detail: 5 of 5." in block


def test_check_prints_every_manifest_problem_with_what_is_allowed(capsys, tmp_path):
    folder = tmp_path / "units"
    run(capsys, "new", str(folder))
    data = json.loads((folder / "manifest.json").read_text())
    data.update(id="Units", permisions=[])
    (folder / "manifest.json").write_text(json.dumps(data))
    code, said = run(capsys, "check", str(folder))
    assert code == 1
    assert "2 problem(s)" in said
    assert "  - manifest.json: id: 'Units' does not fit: use 2 to 40 lowercase letters" in said
    assert "  - manifest.json: permisions: is not a field here; did you mean 'permissions'?" in said


def test_check_reads_a_zip_with_the_same_rules_as_the_install(capsys, tmp_path):
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("context/x.md", "x")
    code, said = run(capsys, "check", str(bad))
    assert code == 1 and "The package has no manifest.json at its top level." in said


def test_new_refuses_an_id_the_manifest_would_refuse(capsys, tmp_path):
    code, said = run(capsys, "new", str(tmp_path / "x"), "--id", "9lives")
    assert code == 2 and "pass --id with 2 to 40 lowercase letters" in said
    assert not (tmp_path / "x").exists()


def _dev_once(live, token: str, folder: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "config.cli", "addon", "dev", str(folder), "--once"],
        cwd=ROOT,
        env={"MEMORY_HOST_URL": live.url, "MEMORY_HOST_TOKEN": token, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.django_db(transaction=True)
def test_dev_installs_a_folder_marked_as_in_development_and_reloads_an_edit(
    capsys, tmp_path, live_asgi_server, admin, person
):
    folder = tmp_path / "detail-level"
    run(capsys, "new", str(folder))
    _, token = api_token_create(user=admin, name="dev")
    said = _dev_once(live_asgi_server, token, folder)
    assert "installed detail-level 0.1.0 in development mode and turned it on" in said
    row = InstalledAddon.objects.get(addon_id="detail-level")
    assert row.dev is True and row.enabled is True
    addon_setting_put(user=person, addon="detail-level", key="detail", value=2)

    (folder / "context" / "detail.md").write_text("Detail {{detail}}, edited.")
    said = _dev_once(live_asgi_server, token, folder)
    assert "reloaded detail-level 0.1.0: context/detail.md" in said
    assert AddonSetting.objects.get(user=person, addon="detail-level").value == 2
    assert "Detail 2, edited." in Api(person).turn()["addons_block"]


@pytest.mark.django_db(transaction=True)
def test_dev_is_refused_for_someone_who_is_not_an_administrator(
    capsys, tmp_path, live_asgi_server, person
):
    folder = tmp_path / "detail-level"
    run(capsys, "new", str(folder))
    _, token = api_token_create(user=person, name="dev")
    said = _dev_once(live_asgi_server, token, folder)
    assert "not installed: Only an administrator of this server can install" in said
    assert not InstalledAddon.objects.exists()


def test_types_writes_typescript_definitions_of_the_declared_settings(capsys, tmp_path):
    folder = tmp_path / "units"
    run(capsys, "new", str(folder))
    data = json.loads((folder / "manifest.json").read_text())
    data["settings"] += [
        {"key": "metric", "label": "Metric", "type": "boolean", "default": True},
        {
            "key": "unit",
            "label": "Unit",
            "type": "string",
            "default": "m",
            "choices": [{"value": "m", "label": "Metres"}, {"value": "ft", "label": "Feet"}],
        },
    ]
    (folder / "manifest.json").write_text(json.dumps(data))
    code, said = run(capsys, "types", str(folder))
    assert code == 0, said
    types = (folder / "sdk.d.ts").read_text()
    assert '  "detail": number;' in types and '  "metric": boolean;' in types
    assert '  "unit": "m" | "ft";' in types
    assert "onChange<K extends SettingKey>(" in types and "timeoutMs: number;" in types
