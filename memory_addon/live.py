"""What a memory change looks like on the person's open pages.

A notice that says what was saved and where ("Saved to memory: lang: answers in
Italian · Memory"), and the Memory tab's parts for the changed scope (its entries,
budget and caps), each an htmx fragment carrying its element id. Rendered after
commit, so they show the files as stored.
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string
from django.utils.translation import gettext

from accounts.models import User
from memory_addon.core.entries import MAX_ENTRY_CHARS
from memory_addon.core.readable_diff import readable_diff
from memory_addon.models import ChangeSet, MemoryScope
from memory_addon.pages import scope_page
from memory_addon.services.policy import policy_for
from memory_addon.services.scopes import index_path, scope_folder

NOTICE_NOTES = 3  # notes named in a notice; more are counted
NOTE_CHARS = 120


def _headline(origin: str) -> tuple[str, str]:
    """The notice's first words and the key the page translates them by."""
    if origin in (ChangeSet.Origin.AUTOMATIC, ChangeSet.Origin.ASSISTANT):
        return "saved", gettext("Saved to memory")
    if origin == ChangeSet.Origin.UNDO:
        return "undone", gettext("Change undone")
    if origin == ChangeSet.Origin.RESTORE:
        return "restored", gettext("Version restored")
    return "person", gettext("Memory saved")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…"


def changed_notes(change_set: ChangeSet) -> list[str]:
    """The notes a change added, changed or removed, as a person reads them (no fences)."""
    notes: list[str] = []
    for change in change_set.changes.all():
        if change.path != index_path(change_set.scope):
            notes.append(change.path)
            continue
        for row in readable_diff(change.before or "", change.after or ""):
            if row.kind != "same":
                notes.append(_short(row.text.removeprefix("- ").removeprefix("* ")))
    return notes


def notice_context(change_set: ChangeSet) -> dict[str, Any]:
    notes = changed_notes(change_set)
    key, headline = _headline(change_set.origin)
    return {
        "change_set": change_set,
        "headline": headline,
        "headline_key": key,
        "notes": notes[:NOTICE_NOTES],
        "more": max(0, len(notes) - NOTICE_NOTES),
        "where": scope_folder(change_set.scope),
        # Saved without asking: the way back sits right in the notice.
        "undo": change_set.origin == ChangeSet.Origin.AUTOMATIC,
    }


def memory_tab_fragments(user: User, scope: MemoryScope) -> str:
    """The scope's entries, budget and caps, for every open Memory tab showing it."""
    page = scope_page(user, scope, policy_for(user))
    context = {
        "page": page,
        "base_sha256": page.index.sha256 if page.index else "",
        "max_entry_chars": MAX_ENTRY_CHARS,
        "oob": True,
    }
    return render_to_string("memory/tab.html#capacity", context) + render_to_string(
        "memory/tab.html#entries", context
    )


def memory_change_fragments(change_set_id: int) -> tuple[int, str]:
    """The person to tell and what their pages show of one change set ("" when it is gone)."""
    change_set = (
        ChangeSet.objects.select_related("scope__agent", "scope__binding", "user")
        .filter(pk=change_set_id)
        .first()
    )
    if change_set is None:
        return 0, ""
    html: str = render_to_string(
        "memory/_live_notice.html", {**notice_context(change_set), "oob": True}
    )
    scope = change_set.scope
    # The Memory tab shows the person's own scopes; banks have their own screen.
    if scope.kind != MemoryScope.Kind.PROJECT and scope.owner_id == change_set.user_id:
        html += memory_tab_fragments(change_set.user, scope)
    return change_set.user_id, html
