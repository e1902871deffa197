"""The Inbox: proposals waiting for the person, one at a time or all at once."""

from __future__ import annotations

from typing import Any

from django.conf import settings
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
from host.errors import LimitExceeded, Refusal
from host.htmx import HtmxHttpRequest
from memory_addon.core.entries import MAX_ENTRY_CHARS
from memory_addon.core.imports import KINDS
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
from memory_addon.services.proposals.imports import import_kind_of, memory_import


@login_required
@require_GET
def inbox_page(request: HtmxHttpRequest) -> HttpResponse:
    return _inbox_render(request, {})


def _inbox_render(
    request: HtmxHttpRequest, extra: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """The Inbox, or only its body (notice, bulk buttons, cards) for an htmx request."""
    user = signed_in_user(request)
    context = {
        "proposals": proposals_with_diffs(pending_proposals(user)),
        "max_entry_chars": MAX_ENTRY_CHARS,
        "banners": banners_for(user),
        "sections": [] if request.method == "POST" else inbox_sections(request, user),
        "import_kinds": KINDS,
        "import_form": {"kind": "", "text": ""},
        "max_import_bytes": settings.MEMORY_IMPORT_MAX_BYTES,
        "max_import_items": settings.MEMORY_IMPORT_MAX_ITEMS,
        **extra,
    }
    # Only the bulk buttons swap the body; an htmx GET (a page catching up after its
    # socket dropped) takes the whole page.
    partial = request.method == "POST" and bool(request.htmx)
    template = "memory/inbox.html#inbox_body" if partial else "memory/inbox.html"
    return render(request, template, context, status=status)


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


def _import_form(request: HtmxHttpRequest, form: dict[str, str], error: str) -> HttpResponse:
    """The import form again, with what was chosen and the reason beside it."""
    context = {
        "import_form": form,
        "import_error": error,
        "import_kinds": KINDS,
        "max_import_bytes": settings.MEMORY_IMPORT_MAX_BYTES,
        "max_import_items": settings.MEMORY_IMPORT_MAX_ITEMS,
    }
    if request.htmx:
        # Swapped in place (htmx swaps only 2xx); a plain post gets the page and a 400.
        return render(request, "memory/inbox.html#import_form", context)
    return _inbox_render(request, context, status=400)


def _uploaded_text(request: HttpRequest) -> tuple[str, str]:
    """The uploaded file's text and name, else the pasted text."""
    upload = request.FILES.get("file")
    if upload is None or not upload.name:
        return request.POST.get("text", ""), ""
    if (upload.size or 0) > settings.MEMORY_IMPORT_MAX_BYTES:
        raise LimitExceeded(
            _("The file has %(size)s bytes; an import takes at most %(max)s.")
            % {"size": upload.size, "max": settings.MEMORY_IMPORT_MAX_BYTES}
        )
    try:
        return upload.read().decode("utf-8"), upload.name
    except UnicodeDecodeError as error:
        raise LimitExceeded(
            _("The file is not UTF-8 text (byte %(position)s); export it as text or JSON.")
            % {"position": error.start + 1}
        ) from error


@login_required
@require_POST
def inbox_import(request: HtmxHttpRequest) -> HttpResponse:
    """Import memory: every item of the file waits in the Inbox as a proposal (M23)."""
    user = signed_in_user(request)
    form = {"kind": request.POST.get("kind", ""), "text": request.POST.get("text", "")}
    try:
        kind = import_kind_of(form["kind"])
        text, file_name = _uploaded_text(request)
        result = memory_import(user=user, kind=kind, text=text, file_name=file_name)
    except Refusal as refusal:
        return _import_form(request, form, refusal.message)
    count = len(result.proposals)
    notice = ngettext(
        "%(count)s memory waits for you below; nothing is saved until you confirm it.",
        "%(count)s memories wait for you below; nothing is saved until you confirm them.",
        count,
    ) % {"count": count}
    if result.duplicates:
        notice += " " + ngettext(
            "%(count)s of them is already in your memory.",
            "%(count)s of them are already in your memory.",
            result.duplicates,
        ) % {"count": result.duplicates}
    if result.conflicts:
        notice += " " + ngettext(
            "%(count)s of them may contradict a saved note.",
            "%(count)s of them may contradict saved notes.",
            result.conflicts,
        ) % {"count": result.conflicts}
    messages.success(request, notice)
    if request.htmx:
        answer = HttpResponse(status=204)
        answer["HX-Redirect"] = reverse("inbox")
        return answer
    return redirect(reverse("inbox"))
