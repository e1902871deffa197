"""Start the ASGI server with one web worker per core: `python -m host.web [options]`.

One uvicorn process runs Python on one core at a time; WEB_WORKERS processes (default:
the cores this process may use) serve requests side by side. `manage.py serve` and
compose both start the web server through this module.
"""

from __future__ import annotations

import os
import socket
import sys

from host.env import BadSetting, env_int


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


def uvicorn_command(options: list[str]) -> list[str]:
    """`python -m uvicorn` with the app, and WEB_WORKERS unless the options name --workers.

    Every connection is bounded: headers in time and size (web_protocol), an idle
    keep-alive connection closed after WEB_KEEP_ALIVE_SECONDS (default 5)."""
    workers = [] if "--workers" in options else ["--workers", str(web_workers())]
    try:
        idle = env_int("WEB_KEEP_ALIVE_SECONDS", 5)
    except BadSetting as error:
        raise SystemExit(str(error)) from None
    keep_alive = [] if "--timeout-keep-alive" in options else ["--timeout-keep-alive", str(idle)]
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "config.asgi:application",
        "--ws",
        "websockets-sansio",
        # X-Forwarded-For is read by the app alone (host/client_address.py).
        "--no-proxy-headers",
        "--http",
        "host.web_protocol:BoundedHttpToolsProtocol",
        *keep_alive,
        *workers,
        *options,
    ]


def _listen_before_the_workers_start() -> None:
    """With several workers uvicorn binds the socket, says "Uvicorn running on", and
    only the workers, once started, listen: a request in between was refused. Listening
    at bind time queues it in the backlog instead, so "running" means reachable."""
    from uvicorn.config import Config

    bind = Config.bind_socket

    def bind_and_listen(self: Config) -> socket.socket:
        sock = bind(self)
        sock.listen(self.backlog)
        return sock

    Config.bind_socket = bind_and_listen  # type: ignore[method-assign]


def _fork_the_workers_from_a_loaded_app() -> None:
    """uvicorn starts each worker as a fresh interpreter (multiprocessing's spawn), which
    imports the app again: one fork server loads it (config/web_preload.py) and forks every
    worker, the first ones and any uvicorn starts in place of a dead one."""
    import multiprocessing

    from uvicorn import _subprocess

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["config.web_preload"])
    _subprocess.spawn = context  # type: ignore[assignment]


def main(argv: list[str]) -> None:
    from uvicorn.main import main as uvicorn_main

    _listen_before_the_workers_start()
    _fork_the_workers_from_a_loaded_app()
    arguments = uvicorn_command(argv)[3:]  # what follows `python -m uvicorn`
    uvicorn_main.main(args=arguments, prog_name="uvicorn")


if __name__ == "__main__":
    main(sys.argv[1:])
