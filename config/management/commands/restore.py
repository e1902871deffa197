"""Restore a `backup` dump with pg_restore onto a fresh database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from host.backups import BackupFailed, backup_restore


class Command(BaseCommand):
    help = "Restore a dump written by `backup` into an empty database (pg_restore)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dump", help="The .dump file written by `manage.py backup`.")
        parser.add_argument("--database-url", help="Restore into this database instead.")
        parser.add_argument(
            "--clean",
            action="store_true",
            help="Drop what the database holds first (replaces everything in it).",
        )
        parser.add_argument("--timeout", type=float, default=3600)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            backup_restore(
                dump=Path(options["dump"]),
                database_url=options["database_url"],
                clean=options["clean"],
                timeout=options["timeout"],
            )
        except BackupFailed as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Restored {options['dump']}.")
