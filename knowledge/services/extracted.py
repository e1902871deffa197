"""PDF text a scan extracted, kept by content hash for the index job that follows."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from django.conf import settings

from knowledge.core.extract import Page

logger = logging.getLogger(__name__)


# PDF text the scan extracted, kept by content hash for the index job (read once, then
# removed), so a PDF is extracted once. Left-overs of dismissed scans expire.
EXTRACTED_KEEP_SECONDS = 24 * 3600


def _extracted_folder() -> Path:
    return Path(settings.DATA_DIR) / "extracted"


def _keep_pages(digest: str, pages: list[Page]) -> None:
    folder = _extracted_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{digest}.json.{os.getpid()}.part"
        partial.write_text(json.dumps([[page.number, page.text] for page in pages]))
        partial.replace(folder / f"{digest}.json")
    except OSError:
        logger.warning("Could not keep the text of %s; the index extracts it again", digest)


def _kept_pages(digest: str) -> list[Page] | None:
    """The pages the scan extracted from the file with this hash (and forget them)."""
    path = _extracted_folder() / f"{digest}.json"
    try:
        data = json.loads(path.read_text())
        path.unlink()
    except (OSError, ValueError):
        return None
    return [Page(number, text) for number, text in data]


def _expire_kept_pages() -> None:
    cutoff = time.time() - EXTRACTED_KEEP_SECONDS
    try:
        for entry in os.scandir(_extracted_folder()):
            if entry.stat().st_mtime < cutoff:
                Path(entry.path).unlink(missing_ok=True)
    except OSError:
        return
