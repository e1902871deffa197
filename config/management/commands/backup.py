"""Dump the database with pg_dump into a backup folder, keeping the newest N dumps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from host.backups import (
    BackupFailed,
    backup_create,
    backups_prune,
    default_backup_path,
)


class Command(BaseCommand):
    help = "Back up the whole database with pg_dump (custom format; restore with `restore`)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", help="File to write (default: a dated file in --folder).")
        parser.add_argument("--folder", default=str(settings.BACKUP_DIR))
        parser.add_argument(
            "--keep",
            type=int,
            default=settings.BACKUP_KEEP,
            help="Dated dumps to keep in --folder; older ones are deleted (BACKUP_KEEP).",
        )
        parser.add_argument("--database-url", help="Back up this database instead.")
        parser.add_argument("--timeout", type=float, default=3600)

    def handle(self, *args: Any, **options: Any) -> None:
        folder = Path(options["folder"])
        output = Path(options["output"]) if options["output"] else default_backup_path(folder)
        try:
            path = backup_create(
                output=output, database_url=options["database_url"], timeout=options["timeout"]
            )
        except BackupFailed as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Backup written to {path} ({path.stat().st_size} bytes).")
        if not options["output"]:
            for removed in backups_prune(folder=folder, keep=options["keep"]):
                self.stdout.write(f"Removed the old backup {removed}.")
