"""Change summaries, origins and sources in the person's language.

Services store a change set's summary in English (the API, outgoing events and the
audit keep one stable text); pages translate the host's own wordings where they are
shown. A summary the model wrote (a proposal's reason) is shown as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django import template
from django.utils.translation import gettext, gettext_lazy, gettext_noop, ngettext

from memory_addon.models import ChangeSet

register = template.Library()

_FIXED = frozenset(
    (
        gettext_noop("Added a note"),
        gettext_noop("Replaced a note"),
        gettext_noop("Removed a note"),
        gettext_noop("Clean-up: merged machine entries"),
        gettext_noop("Clean-up: shortened text"),
    )
)


def _entries(verb: str) -> Callable[[re.Match[str]], str]:
    def render(match: re.Match[str]) -> str:
        count = int(match["count"])
        if verb == "archived":
            text = ngettext(
                "Clean-up: archived %(count)s entry", "Clean-up: archived %(count)s entries", count
            )
        elif verb == "restored":
            text = ngettext(
                "Clean-up: restored %(count)s archived entry",
                "Clean-up: restored %(count)s archived entries",
                count,
            )
        else:
            text = ngettext(
                "Clean-up: deleted %(count)s archived entry",
                "Clean-up: deleted %(count)s archived entries",
                count,
            )
        return text % {"count": count}

    return render


# Most specific first: "Edited a note in x.md" before "Edited x.md".
_PATTERNS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (
        re.compile(r"Added a note to (?P<path>.+)"),
        lambda m: gettext("Added a note to %(path)s") % m.groupdict(),
    ),
    (
        re.compile(r"Edited a note in (?P<path>.+)"),
        lambda m: gettext("Edited a note in %(path)s") % m.groupdict(),
    ),
    (
        re.compile(r"Deleted a note in (?P<path>.+)"),
        lambda m: gettext("Deleted a note in %(path)s") % m.groupdict(),
    ),
    (
        re.compile(r"Undid change set #(?P<n>\d+)"),
        lambda m: gettext("Undid change set #%(n)s") % m.groupdict(),
    ),
    (
        re.compile(r"Undid change #(?P<n>\d+)"),
        lambda m: gettext("Undid change #%(n)s") % m.groupdict(),
    ),
    (
        re.compile(r"Restored (?P<path>.+) from an export"),
        lambda m: gettext("Restored %(path)s from an export") % m.groupdict(),
    ),
    (
        re.compile(r"Restored (?P<path>.+) as of change set #(?P<n>\d+)"),
        lambda m: gettext("Restored %(path)s as of change set #%(n)s") % m.groupdict(),
    ),
    (
        re.compile(r"Renamed (?P<old>\S+) to (?P<new>\S+)"),
        lambda m: gettext("Renamed %(old)s to %(new)s") % m.groupdict(),
    ),
    (
        re.compile(r"Inserted text into (?P<path>\S+)"),
        lambda m: gettext("Inserted text into %(path)s") % m.groupdict(),
    ),
    (re.compile(r"Clean-up: archived (?P<count>\d+) entr(?:y|ies)"), _entries("archived")),
    (
        re.compile(r"Clean-up: restored (?P<count>\d+) archived entr(?:y|ies)"),
        _entries("restored"),
    ),
    (
        re.compile(r"Clean-up: deleted (?P<count>\d+) archived entr(?:y|ies)"),
        _entries("deleted"),
    ),
    (
        re.compile(r"Rule: (?P<text>.+)", re.DOTALL),
        lambda m: gettext("Rule: %(text)s") % m.groupdict(),
    ),
    (re.compile(r"Edited (?P<path>\S+)"), lambda m: gettext("Edited %(path)s") % m.groupdict()),
    (re.compile(r"Deleted (?P<path>\S+)"), lambda m: gettext("Deleted %(path)s") % m.groupdict()),
    (re.compile(r"Wrote (?P<path>\S+)"), lambda m: gettext("Wrote %(path)s") % m.groupdict()),
    (re.compile(r"Cleared (?P<path>\S+)"), lambda m: gettext("Cleared %(path)s") % m.groupdict()),
]


@register.filter
def change_summary(value: str) -> str:
    """A change set's summary as the person reads it."""
    if value in _FIXED:
        return gettext(value)
    for pattern, render in _PATTERNS:
        match = pattern.fullmatch(value or "")
        if match:
            return str(render(match))
    return value


@register.filter
def change_origin(value: str) -> str:
    """A ChangeSet.Origin value as its label."""
    return str(dict(ChangeSet.Origin.choices).get(value, value))


@register.filter
def change_source(value: str) -> str:
    """A ChangeSet.Source value as its label."""
    return str(dict(ChangeSet.Source.choices).get(value, value))


# Where a sent memory item came from (the turn context's origins), as the chat shows it.
_SENT_ORIGINS = {
    "organization": gettext_lazy("Organization rules"),
    "agent": gettext_lazy("Agent memory"),
    "conversation": gettext_lazy("Conversation memory"),
    "user": gettext_lazy("My memory"),
}


@register.filter
def sent_origin(value: str) -> str:
    """A Sent along item's origin as its label."""
    return str(_SENT_ORIGINS.get(value, value))
