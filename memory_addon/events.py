"""The memory add-on's live updates: what its changes look like on the person's open pages.

Listeners of memory_addon/signals.py, connected when the app is ready.
"""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver
from django.template.loader import render_to_string
from django.utils.html import format_html

from host.push import push_fragment
from memory_addon.live import memory_change_fragments
from memory_addon.models import Proposal
from memory_addon.selectors import proposals_with_diffs
from memory_addon.signals import memory_changed, proposal_added, proposal_removed, proposals_counted


@receiver(memory_changed, dispatch_uid="memory-live-change")
def push_memory_change(sender: Any, *, user_id: int, change_set_id: int, **_: Any) -> None:
    """Tell the person's open pages what changed and where, and refresh their Memory tab.

    Rendered from the stored change set after commit, and only for a page that is open:
    `user_id` is the change set's person, so nothing is read before the push knows
    someone listens (a change set gone by then renders nothing, and nothing is sent).
    """
    # Rendered in each site language (its capacity lines and banners are words, too).
    push_fragment(user_id, lambda: memory_change_fragments(change_set_id)[1])


@receiver(proposals_counted, dispatch_uid="memory-live-inbox-count")
def push_inbox_count(sender: Any, *, user_id: int, pending_count: int, **_: Any) -> None:
    """Update the inbox count in the navigation of every open page."""
    html = format_html(
        '<span id="inbox-count" class="badge" hx-swap-oob="true">{}</span>',
        pending_count or "",
    )
    push_fragment(user_id, str(html))


@receiver(proposal_added, dispatch_uid="memory-live-proposal-added")
def push_proposal_card(sender: Any, *, user_id: int, proposal_id: int, **_: Any) -> None:
    """Put the new proposal's card at the top of every open inbox of the person."""
    proposal = Proposal.objects.select_related("scope__agent", "scope__binding").filter(
        pk=proposal_id, state=Proposal.State.PENDING
    )
    rows = proposals_with_diffs(list(proposal))
    if not rows:
        return

    def card() -> str:
        html = render_to_string("memory/_proposal_card.html", {"proposal": rows[0]})
        # The ws extension swaps this out of band: the card goes first in the list.
        return f'<div hx-swap-oob="afterbegin:#proposal-list">{html}</div>'

    push_fragment(user_id, card)


@receiver(proposal_removed, dispatch_uid="memory-live-proposal-removed")
def push_proposal_removed(sender: Any, *, user_id: int, proposal_id: int, **_: Any) -> None:
    push_fragment(
        user_id, f'<article id="proposal-{int(proposal_id)}" hx-swap-oob="delete"></article>'
    )
