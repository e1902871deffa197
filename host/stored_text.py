"""Texts the host stores in English (for the API, events and the audit), shown in the
person's language: fixed wordings, and wordings with values matched by a pattern."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from django.utils.translation import gettext

Render = Callable[[re.Match[str]], str]


def filled(template: str) -> Render:
    """Translate `template` (marked with gettext_noop) and fill in the matched values."""
    return lambda match: gettext(template) % match.groupdict()


def translate_stored(
    value: str, fixed: Collection[str], patterns: Sequence[tuple[re.Pattern[str], Render]]
) -> str:
    """The first pattern that matches the whole text wins; anything else is shown as stored."""
    if value in fixed:
        return gettext(value)
    for pattern, render in patterns:
        match = pattern.fullmatch(value or "")
        if match:
            return str(render(match))
    return value
