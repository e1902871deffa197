from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from host.local_model import assemble_minilm, default_model_folder


class Command(BaseCommand):
    help = "Build an offline all-MiniLM-L6-v2 folder for fastembed from packaged files."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--target", default=str(default_model_folder()))

    def handle(self, *args: Any, **options: Any) -> None:
        folder = assemble_minilm(Path(options["target"]))
        self.stdout.write(f"Model folder ready: {folder}\nSet EMBEDDING_MODEL_PATH={folder}")
