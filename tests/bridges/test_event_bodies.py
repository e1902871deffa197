"""Outgoing events carry ids, kinds and counts only (B4): no text a person or the model wrote.

Every event type is made through the services that emit it, with marked text in each
note, reason, topic, file name and folder file; the stored bodies (what is sent) are
then scanned for every mark.
"""

from __future__ import annotations

import json

import pytest

from addons.services import addon_setting_put
from bridges.models import EventEndpoint, OutboxEvent
from bridges.outbox import event_kinds, outbox_emit
from knowledge import services as knowledge
from knowledge.models import Job
from knowledge.services import jobs
from memory_addon.models import FileChange
from memory_addon.services.changes import change_set_undo, file_write, version_restore
from memory_addon.services.notes import note_add
from memory_addon.services.proposals import (
    memory_change_request,
    proposal_confirm,
    proposal_reject,
)
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from tests.knowledge.conftest import allowed_root, embedding_profile, store

__all__ = ["allowed_root", "embedding_profile", "store"]

pytestmark = pytest.mark.django_db

MARKS = [
    "zebra",  # the person's file name and note
    "Sparkasse",
    "otter",  # an automatic note, its topic, its reason
    "walrus",  # a proposal's note, topic and reason
    "Alpaca",  # a collection's file name and text
    "llama-notes",
]


@pytest.fixture(autouse=True)
def jobs_run_here(monkeypatch):
    monkeypatch.setattr(jobs, "_run_on_commit", lambda job: None)


def _every_event_type(user, tmp_path, store) -> None:
    scope = ensure_user_scope(user)
    turn = Turn(user=user, conversation_ref="c", message_ref="m", reply_ref_trusted=True)
    changed = file_write(
        user=user, scope=scope, path="zebra-diary.md", content="Sparkasse zebra\n", base_sha256=""
    )
    note_add(user=user, scope=scope, text="zebra stripes at Sparkasse", source="page")
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    memory_change_request(
        turn=turn,
        operation={
            "action": "add",
            "text": "- otter: likes otters -> otter-facts.md",
            "topic": "otter-facts.md",
            "topic_content": "Otters hold hands.\n",
        },
        reason="The person said otters are great",
    )
    addon_setting_put(user=user, addon="memory", key="save-mode", value="ask")
    for message_ref in ("m2", "m3"):
        memory_change_request(
            turn=Turn(user=user, conversation_ref="c", message_ref=message_ref),
            operation={
                "action": "add",
                "text": "- walrus: feeds a walrus -> walrus-keeper.md",
                "topic": "walrus-keeper.md",
                "topic_content": "The walrus is called Wally.\n",
            },
            reason="Remember the walrus keeper",
        )
    first, second = user.memory_proposals.order_by("id")
    proposal_reject(user=user, proposal=first)
    proposal_confirm(user=user, proposal=second, edited_text="- walrus: Wally the walrus")
    change_set_undo(user=user, change_set=changed)
    version_restore(user=user, version=FileChange.objects.get(change_set=changed))
    folder = tmp_path / "llama-notes"
    folder.mkdir()
    (folder / "Alpaca-herd.txt").write_text("Alpacas are calm animals.\n")
    _, scan = knowledge.source_add_folder(store=store, path=str(folder))
    knowledge.scan_run(scan.pk)
    index = knowledge.scan_confirm(scan_job=Job.objects.get(pk=scan.pk))
    knowledge.index_run(index.pk)


def test_no_event_body_carries_text_a_person_or_the_model_wrote(
    user, tmp_path, allowed_root, store
):
    EventEndpoint.objects.create(
        owner=user,
        url="https://hooks.example.org/x",
        event_types=[t.value for t in EventEndpoint.EventType],
    )
    _every_event_type(user, tmp_path, store)
    bodies = [event.payload for event in OutboxEvent.objects.order_by("sequence")]
    assert {body["type"] for body in bodies} == set(EventEndpoint.EventType.values)
    sent = json.dumps(bodies).lower()
    for mark in MARKS:
        assert mark.lower() not in sent, mark
    for body in bodies:
        for key, value in body["data"].items():
            assert not isinstance(value, str) or value in event_kinds(), (key, value)


@pytest.mark.parametrize(
    "data",
    [
        {"summary": "Remember the walrus keeper"},
        {"paths": ["walrus-keeper.md"]},
        {"counts": {"walrus-keeper.md": 1}},
        {"action": "add", "reason": "x"},
    ],
)
def test_an_event_with_anything_but_ids_kinds_and_counts_is_refused(user, data):
    with pytest.raises(TypeError, match="not an id, a kind or a count"):
        outbox_emit(user_id=user.pk, event_type="memory.changed", data=data)
