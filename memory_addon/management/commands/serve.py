"""Run the whole app: migrate, first admin, ASGI server, Celery worker and beat."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from accounts.services import first_admin_ensure

STOP_GRACE_SECONDS = 15


class Command(BaseCommand):
    help = "Migrate, make sure an admin exists, then serve the web app with a worker and beat."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument(
            "--worker-concurrency", type=int, default=int(os.environ.get("WORKER_CONCURRENCY", "2"))
        )
        parser.add_argument(
            "--chat-concurrency",
            type=int,
            default=settings.CHAT_WORKER_CONCURRENCY,
            help="Threads of the chat worker (CHAT_WORKER_CONCURRENCY).",
        )
        parser.add_argument("--no-worker", action="store_true", help="Serve the web app only.")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        self._announce_sign_in(options["host"], options["port"])

        # Children reach the servers this process started (or the external ones).
        env = {
            **os.environ,
            "DATABASE_URL": settings.DATABASE_URL,
            "REDIS_URL": settings.REDIS_URL,
            "DATA_DIR": str(settings.DATA_DIR),
            "DJANGO_SETTINGS_MODULE": os.environ.get(
                "DJANGO_SETTINGS_MODULE", "memory_addon.settings"
            ),
        }
        python = sys.executable
        commands = [
            [
                python,
                "-m",
                "uvicorn",
                "memory_addon.asgi:application",
                "--host",
                options["host"],
                "--port",
                str(options["port"]),
                "--no-access-log",
                "--ws",
                "websockets-sansio",
            ],
        ]
        if not options["no_worker"]:
            commands += [
                [
                    python,
                    "-m",
                    "celery",
                    "-A",
                    "memory_addon",
                    "worker",
                    "--concurrency",
                    str(options["worker_concurrency"]),
                    "--loglevel",
                    "INFO",
                    "--without-gossip",
                    "--without-mingle",
                ],
                # Chat turns wait on the model: their own queue and a thread pool, so
                # they never wait behind indexing jobs or each other.
                [
                    python,
                    "-m",
                    "celery",
                    "-A",
                    "memory_addon",
                    "worker",
                    "-Q",
                    settings.CHAT_QUEUE,
                    "--pool",
                    "threads",
                    "--concurrency",
                    str(options["chat_concurrency"]),
                    "--hostname",
                    "chat@%h",
                    "--loglevel",
                    "INFO",
                    "--without-gossip",
                    "--without-mingle",
                ],
                [
                    python,
                    "-m",
                    "celery",
                    "-A",
                    "memory_addon",
                    "beat",
                    "--loglevel",
                    "INFO",
                    "--schedule",
                    str(Path(settings.DATA_DIR) / "celerybeat-schedule"),
                ],
            ]
        # A chat turn may hold two connections at once (its thread and its live-update
        # thread), so the chat worker's pool grows with its threads.
        chat_pool = str(max(10, 2 * options["chat_concurrency"] + 2))
        children = [
            # New session: the children do not see the terminal's Ctrl-C themselves,
            # so this process stops them in order and waits for each.
            subprocess.Popen(  # noqa: S603
                command,
                env={**env, "DATABASE_POOL_MAX": chat_pool} if "chat@%h" in command else env,
                start_new_session=True,
            )
            for command in commands
        ]
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        exit_code = 0
        while not stopping:
            for child in children:
                if child.poll() is not None:
                    self.stderr.write(f"A child process exited with {child.returncode}; stopping.")
                    stopping, exit_code = True, 1
            time.sleep(0.5)
        self.stdout.write("Stopping…")
        self._stop(children)
        if exit_code:
            sys.exit(exit_code)

    def _stop(self, children: list[subprocess.Popen[bytes]]) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

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
