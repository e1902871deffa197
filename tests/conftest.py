"""Shared fixtures: a real Celery worker process, a live ASGI server, a browser.

Everything runs against the test suite's own embedded PostgreSQL and Redis
(config.settings_test); the AI model is the only fake.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests.factories import UserFactory
from tests.hostile_server import HostileServer

ROOT = Path(__file__).resolve().parent.parent
# Playwright's sync API keeps an event loop in the test thread; the tests still
# run their ORM calls synchronously and one at a time.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# `make mutate` runs the property tests under mutmut's tracing, many times over: fewer
# examples, and no timing checks (pytest --hypothesis-profile=mutation).
hypothesis_settings.register_profile(
    "mutation",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Each session's tmp_path folders below a folder of its own that PostgreSQL's user
    can pass through: under root, pgserver runs PostgreSQL as its own user and opens up
    the folders above a data folder for it, and a pytest session starting alongside
    (another checkout) closed `/tmp/pytest-of-root` again under a running test."""
    if config.option.basetemp is None:
        base = Path(tempfile.mkdtemp(prefix="memory-host-tests-"))
        base.chmod(0o711)
        config.option.basetemp = str(base / "t")
        config.add_cleanup(lambda: shutil.rmtree(base, ignore_errors=True))


@pytest.fixture
def unconsumed_chat_queue(settings):
    """Turns queued here are run by the test itself: the chat queue gets a name no chat
    worker listens on, and is emptied afterwards."""
    from config.celery import app

    settings.CHAT_QUEUE = "chat-unconsumed-tests"
    yield
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(settings.CHAT_QUEUE)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def web_workers_of(web_server_pid: int) -> list[Any]:
    """The serving processes of `python -m host.web`: forked by its fork server, which
    loaded the app once (config/web_preload.py)."""
    import psutil

    forkservers = [
        child
        for child in psutil.Process(web_server_pid).children()
        if "multiprocessing.forkserver" in " ".join(child.cmdline())
    ]
    return [
        worker
        for forkserver in forkservers
        for worker in forkserver.children()
        if worker.status() != psutil.STATUS_ZOMBIE
    ]


def suite_database_url() -> str:
    db = connection.settings_dict
    return f"postgresql://{db['USER']}:@/{db['NAME']}?host={db['HOST']}"


def child_env(**extra: str) -> dict[str, str]:
    """Environment for a child process that must use the test database and Redis."""
    os.environ.setdefault("EMBEDDING_MODEL_PATH", settings.EMBEDDING_MODEL_PATH)
    inherited = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": suite_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        **extra,
    }


