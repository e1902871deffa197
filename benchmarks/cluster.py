"""Several hosts on one machine, as compose runs them on several machines.

The pieces are separate process groups, so one can be killed without the others:
- the services: the embedded PostgreSQL and Redis (compose's db and redis), owned by
  `python -m benchmarks.cluster services`, which also migrates once;
- the scheduler: one `celery beat` for every host (compose's beat);
- each host: `manage.py serve --no-beat` (its web server and its workers) on its port;
- nginx (Debian's package) in front, with deploy/nginx.conf: the same proxy settings as
  compose's, only the upstream list, the port and the logs differ.

Used by the scale-out test (tests/chaos/test_scale_out.py) and its benchmark
(benchmarks/scale_out_bench.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 120.0
READY_LINE = "Uvicorn running on"
NGINX = Path(os.environ.get("NGINX_PATH", "/usr/sbin/nginx"))
# The proxy's settings as deployed; the test swaps only what names compose's network.
SITE = ROOT / "deploy" / "nginx.conf"
UPSTREAM_LINE = "    server web:8000 max_fails=3 fail_timeout=10s;\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Output:
    """A process's output, read all the time by a thread (a full pipe would stop it)."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self.lines.append("<ended>")
            self._changed.notify_all()

    def wait_for(self, text: str, *, after: int = 0, timeout: float = DEADLINE) -> str:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines[after:]:
                    if text in line:
                        return line
                    if line == "<ended>":
                        raise AssertionError("the process ended:\n" + self.tail())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {text!r}:\n" + self.tail())
                self._changed.wait(left)

    def tail(self, count: int = 80) -> str:
        return "".join(self.lines[-count:])


