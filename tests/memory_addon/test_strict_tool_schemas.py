"""Strict-mode tool schemas (M4): every field required, the optional ones nullable, and
a null for an optional argument taken as "not given" when the model was offered them."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_bank, ensure_user_scope

pytestmark = pytest.mark.django_db

BANK = "git:strict-schemas"


def _tools(api, *, bank: bool, strict: bool):
    answer = api.get(f"/api/memory/tools?bank={str(bank).lower()}&strict={str(strict).lower()}")
    assert answer.status_code == 200, answer.content
    return answer.json()


def _call(api, name, arguments, *, project_key="", strict=True):
    turn = {"project_key": project_key, "strict_tools": strict}
    answer = api.post(
        "/api/memory/tools/call", {"turn": turn, "name": name, "arguments": arguments}
    )
    assert answer.status_code == 200, answer.content
    return answer.json()


@pytest.mark.parametrize("bank", [False, True])
def test_strict_schemas_require_every_field_and_let_the_optional_ones_be_null(api, bank):
    plain = {t["function"]["name"]: t["function"] for t in _tools(api, bank=bank, strict=False)}
    for tool in _tools(api, bank=bank, strict=True):
        function = tool["function"]
        parameters = function["parameters"]
        optional = set(parameters["properties"]) - set(
            plain[function["name"]]["parameters"]["required"]
        )
        assert function["strict"] is True
        assert parameters["required"] == list(parameters["properties"])
        assert parameters["additionalProperties"] is False
        Draft202012Validator.check_schema(parameters)
        validator = Draft202012Validator(parameters)
        for name in optional:
            assert validator.is_valid({**_filled(parameters), name: None}), (function["name"], name)


def _filled(parameters):
    """Arguments giving every field a value its schema takes."""
    values = {"string": "x", "integer": 1, "null": None}
    filled = {}
    for name, schema in parameters["properties"].items():
        if "enum" in schema:
            filled[name] = schema["enum"][0]
        else:
            kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            filled[name] = values[kinds[0]]
    return filled


@pytest.mark.parametrize("bank", [False, True])
def test_the_default_schemas_are_not_strict(api, bank):
    for tool in _tools(api, bank=bank, strict=False):
        assert "strict" not in tool["function"]


@pytest.mark.parametrize("bank", [False, True])
def test_each_served_tool_set_names_every_tool_once(api, bank):
    # The chat tools and the bank tools are never served together (a project key picks
    # the bank set), so their two list_memory tools never meet in one list.
    for strict in (False, True):
        names = [t["function"]["name"] for t in _tools(api, bank=bank, strict=strict)]
        assert len(names) == len(set(names))


def test_a_null_optional_argument_is_not_given_in_strict_mode(api, user):
    file_write(
        user=user,
        scope=ensure_bank(user, BANK),
        path="MEMORY.md",
        content="use make\n",
        base_sha256=None,
    )
    read = _call(api, "read_memory", {"path": None}, project_key=BANK)
    assert read["ok"] and "use make" in read["output"]
    written = _call(api, "write_memory", {"content": "use just\n", "path": None}, project_key=BANK)
    assert written["ok"], written
    assert MemoryFile.objects.get(scope__project_key=BANK, path="MEMORY.md").content == "use just\n"


def test_a_chat_tool_takes_null_for_its_optional_fields_in_strict_mode(api, user):
    file_write(
        user=user,
        scope=ensure_user_scope(user),
        path="index.md",
        content="- home: lives in Rome\n",
        base_sha256=None,
    )
    read = _call(api, "context_read", {"path": "index.md", "scope": None})
    assert read["ok"] and "Rome" in read["output"]
    proposed = _call(
        api,
        "propose_change",
        {
            "action": "add",
            "scope": None,
            "text": "- tea: likes green tea",
            "entry_id": None,
            "topic": None,
            "topic_content": None,
            "reason": None,
        },
    )
    assert proposed["ok"], proposed


def test_without_strict_mode_a_null_optional_argument_is_refused_naming_it(api, user):
    answer = _call(api, "context_read", {"path": "index.md", "scope": None}, strict=False)
    assert not answer["ok"] and "'scope' must be" in answer["output"]


def test_in_strict_mode_a_null_required_argument_is_still_refused_naming_it(api, user):
    answer = _call(api, "write_memory", {"content": None, "path": None}, project_key=BANK)
    assert not answer["ok"] and "'content' must be a string" in answer["output"]
    assert not MemoryFile.objects.filter(scope__project_key=BANK).exists()
