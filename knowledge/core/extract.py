"""Text extraction: strict UTF-8 for text files, pypdf in a bounded child process for PDFs."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
from dataclasses import dataclass

from host.core.storable import UNSTORABLE

PDF_TIMEOUT_SECONDS = 60
PDF_MEMORY_BYTES = 1024 * 1024 * 1024
# Control characters other than tab, line feed, form feed and carriage return: one
# regular-expression search in C instead of a Python loop over every character (a
# per-character `any()` was the largest cost of keyword-only indexing).
_DISALLOWED_CONTROLS = re.compile("[\x00-\x08\x0b\x0e-\x1f]")
# Terminal colour and cursor codes (ECMA-48: CSI "ESC [ ... final", OSC "ESC ] ... BEL",
# other escapes "ESC intermediates final") in notes and logs copied from a terminal: the
# file is text, the codes are noise for search and for the model, so they go.
_ANSI_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[!-/]*[0-~]"
)


class Unreadable(Exception):
    """A file that cannot be indexed; the message says why, for the review table."""


@dataclass(frozen=True)
class Page:
    number: int | None  # 1-based PDF page, None for text files
    text: str


def text_from_bytes(data: bytes) -> str:
    if b"\x00" in data:
        raise Unreadable("binary content (NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Unreadable(f"not valid UTF-8 (byte {error.start})") from None
    text = text.removeprefix("\ufeff")
    if "\x1b" in text:
        text = _ANSI_ESCAPE.sub("", text)
    if _DISALLOWED_CONTROLS.search(text):
        raise Unreadable("binary content (control characters)")
    return text


def _limit_child() -> None:  # pragma: no cover - runs in the child process
    resource.setrlimit(resource.RLIMIT_AS, (PDF_MEMORY_BYTES, PDF_MEMORY_BYTES))


def pdf_pages(data: bytes, *, max_chars: int) -> list[Page]:
    """Extract PDF text in a child process with a time and memory bound.

    The child gets the bytes on stdin, never a path: it reads exactly what the
    caller read (and hashed) through a verified handle.
    """
    try:
        result = subprocess.run(  # noqa: S603 - our own module, a number argument
            [sys.executable, "-m", "knowledge.core.pdf_child", str(max_chars)],
            input=data,
            capture_output=True,
            timeout=PDF_TIMEOUT_SECONDS,
            preexec_fn=_limit_child,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise Unreadable(f"PDF took longer than {PDF_TIMEOUT_SECONDS} s to read") from None
    if result.returncode != 0:
        raise Unreadable("PDF could not be read (damaged, or too large to parse safely)")
    try:
        payload = json.loads(result.stdout)
        if payload.get("error"):
            raise Unreadable(str(payload["error"]))
        pages = [Page(int(number), str(text)) for number, text in payload["pages"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise Unreadable("PDF could not be read (its reader gave no usable answer)") from None
    if not any(page.text.strip() for page in pages):
        raise Unreadable("PDF has no extractable text (image-only or scanned)")
    return storable_pages(pages)


def storable_pages(pages: list[Page]) -> list[Page]:
    """The pages, if PostgreSQL can store their text: it refuses NUL, and UTF-8 cannot
    encode a lone surrogate. Such a file is skipped with this reason, so the rest of its
    source is indexed (one unstorable chunk would fail the whole job's insert)."""
    for page in pages:
        if UNSTORABLE.search(page.text):
            where = f" on page {page.number}" if page.number else ""
            raise Unreadable(
                f"its text holds a NUL byte or a broken character{where}, which cannot be stored"
            )
    return pages