def popen(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], Output]:
    process = subprocess.Popen(  # noqa: S603
        command,
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    return process, Output(process.stdout)  # type: ignore[arg-type]  # a pipe was asked for


def kill_tree(process: subprocess.Popen[str]) -> None:
    """SIGKILL the process and everything it started, as a machine that loses power."""
    try:
        root = psutil.Process(process.pid)
        family = [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        family = []
    for member in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.kill()
    process.wait(timeout=30)
    psutil.wait_procs(family, timeout=30)


def stop(process: subprocess.Popen[str], *, grace: float = 60.0) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        kill_tree(process)


def answers_ok(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
            return bool(response.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


def wait_until_ok(url: str, timeout: float = DEADLINE) -> float:
    """Seconds until `url` answers 200, polled under a deadline."""
    start = time.monotonic()
    while not answers_ok(url):
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{url} did not answer 200 within {timeout:.0f} s")
        time.sleep(0.1)  # polling a server that is starting, under a deadline
    return time.monotonic() - start


def process_on_port(local_port: int) -> psutil.Process | None:
    """The process owning this machine's end of a TCP connection (a client's port)."""
    for connection in psutil.net_connections(kind="tcp"):
        if connection.laddr and connection.laddr.port == local_port and connection.pid:
            return psutil.Process(connection.pid)
    return None


class Host:
    """One host: `manage.py serve --no-beat`, its web server and its workers."""

    def __init__(self, name: str, env: dict[str, str], *, web_workers: int = 1) -> None:
        self.name = name
        self.port = free_port()
        self.env = env
        self.web_workers = web_workers
        self.process: subprocess.Popen[str] | None = None
        self.output: Output | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Host:
        command = [sys.executable, "manage.py", "serve", "--port", str(self.port), "--no-beat"]
        command += ["--web-workers", str(self.web_workers), "--worker-concurrency", "1"]
        command += ["--chat-concurrency", "2"]
        self.process, self.output = popen(command, self.env)
        self.output.wait_for(READY_LINE)
        wait_until_ok(f"{self.url}/readyz")
        return self

    def owns(self, process: psutil.Process) -> bool:
        """Whether the process is this host's: serve itself or one of its children."""
        if self.process is None:
            return False
        try:
            pids = {p.pid for p in psutil.Process(self.process.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            return False
        return process.pid in pids | {self.process.pid}

    def kill(self) -> None:
        if self.process is not None:
            kill_tree(self.process)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)


class Proxy:
    """nginx with the deployed site settings in front of the given hosts."""

    def __init__(self, folder: Path, hosts: list[Host]) -> None:
        self.folder = folder
        self.port = free_port()
        self.hosts = hosts
        self.process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def access_log(self) -> Path:
        return self.folder / "access.log"

    def config(self) -> str:
        site = SITE.read_text()
        upstreams = "".join(
            UPSTREAM_LINE.replace("web:8000", f"127.0.0.1:{host.port}") for host in self.hosts
        )
        replaced = site.replace(UPSTREAM_LINE, upstreams).replace(
            "listen 80;", f"listen 127.0.0.1:{self.port};"
        )
        # Static files come from the app (WhiteNoise): no collected folder here.
        replaced = re.sub(r"\n    location /static/ \{.*?\n    \}\n", "\n", replaced, flags=re.S)
        if replaced.count("127.0.0.1:") != len(self.hosts) + 1:
            raise RuntimeError("deploy/nginx.conf no longer has the lines this replaces")
        temp = "\n".join(
            f"    {kind}_temp_path {self.folder / kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        user = "user root root;\n" if os.geteuid() == 0 else ""
        return (
            f"{user}daemon off;\nworker_processes 1;\npid {self.folder / 'nginx.pid'};\n"
            f"error_log {self.folder / 'error.log'} warn;\n"
            "events { worker_connections 1024; }\n"
            "http {\n"
            # Which host answered each request, to show requests land on both.
            "    log_format upstreams '$request_method $uri $status $upstream_addr';\n"
            f"    access_log {self.access_log} upstreams;\n"
            f"{temp}\n{replaced}\n}}\n"
        )

    def start(self) -> Proxy:
        if not NGINX.exists():
            raise RuntimeError(
                f"nginx was not found at {NGINX}: on Debian run apt-get install nginx-light, "
                "or point NGINX_PATH at one"
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        conf = self.folder / "nginx.conf"
        conf.write_text(self.config())
        command = [str(NGINX), "-p", str(self.folder), "-c", str(conf)]
        self.process, output = popen(command, dict(os.environ))
        deadline = time.monotonic() + DEADLINE
        while not answers_ok(f"{self.url}/healthz"):
            if self.process.poll() is not None:
                raise AssertionError("nginx ended:\n" + output.tail())
            if time.monotonic() > deadline:
                raise AssertionError("nginx did not answer:\n" + output.tail())
            time.sleep(0.1)  # polling a server that is starting, under a deadline
        return self

    def upstreams(self, path_prefix: str = "/") -> dict[str, int]:
        """How many logged requests under `path_prefix` each host answered."""
        counts: dict[str, int] = {}
        for line in self.access_log.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[1].startswith(path_prefix):
                for address in parts[3].split(","):  # a retry names every host it tried
                    counts[address.strip()] = counts.get(address.strip(), 0) + 1
        return counts

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process, grace=10)


class Cluster:
    """The services, one scheduler, the hosts and the proxy on one data folder."""

    def __init__(self, folder: Path, *, hosts: int = 2, settings: dict[str, str]) -> None:
        self.folder = folder
        self.data_dir = folder / "data"
        base = {
            key: value
            for key, value in os.environ.items()
            if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
        }
        self.env = {
            **base,
            "PYTHONUNBUFFERED": "1",
            "DATA_DIR": str(self.data_dir),
            # All of it runs as whoever started it: the services' sockets are theirs.
            "SERVE_USER": "root",
            **settings,
        }
        self.services: subprocess.Popen[str] | None = None
        self.beat: subprocess.Popen[str] | None = None
        self.beat_output: Output | None = None
        self.hosts = [Host(chr(ord("a") + n), self.env) for n in range(hosts)]
        self.proxy = Proxy(folder / "nginx", self.hosts)

    def start(self) -> Cluster:
        self.services, output = popen([sys.executable, "-m", "benchmarks.cluster"], self.env)
        urls = json.loads(output.wait_for("SERVICES ").split(" ", 1)[1])
        self.env.update(urls)
        for host in self.hosts:
            host.env = self.env
        celery = [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO"]
        celery += ["--schedule", str(self.data_dir / "celerybeat-schedule")]
        self.beat, self.beat_output = popen(celery, self.env)
        for host in self.hosts:
            host.start()
        self.proxy.start()
        return self

    def shell(self, code: str) -> Any:
        """Run Django code against the cluster's database; it prints `RESULT <json>`."""
        result = subprocess.run(  # noqa: S603
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
        found = re.search(r"^RESULT (.*)$", result.stdout, re.MULTILINE)
        if not found:
            raise AssertionError(result.stdout + result.stderr)
        return json.loads(found.group(1))

    def host_of(self, process: psutil.Process | None) -> Host:
        for host in self.hosts:
            if process is not None and host.owns(process):
                return host
        raise AssertionError(f"{process} belongs to no host")

    def stop(self) -> None:
        self.proxy.stop()
        for host in self.hosts:
            host.stop()
        if self.beat is not None:
            stop(self.beat, grace=20)
        if self.services is not None and self.services.poll() is None:
            if self.services.stdin is not None:
                self.services.stdin.close()  # the services stop their servers and end
            try:
                self.services.wait(timeout=60)
            except subprocess.TimeoutExpired:
                kill_tree(self.services)
        shutil.rmtree(self.folder / "nginx", ignore_errors=True)


def _serve_services() -> None:
    """Start the embedded PostgreSQL and Redis, migrate, print their URLs, and keep
    them until stdin closes."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    from host import embedded

    embedded.start()
    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    urls = {"DATABASE_URL": os.environ["DATABASE_URL"], "REDIS_URL": os.environ["REDIS_URL"]}
    print("SERVICES " + json.dumps(urls), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    _serve_services()
