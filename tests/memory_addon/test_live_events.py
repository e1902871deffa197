"""Confirmations, automatic saves, undo and expiry reach the person's sockets after commit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from addons.services import addon_setting_put
from host.push import fragment_event
from memory_addon import events
from memory_addon.models import Proposal
from memory_addon.services.changes import change_set_undo
from memory_addon.services.proposals import memory_change_request, proposal_confirm
from memory_addon.tasks import proposals_expire_task

pytestmark = pytest.mark.django_db

ADD = {"action": "add", "text": "- tea: likes tea -> tea.md"}


@pytest.fixture
def pushed(monkeypatch):
    """What each push sends, in the site's default language."""
    sent: list[tuple[int, str]] = []

    def push(user_id, fragment):
        sent.append((user_id, fragment_event(fragment)["html"]))

    monkeypatch.setattr(events, "push_fragment", push)
    return sent


def test_a_pushed_notice_is_rendered_in_every_site_language(
    turn, user, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(events, "push_fragment", lambda user_id, f: sent.append(fragment_event(f)))
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    with django_capture_on_commit_callbacks(execute=True):
        memory_change_request(turn=turn, operation=ADD)
    notice = next(e for e in sent if 'data-origin="automatic"' in e["html"])
    assert "Saved to memory" in notice["by_language"]["en"]
    assert "Im Gedächtnis gespeichert" in notice["by_language"]["de"]
    assert "Saved to memory" not in notice["by_language"]["de"]


def test_confirming_pushes_the_notice_and_the_inbox_count_after_commit(
    turn, user, pushed, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        proposal = memory_change_request(turn=turn, operation=ADD).proposal
    assert {user_id for user_id, _ in pushed} == {user.pk}
    count = next(html for _, html in pushed if 'id="inbox-count"' in html)
    assert ">1<" in count
    card = next(html for _, html in pushed if "afterbegin:#proposal-list" in html)
    assert f'id="proposal-{proposal.pk}"' in card and "likes tea" in card
    pushed.clear()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        proposal_confirm(user=user, proposal=proposal)
        assert pushed == []  # nothing before commit
    for callback in callbacks:
        callback()
    html = "".join(h for _, h in pushed)
    assert 'data-origin="assistant"' in html and "Saved to memory" in html
    # What was saved and where, without the entry fences.
    assert "tea: likes tea -&gt; tea.md" in html and "· Memory" in html
    assert "memory:entry" not in html
    assert f'<article id="proposal-{proposal.pk}" hx-swap-oob="delete">' in html


def test_automatic_save_and_undo_push_notices(
    turn, user, pushed, django_capture_on_commit_callbacks
):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    with django_capture_on_commit_callbacks(execute=True):
        change = memory_change_request(turn=turn, operation=ADD).change_set
    assert 'data-origin="automatic"' in pushed[-1][1]
    assert f'action="/memory/changes/{change.pk}/undo/"' in pushed[-1][1]
    with django_capture_on_commit_callbacks(execute=True):
        change_set_undo(user=user, change_set=change)
    assert 'data-origin="undo"' in pushed[-1][1]


@pytest.mark.django_db(transaction=True)
def test_expiry_runs_in_the_real_worker(turn, celery_worker):
    proposal = memory_change_request(turn=turn, operation=ADD).proposal
    Proposal.objects.filter(pk=proposal.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert proposals_expire_task.delay().get(timeout=30) == 1
    proposal.refresh_from_db()
    assert proposal.state == Proposal.State.EXPIRED