@pytest.fixture(scope="session")
def celery_worker(
    django_db_setup: None, django_db_blocker: pytest.FixtureRequest
) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker in its own process, on the test database."""
    from config.celery import app

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        env = child_env()
    app.control.purge()
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--hostname",
            f"test-worker-{os.getpid()}@%h",
        ],
        cwd=ROOT,
        env=env,
    )
    from host.tasks import ping

    # The first ping waits in the queue until the worker is up: that is the readiness signal.
    assert ping.delay().get(timeout=60) == "pong"
    _session_workers.append(worker)
    yield worker
    _session_workers.remove(worker)
    worker.terminate()
    worker.wait(timeout=30)


_session_workers: list[subprocess.Popen[bytes]] = []
_session_chat_workers: list[subprocess.Popen[bytes]] = []


def _transactional(request: pytest.FixtureRequest) -> bool:
    marker = request.node.get_closest_marker("django_db")
    return bool(marker and marker.kwargs.get("transaction")) or any(
        name in request.fixturenames for name in ("transactional_db", "live_server")
    )


@pytest.fixture(autouse=True)
def _queued_jobs_end_before_the_tables_are_emptied(
    request: pytest.FixtureRequest,
) -> Iterator[None]:
    """A job a transactional test queued (a sweep after a delete, an outbox delivery)
    ran in the session's worker while the teardown emptied the tables, and the two
    deadlocked. The worker runs its jobs in order: a ping answered means they ended."""
    transactional = _transactional(request)
    if transactional:
        request.getfixturevalue("_django_db_helper")  # torn down after this fixture
    if _session_chat_workers and (transactional or "chat_worker" in request.fixturenames):
        _chat_worker_consumes("chat_worker" in request.fixturenames)
    yield
    if transactional and _session_workers and _session_workers[0].poll() is None:
        from host.tasks import ping

        # Not when a job waits on purpose or the test took the broker away.
        with contextlib.suppress(Exception):
            ping.delay().get(timeout=60)
    chat_worker = _session_chat_workers[0] if _session_chat_workers else None
    if transactional and chat_worker and chat_worker.poll() is None and _chat_consuming[0]:
        with contextlib.suppress(Exception):
            _chat_worker_idle(_chat_worker_name(chat_worker))


def _chat_worker_name(worker: subprocess.Popen[bytes]) -> str:
    return str(worker.args[-1]).replace("%h", socket.gethostname())  # type: ignore[index]


def _chat_worker_queues() -> tuple[str, str]:
    return settings.CHAT_QUEUE, settings.DELIVERY_QUEUE


_chat_consuming = [True]


def _chat_worker_consumes(on: bool) -> None:
    """The session's chat worker takes jobs only in the tests that ask for it: a test
    that runs a turn itself found the worker (left from an earlier test in the same
    process) had taken the turn its commit queued, and used up its scripted reply."""
    if _chat_consuming[0] == on or _session_chat_workers[0].poll() is not None:
        return
    from config.celery import app

    destination = [_chat_worker_name(_session_chat_workers[0])]
    for queue in _chat_worker_queues():
        if on:
            # Jobs the tests in between queued name rows that are gone.
            with app.connection_for_write() as connection_:
                connection_.default_channel.queue_purge(queue)
            app.control.add_consumer(queue, destination=destination, reply=True, timeout=30)
        else:
            app.control.cancel_consumer(queue, destination=destination, reply=True, timeout=30)
    _chat_consuming[0] = on


def _chat_worker_idle(destination: str) -> None:
    """The chat worker (threads) took an outbox delivery a transactional test queued and
    deadlocked the flush. A ping on each of its queues answered means it has received
    every earlier job; then wait, bounded, until none is running."""
    from config.celery import app

    for queue in _chat_worker_queues():
        app.send_task("memory_addon.ping", queue=queue).get(timeout=60)
    idle = threading.Event()
    for _ in range(300):
        replies = app.control.inspect(destination=[destination], timeout=5).active() or {}
        if not any(replies.values()):
            return
        idle.wait(0.1)


class LiveServer:
    def __init__(self, url: str) -> None:
        self.url = url

    def __str__(self) -> str:
        return self.url


@pytest.fixture(scope="session")
def live_asgi_server(django_db_setup: None) -> Iterator[LiveServer]:
    """The real ASGI app (HTTP + websockets) under uvicorn, in this process."""
    import uvicorn

    from config.asgi import application

    port = free_port()
    config = uvicorn.Config(
        application,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        ws="websockets-sansio",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = threading.Event()
    for _ in range(600):
        if server.started:
            started.set()
            break
        started.wait(0.05)
    assert server.started, "uvicorn did not start"
    yield LiveServer(f"http://127.0.0.1:{port}")
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    executable = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: object, live_asgi_server: LiveServer) -> Iterator[object]:
    context = browser.new_context(base_url=live_asgi_server.url)  # type: ignore[attr-defined]
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


SCREENSHOTS = ROOT / "tests" / "screenshots"


@pytest.fixture
def screenshot(page: object, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Save a picture of the page for a person to look at (not committed)."""

    def take(name: str) -> Path:
        SCREENSHOTS.mkdir(exist_ok=True)
        path = SCREENSHOTS / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
        return path

    return take


@pytest.fixture
def user(db: None) -> object:
    return UserFactory()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Playwright's sync API leaves an event loop running in the main thread for the
    # rest of the session, which breaks async_to_sync in later tests: browsers go last.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
    if config.pluginmanager.hasplugin("xdist"):
        _group_by_file_for_xdist(items)


def _group_by_file_for_xdist(items: list[pytest.Item]) -> None:
    """`make test` runs `--dist loadgroup`: a file's tests stay on one worker (its
    module fixtures are made once), and a file's browser tests are a group of their own,
    sent after every other group so that each worker still runs its browsers last."""
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        browser = item.get_closest_marker("browser") is not None
        item.add_marker(pytest.mark.xdist_group(f"{path}[browser]" if browser else path))


@pytest.fixture
def sign_in(page, live_asgi_server):
    """Put a signed-in session for `user` into the browser, without the form."""
    from django.test import Client

    def as_user(user):
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME]
        page.context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": cookie.value,
                    "url": live_asgi_server.url,
                }
            ]
        )
        return page

    return as_user


