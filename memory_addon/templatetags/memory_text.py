"""Change summaries, origins and sources in the person's language.

Services store a change set's summary in English (the API, outgoing events and the
audit keep one stable text); pages translate the host's own wordings where they are
shown. A summary the model wrote (a proposal's reason) is shown as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django import template
from django.utils.translation import gettext_lazy, gettext_noop, ngettext

from host.stored_text import Render, filled, translate_stored
from memory_addon.live import changed_notes
from memory_addon.models import ChangeSet, MemoryScope
from memory_addon.services.scopes import scope_folder

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
_PATTERNS: list[tuple[re.Pattern[str], Render]] = [
    (
        re.compile(r"Added a note to (?P<path>.+)"),
        filled(gettext_noop("Added a note to %(path)s")),
    ),
    (
        re.compile(r"Edited a note in (?P<path>.+)"),
        filled(gettext_noop("Edited a note in %(path)s")),
    ),
    (
        re.compile(r"Deleted a note in (?P<path>.+)"),
        filled(gettext_noop("Deleted a note in %(path)s")),
    ),
    (
        re.compile(r"Undid change set #(?P<n>\d+)"),
        filled(gettext_noop("Undid change set #%(n)s")),
    ),
    (
        re.compile(r"Undid change #(?P<n>\d+)"),
        filled(gettext_noop("Undid change #%(n)s")),
    ),
    (
        re.compile(r"Restored (?P<path>.+) from an export"),
        filled(gettext_noop("Restored %(path)s from an export")),
    ),
    (
        re.compile(r"Restored (?P<path>.+) as of change set #(?P<n>\d+)"),
        filled(gettext_noop("Restored %(path)s as of change set #%(n)s")),
    ),
    (
        re.compile(r"Renamed (?P<old>\S+) to (?P<new>\S+)"),
        filled(gettext_noop("Renamed %(old)s to %(new)s")),
    ),
    (
        re.compile(r"Inserted text into (?P<path>\S+)"),
        filled(gettext_noop("Inserted text into %(path)s")),
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
        filled(gettext_noop("Rule: %(text)s")),
    ),
    (re.compile(r"Edited (?P<path>\S+)"), filled(gettext_noop("Edited %(path)s"))),
    (re.compile(r"Deleted (?P<path>\S+)"), filled(gettext_noop("Deleted %(path)s"))),
    (re.compile(r"Wrote (?P<path>\S+)"), filled(gettext_noop("Wrote %(path)s"))),
    (re.compile(r"Cleared (?P<path>\S+)"), filled(gettext_noop("Cleared %(path)s"))),
]


@register.filter
def change_summary(value: str) -> str:
    """A change set's summary as the person reads it."""
    return translate_stored(value, _FIXED, _PATTERNS)


@register.filter
def saved_notes(change_set: ChangeSet) -> str:
    """The notes a change saved, as the person reads them: what "Saved to memory" names."""
    return "; ".join(changed_notes(change_set))


@register.filter
def scope_label(scope: MemoryScope) -> str:
    """Where a scope's notes live, as the Files page names it ("Memory", "Memory/agents/…")."""
    return scope_folder(scope)


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
