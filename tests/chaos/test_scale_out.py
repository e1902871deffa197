"""Two hosts behind nginx on one database and one Redis, as compose runs them on two
machines (benchmarks/cluster.py): a session, a live push and a chat work whichever host
a request lands on, and a host killed mid-chat and mid-index costs no write.

The short form of the scale-out run; `python -m benchmarks.scale_out_bench` measures the
pair's throughput against one host.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from benchmarks.cluster import NGINX, Cluster, Host, process_on_port, wait_until_ok
from tests.chaos.test_serve_under_faults import NoteWriter, _signed_in
from tests.fake_openai import FakeOpenAI

pytestmark = [
    pytest.mark.chaos,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not NGINX.exists(), reason="nginx is installed by make test"),
]

DEADLINE = 120.0
SETTINGS = {
    # The killed host's answer and job are noticed within seconds, not minutes.
    "CHAT_STALE_SECONDS": "8",
    "CHAT_REAP_INTERVAL_SECONDS": "2",
    "KNOWLEDGE_JOB_STALE_SECONDS": "8",
    "KNOWLEDGE_JOB_REAP_INTERVAL_SECONDS": "2",
    "MEMORY_INDEX_MAX_LINES": "5000",
    "MEMORY_INDEX_MAX_BYTES": "1000000",
}
SETUP = """
import json
from accounts.models import AIProfile, User
from accounts.services import api_token_create
from knowledge.models import FolderGrant
from knowledge.services import store_create
from memory_addon.services.scopes import ensure_user_scope
user = User.objects.create_superuser("pair", password={password!r})
_, token = api_token_create(user=user, name="scale-out")
chat = AIProfile.objects.create(
    owner=user, name="Fake", base_url={base_url!r}, model="fake-model", is_default=True
)
embed = AIProfile.objects.create(
    owner=user, name="Embed", role=AIProfile.Role.EMBEDDING, base_url={base_url!r},
    model="fake-embed",
)
FolderGrant.objects.create(path={folder!r}, user=user)
store = store_create(owner=user, name="Docs", provider="openai", ai_profile=embed)
print("RESULT " + json.dumps({{
    "token": token, "scope": ensure_user_scope(user).pk, "profile": chat.pk, "store": store.pk,
}}))
"""
INDEXED = """
import json
from knowledge.models import Chunk, Job
print("RESULT " + json.dumps({{
    "chunks": Chunk.objects.filter(source__store_id={store}).count(),
    "requeues": Job.objects.get(pk={job}).requeues,
}}))
"""


class Api:
    """REST through the proxy with a personal token."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            f"{self.base}/api{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return json.loads(response.read() or b"null")
            except urllib.error.HTTPError as error:
                # 502: the host that had the request died with it; a GET is safe again.
                if error.code != 502 or method != "GET" or time.monotonic() > deadline:
                    raise AssertionError(
                        f"{method} {path}: {error.code} {error.read()!r}"
                    ) from None

    def until(self, path: str, done: Any, what: str) -> Any:
        deadline = time.monotonic() + DEADLINE
        while not done(found := self.call("GET", path)):
            assert time.monotonic() < deadline, f"{what}: {found}"
            time.sleep(0.2)  # polling the job's or answer's state, under a deadline
        return found


class Pushes:
    """A page's websocket, its frames collected by a thread."""

    def __init__(self, url: str, cookie: str, origin: str) -> None:
        self.frames: list[str] = []
        self.arrived = threading.Condition()
        self.socket: ClientConnection = connect(
            url, additional_headers={"Cookie": cookie}, origin=origin, open_timeout=30, legacy=True
        )  # type: ignore[arg-type]
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for frame in self.socket:
                with self.arrived:
                    self.frames.append(str(frame))
                    self.arrived.notify_all()
        except Exception:  # noqa: S110 - the host went away; the frames stay
            pass

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + DEADLINE
        with self.arrived:
            while not any(text in frame for frame in self.frames):
                left = deadline - time.monotonic()
                assert left > 0, f"no push with {text!r}"
                self.arrived.wait(left)

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def cluster_folder() -> Iterator[Path]:
    """Under root, pgserver runs PostgreSQL as its own user, who must reach the folder."""
    folder = Path(tempfile.mkdtemp(prefix="pair-"))
    folder.chmod(0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _cookie_header(opener: urllib.request.OpenerDirector) -> str:
    (jar,) = (
        h.cookiejar for h in opener.handlers if isinstance(h, urllib.request.HTTPCookieProcessor)
    )
    return "; ".join(f"{c.name}={c.value}" for c in jar)


def _worker_host(cluster: Cluster, peer: tuple[str, int]) -> Host:
    return cluster.host_of(process_on_port(peer[1]))


def test_two_hosts_behind_nginx_share_sessions_pushes_chats_and_jobs_and_survive_a_kill(
    cluster_folder,
):
    fake = FakeOpenAI().start()
    docs = cluster_folder / "docs"
    docs.mkdir()
    for number in range(120):
        (docs / f"note-{number:03d}.txt").write_text(f"Document {number} about harbour {number}.")
    cluster = Cluster(cluster_folder, settings={**SETTINGS, "KNOWLEDGE_ALLOWED_ROOTS": str(docs)})
    writer: NoteWriter | None = None
    try:
        cluster.start()
        a, b = cluster.hosts
        base = cluster.proxy.url
        setup = cluster.shell(
            SETUP.format(password="pair-Password-1", base_url=fake.base_url, folder=str(docs))
        )
        api = Api(base, setup["token"])

        # A session made on one host is good on both: every page through the proxy.
        browser = _signed_in(base, "pair", "pair-Password-1")
        for _ in range(6):
            with browser.open(f"{base}/memory/", timeout=30) as page:
                assert page.status == 200 and b"sign-in" not in page.url.encode()
        answered = cluster.proxy.upstreams("/memory/")
        assert set(answered) == {f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"}, answered

        # Notes keep being written through the proxy while the hosts die below.
        writer = NoteWriter(base, setup["token"], setup["scope"])
        writer_thread = threading.Thread(target=writer.run, daemon=True)
        writer_thread.start()
        writer.acknowledged_after(time.monotonic() - 1)

        # A page's socket on either host gets the pushes of a chat any host's worker runs.
        cookie = _cookie_header(browser)
        sockets = {
            name: Pushes(f"ws://127.0.0.1:{port}/ws/events/", cookie, f"http://127.0.0.1:{port}")
            for name, port in (("a", a.port), ("b", b.port), ("proxy", cluster.proxy.port))
        }
        conversation = api.call("POST", "/chat/conversations", {"profile_id": setup["profile"]})
        fake.chat_replies.append(
            {"content": "Harbour zebracorn answer keeps going on", "gate_after": 3}
        )
        answer = api.call(
            "POST", f"/chat/conversations/{conversation['id']}/messages", {"text": "Tell me"}
        )
        assert fake.reached_gate.wait(DEADLINE), "the model was never asked"
        for pushes in sockets.values():
            pushes.wait_for("zebracorn")

        # The host whose chat worker writes that answer dies mid-stream.
        streaming = [n for n, body in enumerate(fake.chat_requests) if body.get("stream")][-1]
        doomed = _worker_host(cluster, fake.chat_peers[streaming])
        survivor = b if doomed is a else a
        killed_at = time.monotonic()
        doomed.kill()
        fake.chat_gate.set()
        failed = api.until(
            f"/chat/messages/{answer['id']}",
            lambda m: m["state"] != "streaming",
            "the killed host's answer never ended",
        )
        assert failed["state"] == "failed"
        assert "worker writing this answer stopped" in failed["error"]
        chat_failed_after = time.monotonic() - killed_at
        # The next answer is written on the host that is left.
        fake.default_reply = {"content": "The survivor answers whole."}
        again = api.call(
            "POST", f"/chat/conversations/{conversation['id']}/messages", {"text": "Again"}
        )
        whole = api.until(
            f"/chat/messages/{again['id']}", lambda m: m["state"] != "streaming", "no answer"
        )
        assert (whole["state"], whole["content"]) == ("complete", "The survivor answers whole.")
        sockets["a" if survivor is a else "b"].wait_for("The survivor answers whole.")

        # The killed host comes back; then a host dies while its worker indexes.
        doomed.start()
        wait_until_ok(f"{doomed.url}/readyz")
        # The index job's first batch waits here (notes' own embeddings pass).
        fake.hold_after, fake.hold_matching = 0, "harbour"
        fake.release.clear()
        added = api.call("POST", f"/knowledge/stores/{setup['store']}/sources", {"path": str(docs)})
        scan = api.until(
            f"/knowledge/jobs/{added['job']['id']}",
            lambda j: j["state"] not in ("queued", "running"),
            "the scan never ended",
        )
        assert scan["state"] == "review", scan
        index = api.call("POST", f"/knowledge/jobs/{scan['id']}/confirm")
        assert fake.reached_hold.wait(DEADLINE), "the index job never embedded"
        doomed = _worker_host(cluster, fake.held_peers[0])
        print(f"\nhost {doomed.name} indexes; killing it", flush=True)
        killed_at = time.monotonic()
        doomed.kill()
        fake.hold_after = None
        fake.release.set()
        done = api.until(
            f"/knowledge/jobs/{index['id']}",
            lambda j: j["state"] not in ("queued", "running"),
            "the index job was never taken over",
        )
        assert done["state"] == "succeeded", done
        index_done_after = time.monotonic() - killed_at
        # Taken over once, by the other host's worker, and every file is in the index.
        indexed = cluster.shell(INDEXED.format(store=setup["store"], job=index["id"]))
        assert indexed == {"chunks": 120, "requeues": 1}

        # Every acknowledged note is stored once, whichever host took it. The writer ends
        # its last note first: a note acknowledged after the read, or one still retried
        # once the hosts are stopped, would count against the run.
        writer.stop.set()
        writer_thread.join(timeout=DEADLINE)
        assert not writer_thread.is_alive(), "the last note got no answer"
        content = api.call("GET", f"/memory/scopes/{setup['scope']}/file?path=index.md")["content"]
        assert writer.refused == {}
        assert writer.acknowledged, "no note was written during the run"
        for number in writer.acknowledged:
            assert content.count(writer.text(number)) == 1, number
        print(
            f"\nscale-out: {len(writer.acknowledged)} notes acknowledged; killed host's answer"
            f" failed after {chat_failed_after:.1f} s; index job done {index_done_after:.1f} s"
            " after its host was killed"
        )
        for pushes in sockets.values():
            pushes.close()
    except BaseException:
        for host in cluster.hosts:
            if host.output is not None:
                print(f"host {host.name}'s last output:\n{host.output.tail(60)}")
        raise
    finally:
        if writer is not None:
            writer.stop.set()
        cluster.stop()
        fake.stop()
