"""Scan statuses and skip reasons in the person's language.

The scanner (knowledge.core, no Django) stores them in English in the job's review;
they are translated where they are shown.
"""

from __future__ import annotations

import re

from django import template
from django.utils.translation import gettext_noop, pgettext_lazy

from host.stored_text import Render, filled, translate_stored

register = template.Library()

_STATUSES = {
    "new": pgettext_lazy("scan status", "new"),
    "changed": pgettext_lazy("scan status", "changed"),
    "unchanged": pgettext_lazy("scan status", "unchanged"),
    "skipped": pgettext_lazy("scan status", "skipped"),
    "deleted": pgettext_lazy("scan status", "deleted"),
}

# Reasons the scanner and the index job store word for word (gettext_noop marks them for
# the catalogue; they are translated when shown).
_FIXED = frozenset(
    (
        gettext_noop("symbolic link (not followed)"),
        gettext_noop("binary content (NUL bytes)"),
        gettext_noop("binary content (control characters)"),
        gettext_noop("ignored by .gitignore"),
        gettext_noop("excluded by a pattern"),
        gettext_noop("format not supported"),
        gettext_noop("not matched by the include patterns"),
        gettext_noop("the scan reached 500 MiB of accepted files"),
        gettext_noop("not a regular file"),
        gettext_noop("the name is not valid UTF-8"),
        gettext_noop("removed from the collection"),
        gettext_noop("no longer in the source"),
        gettext_noop("changed since the review; run Update now to review it again"),
        gettext_noop("PDF could not be read (damaged, or too large to parse safely)"),
        gettext_noop("PDF has no extractable text (image-only or scanned)"),
    )
)

_PATTERNS: list[tuple[re.Pattern[str], Render]] = [
    (
        re.compile(r"larger than the limit of (?P<mib>\d+) MiB"),
        filled(gettext_noop("larger than the limit of %(mib)s MiB")),
    ),
    (
        re.compile(r"not valid UTF-8 \(byte (?P<byte>\d+)\)"),
        filled(gettext_noop("not valid UTF-8 (byte %(byte)s)")),
    ),
    (
        re.compile(r"cannot be read \((?P<why>.*)\)"),
        filled(gettext_noop("cannot be read (%(why)s)")),
    ),
    (
        re.compile(r"already in this collection as (?P<path>.*)"),
        filled(gettext_noop("already in this collection as %(path)s")),
    ),
    (
        re.compile(r"PDF took longer than (?P<seconds>\d+) s to read"),
        filled(gettext_noop("PDF took longer than %(seconds)s s to read")),
    ),
]


@register.filter
def scan_status(value: str) -> str:
    return str(_STATUSES.get(value, value))


@register.filter
def scan_reason(value: str) -> str:
    return translate_stored(value, _FIXED, _PATTERNS)
