"""`memory-host addon new|check|pack|types|dev`: the add-on author's tools (H5).

`new` writes a working add-on (a page, a number setting, a skill and a context file that
uses it); `check` reads a folder or zip with the install's own rules and prints every
problem; `pack` checks a folder and writes the zip to upload; `types` writes sdk.d.ts
(TypeScript types of `window.sdk` for the manifest's settings); `dev` installs a folder on a
host as an update each time a file changes (administrators; the add-on is marked as in
development). Only `dev` talks to a host (MEMORY_HOST_URL, MEMORY_HOST_TOKEN).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import httpx

from addons.core.manifest import ManifestError, manifest_parse
from addons.core.package import (
    MAX_PACKAGE_BYTES,
    Package,
    PackageRefused,
    package_from_folder,
    package_from_zip,
    too_large,
)
from addons.core.sdk_types import sdk_typescript

_KEY_HELP = "2 to 40 lowercase letters, digits or dashes, starting with a letter"


def scaffold_files(addon_id: str, name: str) -> dict[str, str]:
    """The files of a new add-on that installs and works as it is."""
    manifest = {
        "api": 2,
        "id": addon_id,
        "name": name,
        "version": "0.1.0",
        "author": "You",
        "description": f"{name}: answers with the level of detail you choose.",
        "permissions": ["context-files", "user-settings", "pages"],
        "userToggle": True,
        "capabilities": {"contextFiles": ["context/detail.md"]},
        "settings": [
            {
                "key": "detail",
                "label": "Level of detail",
                "type": "integer",
                "description": "1 is a one-line answer, 5 is thorough.",
                "default": 3,
                "minimum": 1,
                "maximum": 5,
            }
        ],
        "skills": [
            {
                "name": "detail",
                "description": "Answers at the person's level of detail",
                "instructions": "Match the length of every answer to the level of detail in "
                "the context file of this add-on.",
            }
        ],
        "pages": [{"path": "pages/index.html", "title": "Level of detail"}],
    }
    page = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Level of detail</title>
  <script src="/static/js/addon-sdk.js"></script>
  <script src="page.js" defer></script>
</head>
<body>
  <label for="detail">Level of detail (1 to 5)</label>
  <input id="detail" type="number" min="1" max="5">
  <button type="button" id="save">Save</button>
  <p id="status" role="status"></p>
</body>
</html>
"""
    script = """// Runs sandboxed: window.sdk.userSettings is the only way to the host.
const field = document.getElementById("detail");
const status = document.getElementById("status");
window.sdk.userSettings.get("detail").then((value) => { field.value = value; });
document.getElementById("save").addEventListener("click", async () => {
  try {
    field.value = await window.sdk.userSettings.set("detail", Number(field.value));
    status.textContent = "Saved.";
  } catch (error) {
    status.textContent = `Not saved: ${error.message}`;
  }
});
"""
    return {
        "manifest.json": json.dumps(manifest, indent=2) + "\n",
        "context/detail.md": f"# {name}\n\nLevel of detail: {{{{detail}}}} of 5. At 1 answer "
        "in one line; at 5 explain each step.\n",
        "pages/index.html": page,
        "pages/page.js": script,
    }


def _read(path: Path) -> Package:
    if path.is_dir():
        return package_from_folder(path)
    data = path.read_bytes()
    return package_from_zip(data)


def zip_folder(folder: Path) -> bytes:
    """The folder's package files zipped in a stable order (what the install reads)."""
    package = package_from_folder(folder)
    files = {"manifest.json": (folder / "manifest.json").read_bytes(), **package.files}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[name])
    data = buffer.getvalue()
    if len(data) > MAX_PACKAGE_BYTES:
        raise PackageRefused(too_large(len(data)))
    return data


