"""Property test: any tool call, valid or not, in any run kind and save mode, over the API.

It never answers 500 and never writes outside the rules (M9, M10, M11, M16, H9).
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from addons.services import addon_setting_put
from host.core.secret_guard import find_secret
from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope, Proposal
from memory_addon.services.tools import BANK_TOOLS, CHAT_TOOLS
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

TEXTS = st.one_of(
    st.sampled_from(
        [
            "",
            "- home: lives in Rome -> home.md",
            "- tea: likes green tea",
            "the password is swordfish42",
            "db_password=hunter2hunter2",
            "<!-- memory:entry id=1 -->",
            "-->",
            "x" * 301,
            "y" * 70_000,
            "index.md",
            "../../etc/passwd",
            "/abs.md",
            "notes.md",
            "MEMORY.md",
            "a\x00b.md",
        ]
    ),
    st.text(max_size=400),
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXTS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=5,
)
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in CHAT_TOOLS}
SCHEMAS.update({f"bank:{t['function']['name']}": t["function"]["parameters"] for t in BANK_TOOLS})


def _value_for(spec: dict) -> st.SearchStrategy:
    if "enum" in spec:
        return st.one_of(st.sampled_from(spec["enum"]), JSON_VALUES)
    if spec.get("type") == "integer":
        return st.one_of(st.integers(min_value=-5, max_value=10_000), JSON_VALUES)
    return st.one_of(TEXTS, JSON_VALUES)


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, object]:
    key = draw(st.sampled_from([*SCHEMAS, "no_such_tool"]))
    name = key.removeprefix("bank:")
    schema = SCHEMAS.get(key, {"properties": {}})
    arguments: dict[str, object] = {}
    for prop, spec in schema["properties"].items():
        if draw(st.booleans()):
            arguments[prop] = draw(_value_for(spec))
    if draw(st.integers(0, 9)) == 0:
        arguments[draw(st.text(max_size=10))] = draw(JSON_VALUES)
    raw = draw(st.integers(0, 14))
    if raw == 0:
        return name, draw(st.text(max_size=50))  # arguments as (mostly invalid) JSON text
    if raw == 1:
        return name, json.dumps(draw(JSON_VALUES))
    return name, arguments


TURNS = st.fixed_dictionaries(
    {
        "run_kind": st.sampled_from(["interactive", "scheduled", "background"]),
        "save_mode": st.sampled_from(["ask", "auto", "never"]),
        "bridge": st.booleans(),
        "agent": st.sampled_from(["none", "full", "read_only", "no_memory"]),
        "bank": st.booleans(),
        "memory_off": st.booleans(),
        "message_ref": st.sampled_from(["", "m1", "m2"]),
    }
)


def _snapshot() -> dict[str, int]:
    personal = ~st_is_project()
    return {
        "changes": ChangeSet.objects.filter(personal).count(),
        "automatic": ChangeSet.objects.filter(personal, origin="automatic").count(),
        "undo": ChangeSet.objects.filter(personal, origin="undo").count(),
        "proposals": Proposal.objects.count(),
        "bank_changes": ChangeSet.objects.filter(st_is_project()).count(),
    }


def st_is_project():
    from django.db.models import Q

    return Q(scope__kind=MemoryScope.Kind.PROJECT)


@hypothesis_settings(
    max_examples=int(getattr(settings, "TOOL_PROPERTY_EXAMPLES", 250)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(call=tool_calls(), turn=TURNS)
def test_any_tool_call_never_fails_and_never_writes_outside_the_rules(
    api, user, binding, call, turn
):
    name, arguments = call
    addon_setting_put(user=user, addon="memory", key="save-mode", value=turn["save_mode"])
    payload: dict[str, object] = {
        "run_kind": turn["run_kind"],
        "memory_off": turn["memory_off"],
        "message_ref": turn["message_ref"],
    }
    if turn["bridge"]:
        payload["binding_id"] = binding.pk
    if turn["agent"] != "none":
        agent = AgentFactory(
            owner=user,
            memory_allowed=turn["agent"] != "no_memory",
            may_propose=turn["agent"] == "full",
        )
        payload["agent_id"] = agent.pk
    if turn["bank"]:
        payload["project_key"] = "proj"
    before = _snapshot()

    response = api.post(
        "/api/memory/tools/call", {"turn": payload, "name": name, "arguments": arguments}
    )

    assert response.status_code < 500, response.content
    assert response.status_code in (200, 400, 403, 404, 409, 422), response.content
    after = _snapshot()
    may_save = turn["run_kind"] == "interactive" and not turn["memory_off"]
    if not may_save:
        assert after == before
    if turn["save_mode"] == "never" or turn["bank"]:
        # Banks ignore the save mode, notes never do; a bank turn has no note tools at all.
        assert (after["changes"], after["proposals"]) == (before["changes"], before["proposals"])
    if turn["bridge"]:
        assert after["automatic"] == before["automatic"] and after["undo"] == before["undo"]
    if turn["agent"] in ("read_only", "no_memory"):
        assert after == before
    for row in MemoryFile.objects.all():
        assert find_secret(row.content) is None, (row.path, row.content[:200])
        if row.path == "index.md" and row.scope.kind != MemoryScope.Kind.PROJECT:
            assert entries.count_lines(row.content) <= settings.MEMORY_INDEX_MAX_LINES
            assert entries.sent_bytes(row.content) <= settings.MEMORY_INDEX_MAX_BYTES
