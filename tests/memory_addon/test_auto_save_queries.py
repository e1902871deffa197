"""An automatic save's queries: each thing it needs is read once (issue 26)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from addons.services import addon_setting_put
from memory_addon.core import entries
from memory_addon.models import MemoryFile
from memory_addon.services.proposals import memory_change_request

pytestmark = pytest.mark.django_db

# An automatic replace of one note, in order (the test's own transaction turns the save's
# durable transaction into a savepoint, so it shows as one more SAVEPOINT/RELEASE pair):
#  1 the policy row, with the add-on switches and the save mode
#  2 the person's stored secrets (AI profile keys, binding secrets: one query)
#  3 the person's event endpoints (their secrets, and who hears the change)
#  4 the person's scope
#  5 SAVEPOINT (the save's transaction)
#  6 the per-person memory lock
#  7 the index and topic file the change touches
#  8 notes already made in this reply (proposals and automatic changes: one query)
#  9 SAVEPOINT (change_set_apply's own block)
# 10 the memory lock again (change_set_apply takes it on every path; re-entrant)
# 11 the scope row, locked
# 12 the files written, locked
# 13 the sizes of the owner's files (the scope's and all the others, for the caps)
# 14 INSERT the change set
# 15 UPDATE the file
# 16 INSERT the file's history row
# 17 RELEASE SAVEPOINT (change_set_apply)
# 18 RELEASE SAVEPOINT (the save)
# The live push after commit reads nothing while no page is open.
AUTO_SAVE_QUERIES = 18


def test_an_automatic_save_reads_each_thing_once(
    user, turn, scope, django_capture_on_commit_callbacks
):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    memory_change_request(turn=turn, operation={"action": "add", "text": "- tea: likes tea"})
    index = MemoryFile.objects.get(scope=scope, path="index.md")
    (entry,) = entries.machine_entries(index.content)
    operation = {"action": "replace", "entry_id": entry.entry_id, "text": "- tea: green tea"}

    # The after-commit work (the live push, the note-search refresh) is counted too.
    with (
        CaptureQueriesContext(connection) as captured,
        django_capture_on_commit_callbacks(execute=True),
    ):
        outcome = memory_change_request(
            turn=replace(turn, message_ref="msg-2"), operation=operation
        )

    assert outcome.kind == "saved"
    statements = "\n".join(f"{n}. {q['sql']}" for n, q in enumerate(captured, start=1))
    assert len(captured) <= AUTO_SAVE_QUERIES, (
        f"An automatic save ran {len(captured)} queries, at most {AUTO_SAVE_QUERIES} expected "
        f"(listed at the top of this file). Justify each new one or read it once:\n{statements}"
    )