def wait_until_live(page) -> None:
    """Block until the page's live-events socket is open."""
    page.locator("body[data-live=connected]").wait_for(state="attached")


def submit_and_load(page, button) -> None:
    """Click a plain form's button and wait for the page it leads to, live again: until
    then the old page still takes live pushes, so what a test waits for can show up
    there, and what it does next is lost with the old page when the new one arrives."""
    with page.expect_navigation():
        button.click()
    wait_until_live(page)


def off_loop(fn, *args, **kwargs):
    """Run sync code that pushes live events from a thread without Playwright's event loop."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connections

    def call():
        try:
            return fn(*args, **kwargs)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result()


@pytest.fixture
def fake_openai():
    from tests.fake_openai import FakeOpenAI

    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="session", autouse=True)
def fresh_cache() -> None:
    """Marks in the Redis cache (rate limits, queued refreshes) belong to the rows of an
    earlier run's database, whose ids this run's fresh database starts over."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(scope="session", autouse=True)
def minilm_folder():
    """The packaged all-MiniLM-L6-v2 as a local fastembed folder (EMBEDDING_MODEL_PATH)."""
    from host.local_model import assemble_minilm

    return assemble_minilm(Path(settings.EMBEDDING_MODEL_PATH))


def start_chat_worker(**env: str) -> subprocess.Popen[bytes]:
    from config.celery import app

    app.control.purge()
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            # One worker of the suite stands in for serve's chat and delivery workers.
            f"{settings.CHAT_QUEUE},{settings.DELIVERY_QUEUE}",
            "--pool",
            "threads",
            "--concurrency",
            "4",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--hostname",
            f"test-chat-worker-{os.getpid()}-{len(env)}@%h",
        ],
        cwd=ROOT,
        env=child_env(**env),
    )


def wait_for_worker(worker: subprocess.Popen[bytes]) -> None:
    from config.celery import app

    # A ping on the chat queue is answered only once the chat worker consumes it.
    result = app.send_task("memory_addon.ping", queue=settings.CHAT_QUEUE)
    assert result.get(timeout=60) == "pong"
    assert worker.poll() is None


@pytest.fixture(scope="session")
def chat_worker(django_db_setup, django_db_blocker) -> Iterator[subprocess.Popen[bytes]]:
    """A real chat worker (threads pool, chat queue only) on the test database."""
    with django_db_blocker.unblock():
        worker = start_chat_worker()
    wait_for_worker(worker)
    _session_chat_workers.append(worker)
    _chat_consuming[0] = True
    yield worker
    _session_chat_workers.remove(worker)
    worker.terminate()
    worker.wait(timeout=30)


@pytest.fixture
def hostile_server(request: pytest.FixtureRequest) -> Iterator[HostileServer]:
    """A raw-socket server that misbehaves as its mode says (indirect parameter)."""
    server = HostileServer(request.param).start()
    yield server
    server.stop()


@pytest.fixture
def slow_headers() -> Iterator[HostileServer]:
    """A server that sends its headers a byte at a time."""
    server = HostileServer("slow_headers").start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _language_reset() -> Iterator[None]:
    """A test request in German leaves German active in this thread (the locale middleware
    activates per request and never deactivates); the next test starts in the default."""
    yield
    from django.utils import translation

    translation.deactivate()


class Api:
    """JSON calls against the real API through Django's test client."""

    def __init__(self, client) -> None:
        self.client = client

    def _call(self, method: str, url: str, body=None):
        kwargs = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        return getattr(self.client, method)(url, **kwargs)

    def get(self, url):
        return self._call("get", url)

    def post(self, url, body=None):
        return self._call("post", url, body if body is not None else {})

    def put(self, url, body):
        return self._call("put", url, body)

    def delete(self, url):
        return self._call("delete", url)


@pytest.fixture
def api(client, user):
    client.force_login(user)
    return Api(client)


@pytest.fixture
def scope(user):
    from memory_addon.services.scopes import ensure_user_scope

    return ensure_user_scope(user)


@pytest.fixture
def turn(user):
    from memory_addon.turns import Turn

    return Turn(user=user, conversation_ref="conv-1", message_ref="msg-1", reply_ref_trusted=True)


@pytest.fixture
def binding(user):
    from accounts.services import messaging_binding_create

    binding, _ = messaging_binding_create(owner=user, bridge="telegram", external_id="chat-42")
    return binding
