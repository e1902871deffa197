"""Cold start and idle memory of the embedded stack, as `make run` starts it.

`manage.py serve` on a new data folder (first start: PostgreSQL's initdb, the
migrations, the first admin) and again on the same folder (a later start), each timed
from the command to the first 200 of /readyz. Then, idle, the memory of every process
of the stack: serve, the web server and its workers, the Celery workers and beat, the
embedded PostgreSQL and Redis. RSS counts a page shared by several processes in each of
them; PSS splits it between them, so the PSS total is what the stack holds.

Reference: the web server alone (`python -m host.web`, one worker) on the same data
folder, timed to its first /healthz 200.

Run: `python -m benchmarks.footprint_bench` (writes the `footprint` section of
docs/benchmarks.md).
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from benchmarks.cluster import READY_LINE, ROOT, free_port, popen, stop, wait_until_ok
from benchmarks.results import write_section

LATER_STARTS = 3
IDLE_SECONDS = 20.0  # after the start: imports done, pools warm, nothing queued


def _env(data_dir: Path) -> dict[str, str]:
    base = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    return {**base, "DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", "SERVE_USER": "root"}


def _start(data_dir: Path, command: list[str], health: str) -> tuple[subprocess.Popen[str], float]:
    port = free_port()
    started = time.monotonic()
    process, output = popen([*command, "--port", str(port)], _env(data_dir))
    output.wait_for(READY_LINE, timeout=300)
    wait_until_ok(f"http://127.0.0.1:{port}{health}", timeout=300)
    return process, time.monotonic() - started


def _stack(serve: subprocess.Popen[str], data_dir: Path) -> list[psutil.Process]:
    """serve, its children, and the embedded servers working in the data folder."""
    root = psutil.Process(serve.pid)
    found = {p.pid: p for p in [root, *root.children(recursive=True)]}
    for process in psutil.process_iter(["cmdline", "name"]):
        try:
            cmdline = " ".join(process.info["cmdline"] or [])
            if str(data_dir) in cmdline or Path(process.cwd()).is_relative_to(data_dir):
                found[process.pid] = process
        except psutil.Error:
            continue
    return list(found.values())


def _memory(processes: list[psutil.Process]) -> list[tuple[str, float, float]]:
    rows = []
    for process in processes:
        try:
            info = process.memory_full_info()
            cmdline = process.cmdline()
        except psutil.Error:
            continue
        name = " ".join(cmdline)[:60] if cmdline else process.name()
        name = name.replace(sys.executable, "python").replace("|", "/")
        rows.append((name, info.rss / 2**20, info.pss / 2**20))
    return sorted(rows, key=lambda row: -row[1])


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-footprint-"))
    folder.chmod(0o711)  # pgserver's own user reaches its folder under root
    data_dir = folder / "data"
    serve = [sys.executable, "manage.py", "serve"]
    load_before = os.getloadavg()[0]
    try:
        process, first = _start(data_dir, serve, "/readyz")
        stop(process)
        later = []
        for _ in range(LATER_STARTS):
            process, seconds = _start(data_dir, serve, "/readyz")
            later.append(seconds)
            if len(later) < LATER_STARTS:
                stop(process)
        time.sleep(IDLE_SECONDS)  # idle on purpose: the memory of a stack doing nothing
        rows = _memory(_stack(process, data_dir))
        stop(process)
        web = [sys.executable, "-m", "host.web", "--workers", "1"]
        web_alone = []
        for _ in range(LATER_STARTS):
            process, seconds = _start(data_dir, web, "/healthz")
            web_alone.append(seconds)
            stop(process)
        load_after = os.getloadavg()[0]
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    rss = sum(row[1] for row in rows)
    pss = sum(row[2] for row in rows)
    lines = [
        "## Footprint: cold start and idle memory of the embedded stack",
        "",
        f"Command: `python -m benchmarks.footprint_bench`. Machine: {machine}; load average "
        f"{load_before:.1f} before, {load_after:.1f} after (1-minute). Measured "
        f"{time.strftime('%Y-%m-%d')}.",
        "",
        "`manage.py serve` (what `make run` starts: one web worker per core), from the "
        "command to the first 200 of /readyz:",
        "",
        "| start | seconds | goal |",
        "|---|---|---|",
        f"| first (new data folder: initdb, migrations, first admin) | {first:.1f} | ≤ 8 s |",
        f"| later (median of {LATER_STARTS}) | {statistics.median(later):.1f} | ≤ 4 s |",
        f"| reference: the web server alone, to /healthz (median of {LATER_STARTS}) "
        f"| {statistics.median(web_alone):.1f} | |",
        "",
        f"Idle memory, {IDLE_SECONDS:.0f} s after a later start (PSS shares each shared page "
        "between the processes holding it):",
        "",
        "| process | RSS MiB | PSS MiB |",
        "|---|---|---|",
        *(f"| {name} | {r:.0f} | {p:.0f} |" for name, r, p in rows),
        f"| **all** (goal ≤ 1,024 MiB) | **{rss:.0f}** | **{pss:.0f}** |",
    ]
    body = "\n".join(lines) + "\n"
    write_section("footprint", body)
    print(body)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
