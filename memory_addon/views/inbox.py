"""The Inbox: proposals waiting for the person, one at a time or all at once."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from accounts.auth import signed_in_user
from host.core.ids import row_ids
from host.errors import Refusal
from host.htmx import HtmxHttpRequest
from memory_addon.core.entries import MAX_ENTRY_CHARS
from memory_addon.models import ChangeSet
from memory_addon.pages import banners_for, inbox_sections
from memory_addon.selectors import pending_proposals, proposal_for_user, proposals_with_diffs
from memory_addon.services.changes import change_sets_undo
from memory_addon.services.proposals import (
    decision_of,
    proposal_confirm,
    proposal_reject,
    proposals_decide_all,
    proposals_reopen,
)


@login_required
@require_GET
def inbox_page(request: HtmxHttpRequest) -> HttpResponse:
    return _inbox_render(request, {})


def _inbox_render(request: HtmxHttpRequest, extra: dict[str, Any]) -> HttpResponse:
    """The Inbox, or only its body (notice, bulk buttons, cards) for an htmx request."""
    user = signed_in_user(request)
    context = {
        "proposals": proposals_with_diffs(pending_proposals(user)),
        "max_entry_chars": MAX_ENTRY_CHARS,
        "banners": banners_for(user),
        "sections": [] if request.method == "POST" else inbox_sections(request, user),
        **extra,
    }
    # Only the bulk buttons swap the body; an htmx GET (a page catching up after its
    # socket dropped) takes the whole page.
    partial = request.method == "POST" and bool(request.htmx)
    template = "memory/inbox.html#inbox_body" if partial else "memory/inbox.html"
    return render(request, template, context)


def _posted_ids(request: HttpRequest, name: str) -> list[int]:
    return row_ids(request.POST.getlist(name))


@login_required
@require_POST
def inbox_decide_all(request: HtmxHttpRequest) -> HttpResponse:
    """Confirm all / Reject all: the cards the page showed, as one step with one Undo."""
    user = signed_in_user(request)
    decision = request.POST.get("decision", "")
    if decision not in ("confirm", "reject"):
        return HttpResponse(_("Choose Confirm all or Reject all."), status=400)
    result = proposals_decide_all(
        user=user,
        proposal_ids=_posted_ids(request, "proposal"),
        decision="confirm" if decision == "confirm" else "reject",
    )
    count = len(result.decided)
    if result.decision == "confirm":
        text = ngettext(
            "Saved %(count)s note to memory.", "Saved %(count)s notes to memory.", count
        ) % {"count": count}
    else:
        text = ngettext(
            "Rejected %(count)s proposal; nothing was saved.",
            "Rejected %(count)s proposals; nothing was saved.",
            count,
        ) % {"count": count}
    notice = {
        "text": text,
        "decision": result.decision,
        "change_sets": [change_set.pk for change_set in result.change_sets],
        "proposals": [proposal.pk for proposal in result.decided],
        "refused": result.refused,
    }
    return _inbox_render(request, {"bulk": notice})


@login_required
@require_POST
def inbox_undo_all(request: HtmxHttpRequest) -> HttpResponse:
    """Undo of a Confirm all (its change sets, together) or a Reject all (they wait again)."""
    user = signed_in_user(request)
    error = ""
    if request.POST.get("decision") == "reject":
        reopened = proposals_reopen(user=user, proposal_ids=_posted_ids(request, "proposal"))
        text = ngettext(
            "Undone: %(count)s proposal waits again.",
            "Undone: %(count)s proposals wait again.",
            len(reopened),
        ) % {"count": len(reopened)}
    else:
        change_sets = list(
            ChangeSet.objects.select_related("scope").filter(
                pk__in=_posted_ids(request, "change_set"), user=user
            )
        )
        try:
            undone = change_sets_undo(
                user=user, change_sets=change_sets, source=ChangeSet.Source.PAGE
            )
        except Refusal as refusal:
            error, text = refusal.message, ""
        else:
            text = ngettext(
                "Undone: %(count)s note is no longer saved.",
                "Undone: %(count)s notes are no longer saved.",
                len(undone),
            ) % {"count": len(undone)}
    return _inbox_render(request, {"bulk": {"text": text, "error": error, "undone": True}})


@login_required
@require_POST
def inbox_decide(request: HttpRequest, proposal_id: int, decision: str) -> HttpResponse:
    user = signed_in_user(request)
    proposal = proposal_for_user(user, proposal_id)
    try:
        if decision == "reject":
            proposal_reject(user=user, proposal=proposal)
            messages.success(request, _("Proposal rejected; nothing was saved."))
        else:
            edited = request.POST.get("text") if decision == "confirm-edited" else None
            chosen = decision_of(request.POST.get("decision"))
            proposal_confirm(user=user, proposal=proposal, edited_text=edited, decision=chosen)
            if chosen == "replace":
                messages.success(request, _("Saved to memory; the old note was replaced."))
            else:
                messages.success(request, _("Saved to memory."))
    except Refusal as refusal:
        messages.error(request, refusal.message)
    # The same card sits under a chat answer; it sends people back to where they were.
    back = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(back if back and safe else reverse("inbox"))
