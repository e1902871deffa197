"""Command-line client for project memory banks (M17), installed as `memory-host`.

    memory-host status|on|off|files|show [path]|path [--project DIR | --key KEY]
    memory-host mcp [--bank (--project DIR | --key KEY)]
    memory-host addon new|check|pack|dev …   (add-on author tools, config/addon_cli.py)

Talks to the host's REST API with a personal token, from any folder. `mcp` is an MCP
server on stdio (B1) that forwards every request to the host's /mcp/ endpoint: the
person's memory tools and `search`, or with --bank the project bank's file API. The
project identity is the Git common directory (so linked worktrees share a bank;
separate clones do not), or the resolved folder outside Git; --key names a bank by the
key its page shows. Settings: MEMORY_HOST_URL (default http://127.0.0.1:8000) and
MEMORY_HOST_TOKEN (create one under Settings → API tokens).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx


def project_identity(folder: Path) -> tuple[str, str]:
    """(stable key, readable name) for the project that holds `folder`."""
    try:
        common = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],  # noqa: S607
            cwd=folder,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        root = Path(common).resolve()
        kind, name = "git", root.parent.name if root.name == ".git" else root.name
    except (subprocess.CalledProcessError, FileNotFoundError, subprocess.TimeoutExpired):
        root = folder.resolve()
        kind, name = "path", root.name
    digest = hashlib.sha256(f"{kind}:{root}".encode()).hexdigest()[:32]
    return f"{kind}:{digest}", name


class Client:
    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url
        self.http = httpx.Client(
            base_url=base_url.rstrip("/") + "/api/memory",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )

    def call(self, method: str, url: str, *, missing: str = "", **kwargs: Any) -> Any:
        """One API call; any failure ends the command with one line saying what to do."""
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.HTTPError as error:
            raise SystemExit(
                f"error: cannot reach the memory host at {self.base_url} "
                f"({type(error).__name__}); is it running? MEMORY_HOST_URL names it."
            ) from None
        if response.status_code == 401:
            raise SystemExit(
                "error: the host refused the token; create one under Settings → API tokens "
                "and put it in MEMORY_HOST_TOKEN."
            )
        if response.status_code == 404 and missing:
            raise SystemExit(f"error: {missing}")
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise SystemExit(f"error: {detail} (HTTP {response.status_code})")
        return response.json()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory-host", description="Project memory bank client")
    parser.add_argument("command", choices=["status", "on", "off", "files", "show", "path", "mcp"])
    parser.add_argument("path", nargs="?", default="MEMORY.md")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--project", help="a folder of the project (default: here)")
    where.add_argument("--key", help="the project key itself, as the bank's page shows it")
    parser.add_argument(
        "--bank", action="store_true", help="mcp: serve the project bank's tools instead"
    )
    return parser


def _identity(args: argparse.Namespace) -> tuple[str, str] | str:
    """(key, name) of the project the arguments name, or the error to print."""
    if args.key is not None:
        key = args.key.strip()
        return (key, "") if key else "--key is empty; give the project key the bank's page shows."
    if args.command == "mcp" and args.bank and args.project is None:
        # An MCP client starts the command in a folder of its choosing, not the project's.
        return "mcp --bank needs --project DIR or --key KEY to name the project."
    folder = Path(args.project or ".")
    if not folder.is_dir():
        return f"--project {folder} is not a folder."
    return project_identity(folder)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    base = os.environ.get("MEMORY_HOST_URL", "http://127.0.0.1:8000")
    token = os.environ.get("MEMORY_HOST_TOKEN", "")
    if argv[:1] == ["addon"]:  # an author's tools: most need no host and no token
        from config.addon_cli import addon_main

        return addon_main(argv[1:], base=base, token=token)
    args = _parser().parse_args(argv)
    if not token:
        print("error: set MEMORY_HOST_TOKEN to a personal API token", file=sys.stderr)
        return 2
    if args.command == "mcp" and not args.bank:
        from config.mcp_stdio import serve_stdio

        return serve_stdio(base_url=base, token=token)
    identity = _identity(args)
    if isinstance(identity, str):
        print(f"error: {identity}", file=sys.stderr)
        return 2
    key, name = identity
    if args.command == "mcp":
        from config.mcp_stdio import serve_stdio

        return serve_stdio(base_url=base, token=token, project_key=key, project_name=name)
    client = Client(base, token)
    params = {"project_key": key}
    if args.command == "status" or args.command in ("on", "off"):
        if args.command == "status":
            status = client.call("GET", "/banks/status", params=params)
        else:
            status = client.call(
                "POST",
                "/banks/enabled",
                params={"enabled": args.command == "on"},
                json={"project_key": key, "project_name": name},
            )
        print(f"project: {name} ({key})" if name else f"project: {key}")
        print(f"memory: {'on' if status['enabled'] else 'off'}")
        print(f"files: {status['files']}, {status['bytes']} bytes")
        if args.command == "status":
            print("startup context:")
            print(status["startup_context"])
    elif args.command == "files":
        for row in client.call("GET", "/banks/files", params=params):
            print(f"{row['path']}\t{row['size']} bytes")
    elif args.command == "show":
        row = client.call(
            "GET",
            "/banks/file",
            params={**params, "path": args.path},
            missing=f"this project's bank has no file {args.path} (`files` lists them).",
        )
        print(row["content"], end="" if row["content"].endswith("\n") else "\n")
    else:
        status = client.call("GET", "/banks/status", params=params)
        print(f"{base.rstrip('/')} · {status['folder']} ({key})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
