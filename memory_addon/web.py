"""Start the ASGI server with one web worker per core: `python -m memory_addon.web [options]`.

One uvicorn process runs Python on one core at a time; WEB_WORKERS processes (default:
the cores this process may use) serve requests side by side. `manage.py serve` and
compose both start the web server through `uvicorn_command`.
"""

from __future__ import annotations

import os
import sys


def web_workers() -> int:
    """WEB_WORKERS, else the number of cores this process may run on (at least 1)."""
    raw = os.environ.get("WEB_WORKERS", "").strip()
    if raw:
        try:
            return max(1, int(raw))
        except ValueError:
            raise SystemExit(f"WEB_WORKERS must be a whole number, not {raw!r}.") from None
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def uvicorn_command(options: list[str], workers: int | None = None) -> list[str]:
    count = web_workers() if workers is None else max(1, workers)
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "memory_addon.asgi:application",
        "--ws",
        "websockets-sansio",
        "--workers",
        str(count),
        *options,
    ]


if __name__ == "__main__":
    command = uvicorn_command(sys.argv[1:])
    os.execv(command[0], command)  # noqa: S606 - our own interpreter, fixed arguments
