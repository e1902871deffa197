"""The one write gate (check_may_change) refuses every change a temporary chat's turn asks
for (M22): proposals, automatic saves, reverts and project-bank writes alike."""

from __future__ import annotations

from dataclasses import replace

import pytest

from addons.services import addon_setting_put
from host.errors import NotAllowed
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.proposals import (
    check_may_change,
    memory_change_request,
    memory_revert_request,
)
from memory_addon.services.scopes import ensure_bank
from memory_addon.services.tools import tool_call_execute, tool_schemas
from memory_addon.turns import TEMPORARY_REFUSAL

pytestmark = pytest.mark.django_db

ADD = {"action": "add", "text": "- home: lives in Rome -> home.md"}


def test_the_gate_refuses_a_temporary_turn_with_its_own_message(turn):
    with pytest.raises(NotAllowed, match=TEMPORARY_REFUSAL):
        check_may_change(replace(turn, temporary=True))
    check_may_change(turn)  # the same turn, not temporary, may change memory


@pytest.mark.parametrize("save_mode", ["ask", "auto"])
def test_a_change_request_writes_nothing_in_either_save_mode(turn, user, save_mode):
    addon_setting_put(user=user, addon=MEMORY_ADDON, key=SAVE_MODE, value=save_mode)
    with pytest.raises(NotAllowed, match=TEMPORARY_REFUSAL):
        memory_change_request(turn=replace(turn, temporary=True), operation=ADD)
    assert not Proposal.objects.exists() and not ChangeSet.objects.exists()


def test_a_revert_of_an_earlier_automatic_save_is_refused(turn, user):
    addon_setting_put(user=user, addon=MEMORY_ADDON, key=SAVE_MODE, value="auto")
    saved = memory_change_request(turn=turn, operation=ADD).change_set
    assert saved is not None
    with pytest.raises(NotAllowed, match=TEMPORARY_REFUSAL):
        memory_revert_request(turn=replace(turn, temporary=True), change_id=saved.pk)
    assert ChangeSet.objects.count() == 1  # no undo was written


@pytest.mark.parametrize(
    ("name", "arguments", "bank"),
    [
        ("propose_change", ADD, False),
        ("revert_change", {"change_id": 1}, False),
        ("write_memory", {"content": "# Build\nmake test\n"}, True),
        ("edit_memory", {"old_string": "make", "new_string": "run"}, True),
        ("delete_memory", {"path": "MEMORY.md"}, True),
    ],
)
def test_every_writing_tool_is_refused_for_a_temporary_turn(turn, user, name, arguments, bank):
    temporary = replace(turn, temporary=True, project_key="git:abc" if bank else "")
    if bank:
        ensure_bank(user, "git:abc")
    before = MemoryFile.objects.count()
    ok, output = tool_call_execute(turn=temporary, name=name, arguments=arguments)
    assert not ok and TEMPORARY_REFUSAL in output
    assert MemoryFile.objects.count() == before
    assert not Proposal.objects.exists() and not ChangeSet.objects.exists()


@pytest.mark.parametrize("bank", [False, True])
def test_a_read_only_tool_set_offers_no_writing_tool(bank):
    names = {tool["function"]["name"] for tool in tool_schemas(bank=bank, read_only=True)}
    assert names and names.isdisjoint(
        {"propose_change", "revert_change", "write_memory", "edit_memory", "delete_memory"}
    )
