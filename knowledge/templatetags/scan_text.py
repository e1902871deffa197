"""Scan statuses and skip reasons in the person's language.

The scanner (knowledge.core, no Django) stores them in English in the job's review;
they are translated where they are shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django import template
from django.utils.translation import gettext, pgettext

register = template.Library()

_STATUSES = {
    "new": lambda: pgettext("scan status", "new"),
    "changed": lambda: pgettext("scan status", "changed"),
    "unchanged": lambda: pgettext("scan status", "unchanged"),
    "skipped": lambda: pgettext("scan status", "skipped"),
    "deleted": lambda: pgettext("scan status", "deleted"),
}

_FIXED = {
    "symbolic link (not followed)": lambda: gettext("symbolic link (not followed)"),
    "binary content (NUL bytes)": lambda: gettext("binary content (NUL bytes)"),
    "binary content (control characters)": lambda: gettext("binary content (control characters)"),
    "ignored by .gitignore": lambda: gettext("ignored by .gitignore"),
    "excluded by a pattern": lambda: gettext("excluded by a pattern"),
    "format not supported": lambda: gettext("format not supported"),
    "not matched by the include patterns": lambda: gettext("not matched by the include patterns"),
    "the scan reached 500 MiB of accepted files": lambda: gettext(
        "the scan reached 500 MiB of accepted files"
    ),
    "not a regular file": lambda: gettext("not a regular file"),
    "removed from the collection": lambda: gettext("removed from the collection"),
    "no longer in the source": lambda: gettext("no longer in the source"),
    "changed since the review; run Update now to review it again": lambda: gettext(
        "changed since the review; run Update now to review it again"
    ),
    "PDF could not be read (damaged, or too large to parse safely)": lambda: gettext(
        "PDF could not be read (damaged, or too large to parse safely)"
    ),
    "PDF has no extractable text (image-only or scanned)": lambda: gettext(
        "PDF has no extractable text (image-only or scanned)"
    ),
}

_PATTERNS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (
        re.compile(r"larger than the limit of (?P<mib>\d+) MiB"),
        lambda m: gettext("larger than the limit of %(mib)s MiB") % m.groupdict(),
    ),
    (
        re.compile(r"not valid UTF-8 \(byte (?P<byte>\d+)\)"),
        lambda m: gettext("not valid UTF-8 (byte %(byte)s)") % m.groupdict(),
    ),
    (
        re.compile(r"cannot be read \((?P<why>.*)\)"),
        lambda m: gettext("cannot be read (%(why)s)") % m.groupdict(),
    ),
    (
        re.compile(r"already in this collection as (?P<path>.*)"),
        lambda m: gettext("already in this collection as %(path)s") % m.groupdict(),
    ),
    (
        re.compile(r"PDF took longer than (?P<seconds>\d+) s to read"),
        lambda m: gettext("PDF took longer than %(seconds)s s to read") % m.groupdict(),
    ),
]


@register.filter
def scan_status(value: str) -> str:
    translate = _STATUSES.get(value)
    return translate() if translate else value


@register.filter
def scan_reason(value: str) -> str:
    translate = _FIXED.get(value)
    if translate:
        return translate()
    for pattern, render in _PATTERNS:
        match = pattern.fullmatch(value or "")
        if match:
            return str(render(match))
    return value