def _new(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    folder = Path(args.folder)
    addon_id = args.id or folder.name.replace("_", "-").lower()
    if folder.exists() and any(folder.iterdir()):
        out(f"error: {folder} is not empty; choose a new folder.")
        return 2
    files = scaffold_files(addon_id, args.name or addon_id.replace("-", " ").capitalize())
    try:
        manifest_parse(files["manifest.json"])
    except ManifestError as error:
        out(f"error: id {addon_id!r} cannot be used ({error}); pass --id with {_KEY_HELP}.")
        return 2
    files["sdk.d.ts"] = sdk_typescript(manifest_parse(files["manifest.json"]))
    for name, text in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    out(f"Wrote {len(files)} files to {folder}. Next: memory-host addon check {folder}")
    return 0


def _types(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    folder = Path(args.folder)
    try:
        manifest = manifest_parse((folder / "manifest.json").read_bytes())
    except OSError as error:
        out(f"error: cannot read {folder / 'manifest.json'} ({error.strerror}).")
        return 2
    except ManifestError as error:
        out(f"error: manifest.json: {error}")
        return 1
    (folder / "sdk.d.ts").write_text(sdk_typescript(manifest), encoding="utf-8")
    out(f"Wrote {folder / 'sdk.d.ts'} ({len(manifest.settings)} settings).")
    return 0


def _check(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    path = Path(args.path)
    if not path.exists():
        out(f"error: {path} does not exist.")
        return 2
    try:
        package = _read(path)
    except PackageRefused as refused:
        out(f"{path}: {len(refused.problems)} problem(s):")
        for problem in refused.problems:
            out(f"  - {problem}")
        return 1
    manifest = package.manifest
    out(
        f"{path}: {manifest.id} {manifest.version} can be installed "
        f"({len(package.files) + 1} files, {package.size // 1024 + 1} KiB)."
    )
    return 0


def _pack(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    folder = Path(args.folder)
    try:
        data = zip_folder(folder)
        manifest = package_from_zip(data).manifest
    except PackageRefused as refused:
        out(f"{folder}: not packed, {len(refused.problems)} problem(s):")
        for problem in refused.problems:
            out(f"  - {problem}")
        return 1
    target = Path(args.output or f"{manifest.id}-{manifest.version}.zip")
    target.write_bytes(data)
    out(f"Wrote {target} ({len(data)} bytes). Upload it under Add-ons → Install from a package.")
    return 0


def _snapshot(folder: Path) -> tuple[tuple[str, int, int], ...]:
    return tuple(
        (str(p.relative_to(folder)), p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    )


def dev_install(http: httpx.Client, folder: Path) -> str:
    """Send the folder to the host as a development update; the line to print."""
    try:
        data = zip_folder(folder)
        manifest = package_from_zip(data).manifest
    except PackageRefused as refused:
        return "not installed: " + "; ".join(refused.problems)
    # The administrator running the loop is the author: the permissions it declares are
    # theirs to grant, and an edit may lower the version.
    fields: dict[str, str | list[str]] = {
        "update": "true",
        "downgrade": "true",
        "dev": "true",
        "consent": list(manifest.permissions),
    }
    upload = {"package": ("addon.zip", data, "application/zip")}
    response = http.post("/api/addons/install", data=fields, files=upload)
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        return f"not installed: {detail} (HTTP {response.status_code})"
    if response.status_code == 201:
        http.put(f"/api/addons/{manifest.id}/enabled", json={"enabled": True})
        return f"installed {manifest.id} {manifest.version} in development mode and turned it on"
    changes = response.json().get("changes") or {}
    changed = [*changes.get("added_files", []), *changes.get("changed_files", [])]
    return f"reloaded {manifest.id} {manifest.version}: {', '.join(changed) or 'manifest'}"


def _dev(args: argparse.Namespace, out: Callable[[str], None], base: str, token: str) -> int:
    folder = Path(args.folder)
    if not token:
        out("error: set MEMORY_HOST_TOKEN to a personal API token of an administrator")
        return 2
    http = httpx.Client(
        base_url=base.rstrip("/"), headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    seen: tuple[tuple[str, int, int], ...] = ()
    out(f"Watching {folder}; Ctrl-C stops.")
    try:
        while True:
            now = _snapshot(folder)
            if now != seen:
                seen = now
                try:
                    out(dev_install(http, folder))
                except httpx.HTTPError as error:
                    out(f"error: cannot reach the memory host at {base} ({type(error).__name__})")
                if args.once:
                    return 0
            time.sleep(1)  # polling a small folder; no watcher dependency for authors
    except KeyboardInterrupt:
        return 0


def addon_main(argv: list[str], *, base: str = "", token: str = "") -> int:
    parser = argparse.ArgumentParser(prog="memory-host addon", description="Add-on author tools")
    commands = parser.add_subparsers(dest="command", required=True)
    new = commands.add_parser("new", help="write a working add-on into a new folder")
    new.add_argument("folder")
    new.add_argument("--id", help=f"the add-on id: {_KEY_HELP} (default: the folder's name)")
    new.add_argument("--name", help="the name people read")
    check = commands.add_parser("check", help="check a folder or zip as the install would")
    check.add_argument("path")
    pack = commands.add_parser("pack", help="check a folder and write its zip")
    pack.add_argument("folder")
    pack.add_argument("-o", "--output", help="the zip to write (default: <id>-<version>.zip)")
    types = commands.add_parser("types", help="write sdk.d.ts: TypeScript types of the sdk")
    types.add_argument("folder")
    dev = commands.add_parser("dev", help="install a folder and reinstall it on every change")
    dev.add_argument("folder")
    dev.add_argument("--once", action="store_true", help="install once and stop")
    args = parser.parse_args(argv)

    def out(line: str) -> None:
        print(line, file=sys.stderr if line.startswith("error:") else sys.stdout)

    if args.command == "new":
        return _new(args, out)
    if args.command == "check":
        return _check(args, out)
    if args.command == "pack":
        return _pack(args, out)
    if args.command == "types":
        return _types(args, out)
    return _dev(args, out, base, token)
