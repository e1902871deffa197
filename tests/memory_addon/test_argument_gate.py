"""The argument gate (M4): every surface that runs a tool checks the arguments against
the tool's published JSON schema first.

Hypothesis builds a valid argument object from each schema and breaks it in one
way (a required field missing, a field null, a field of the wrong type, an unknown
field). Through every surface (the chat runner's tool loop, REST tools and bank file
API, the memory-tool endpoint, MCP over HTTP, the command-line client's MCP proxy)
the call is refused naming that field, and memory is exactly as before.
"""

from __future__ import annotations

import asyncio
import json
import string
import subprocess
import sys

import httpx2
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from accounts.services import api_token_create
from addons.services import addon_setting_put
from chat.models import Conversation, Message
from chat.runner import turn_run
from config.cli import project_identity
from config.mcp_server import SEARCH_TOOL
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.memory_tool import COMMAND_SCHEMAS
from memory_addon.services.scopes import ensure_bank, ensure_user_scope
from memory_addon.services.tools import BANK_TOOLS, CHAT_TOOLS
from tests.conftest import ROOT
from tests.factories import AIProfileFactory, UserFactory

BANK_KEY = "git:argument-gate"


def _parameters(tools):
    return {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}


CHAT = _parameters(CHAT_TOOLS)
BANK = _parameters(BANK_TOOLS)
MCP_CHAT = {**CHAT, **_parameters([SEARCH_TOOL])}

FIELD_NAMES = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=12)
TEXTS = st.one_of(
    st.sampled_from(
        [
            "",
            "- home: lives in Rome -> home.md",
            "home.md",
            "index.md",
            "MEMORY.md",
            "/memories/home.md",
            "/memories/MEMORY.md",
            "Rome",
            "use make",
            "user",
        ]
    ),
    # NUL and lone surrogates are refused as a 400 before any tool (test_bad_input.py).
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=20),
)
# Strategies per JSON type, to draw a value of any type but the wanted ones.
ANY_OF_TYPE = {
    "boolean": st.booleans(),
    "integer": st.integers(-5, 10**6),
    "number": st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    "string": TEXTS,
    "array": st.lists(st.integers(0, 9), max_size=2),
    "object": st.dictionaries(FIELD_NAMES, st.integers(), max_size=2),
    "null": st.none(),
}


def _types(spec):
    kind = spec.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


def _valid(spec):
    if "const" in spec:
        return st.just(spec["const"])
    if "enum" in spec:
        return st.sampled_from(spec["enum"])
    if spec.get("type") == "array":
        size = {"min_size": spec.get("minItems", 0), "max_size": spec.get("maxItems", 3)}
        return st.lists(_valid(spec["items"]), **size)
    return st.one_of([ANY_OF_TYPE[kind] for kind in _types(spec)])


def _wrong(spec):
    allowed = set(_types(spec)) | ({"number"} if "integer" in _types(spec) else set())
    allowed |= {"integer"} if "number" in allowed else set()
    return st.one_of([s for kind, s in ANY_OF_TYPE.items() if kind not in allowed | {"null"}])


@st.composite
def broken_calls(draw, tools):
    """(tool, arguments, the field the refusal must name): valid but for one field."""
    name = draw(st.sampled_from(sorted(tools)))
    schema = tools[name]
    fields, required = schema["properties"], schema["required"]
    arguments = {
        field: draw(_valid(spec))
        for field, spec in fields.items()
        if field in required or draw(st.booleans())
    }
    typed = [f for f, spec in fields.items() if "const" not in spec]
    choices = {
        "missing": [f for f in required if "const" not in fields[f]],
        "null": [f for f in typed if "null" not in _types(fields[f])],
        "wrong type": typed,
        "unknown": ["?"],
    }
    kind = draw(st.sampled_from([k for k, candidates in choices.items() if candidates]))
    if kind == "unknown":
        field = draw(FIELD_NAMES.filter(lambda f: f not in fields))
        arguments[field] = draw(st.one_of(list(ANY_OF_TYPE.values())))
        return name, arguments, field
    field = draw(st.sampled_from(choices[kind]))
    if kind == "missing":
        arguments.pop(field, None)
    else:
        arguments[field] = None if kind == "null" else draw(_wrong(fields[field]))
    return name, arguments, field


def memory_state():
    return (
        sorted(MemoryFile.objects.values_list("scope_id", "path", "sha256")),
        ChangeSet.objects.count(),
        Proposal.objects.count(),
    )


def assert_refused_naming(ok, output, field):
    assert ok is False, output
    assert repr(field) in output, output


def _memory_of(person, bank_key=BANK_KEY):
    """Notes that every broken call could damage: saved at once (auto), a bank file."""
    addon_setting_put(user=person, addon=MEMORY_ADDON, key=SAVE_MODE, value="auto")
    scope, bank = ensure_user_scope(person), ensure_bank(person, bank_key)
    for where, path, content in (
        (scope, "index.md", "- home: lives in Rome -> home.md\n"),
        (scope, "home.md", "Rome\n"),
        (bank, "MEMORY.md", "use make\n"),
    ):
        if not MemoryFile.objects.filter(scope=where, path=path, content=content).exists():
            file_write(user=person, scope=where, path=path, content=content, base_sha256=None)


EXAMPLES = hypothesis_settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
BATCHES = hypothesis_settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --- REST: the tools endpoint (chat tools and the bank file API) ---------------


@pytest.mark.django_db
@EXAMPLES
@given(
    call=st.one_of(
        broken_calls(CHAT).map(lambda c: ("", *c)),
        broken_calls(BANK).map(lambda c: (BANK_KEY, *c)),
    )
)
def test_a_broken_tool_call_over_rest_is_refused_naming_the_field_and_writes_nothing(
    api, user, call
):
    project_key, name, arguments, field = call
    _memory_of(user)
    before = memory_state()

    response = api.post(
        "/api/memory/tools/call",
        {"turn": {"project_key": project_key}, "name": name, "arguments": arguments},
    )

    assert response.status_code == 200, response.content
    assert_refused_naming(response.json()["ok"], response.json()["output"], field)
    assert memory_state() == before


# --- REST: the memory-tool endpoint (own notes and a bank) ----------------------


@pytest.mark.django_db
@EXAMPLES
@given(call=broken_calls(COMMAND_SCHEMAS), bank=st.booleans())
def test_a_broken_memory_tool_command_is_refused_naming_the_field_and_writes_nothing(
    api, user, call, bank
):
    _, command, field = call
    _memory_of(user)
    before = memory_state()

    response = api.post(
        "/api/memory/memory-tool", {"input": command, "project_key": BANK_KEY if bank else ""}
    )

    assert response.status_code == 200, response.content
    assert_refused_naming(response.json()["ok"], response.json()["output"], field)
    assert memory_state() == before


def test_the_memory_tool_command_schemas_are_published(api):
    published = api.get("/api/memory/memory-tool/commands").json()
    assert published == json.loads(json.dumps(COMMAND_SCHEMAS))
    assert published["str_replace"]["required"] == ["command", "path", "old_str", "new_str"]


# --- MCP over HTTP and the command-line client's stdio proxy ---------------------


async def _mcp_calls(client, calls):
    answers = []
    async with client:
        for name, arguments, _ in calls:
            result = await client.call_tool(name, arguments)
            answers.append((not result.is_error, result.content[0].text))
    return answers


@pytest.fixture
def mcp_person(db):
    person = UserFactory()
    _memory_of(person)
    return person, api_token_create(user=person, name="gate")[1]


@pytest.mark.django_db(transaction=True)
@BATCHES
@given(
    calls=st.one_of(
        st.tuples(st.just(""), st.lists(broken_calls(MCP_CHAT), min_size=5, max_size=10)),
        st.tuples(st.just(BANK_KEY), st.lists(broken_calls(BANK), min_size=5, max_size=10)),
    )
)
def test_a_broken_tool_call_over_mcp_is_refused_naming_the_field_and_writes_nothing(
    live_asgi_server, mcp_person, calls
):
    project_key, batch = calls
    _, token = mcp_person
    headers = {"Authorization": f"Bearer {token}"}
    if project_key:
        headers["X-Memory-Project"] = project_key
    before = memory_state()

    async def run():
        http = httpx2.AsyncClient(headers=headers, timeout=30)
        async with http:
            url = f"{live_asgi_server.url}/mcp/"
            return await _mcp_calls(Client(streamable_http_client(url, http_client=http)), batch)

    for (ok, output), (_, _, field) in zip(asyncio.run(run()), batch, strict=True):
        assert_refused_naming(ok, output, field)
    assert memory_state() == before


@pytest.mark.django_db(transaction=True)
@BATCHES
@given(
    calls=st.one_of(
        st.tuples(st.just([]), st.lists(broken_calls(MCP_CHAT), min_size=8, max_size=12)),
        st.tuples(st.just(["--bank"]), st.lists(broken_calls(BANK), min_size=8, max_size=12)),
    )
)
def test_a_broken_tool_call_through_the_command_line_client_is_refused_and_writes_nothing(
    live_asgi_server, tmp_path_factory, calls
):
    bank, batch = calls
    project = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    person = UserFactory()
    _memory_of(person, bank_key=project_identity(project)[0])
    token = api_token_create(user=person, name="cli")[1]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "config.cli", "mcp", *bank, "--project", str(project)],
        env={
            "MEMORY_HOST_URL": live_asgi_server.url,
            "MEMORY_HOST_TOKEN": token,
            "PATH": "/usr/bin:/bin",
        },
        cwd=str(ROOT),
    )
    before = memory_state()

    answers = asyncio.run(_mcp_calls(Client(params), batch))

    for (ok, output), (_, _, field) in zip(answers, batch, strict=True):
        assert_refused_naming(ok, output, field)
    assert memory_state() == before


# --- the chat runner's tool loop -------------------------------------------------


@pytest.mark.django_db(transaction=True)
@hypothesis_settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(call=broken_calls(CHAT))
def test_a_broken_tool_call_in_a_chat_turn_is_refused_naming_the_field_and_writes_nothing(
    fake_openai, chat_person, call
):
    name, arguments, field = call
    conversation = chat_person
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": name, "arguments": json.dumps(arguments)}]},
        {"content": "Done."},
    ]
    Message.objects.create(conversation=conversation, role=Message.Role.USER, content="Go")
    answer = Message.objects.create(
        conversation=conversation, role=Message.Role.ASSISTANT, state=Message.State.STREAMING
    )
    before = memory_state()

    turn_run(message_id=answer.pk)

    answer.refresh_from_db()
    (logged,) = answer.tool_calls
    assert_refused_naming(logged["ok"], logged["result"], field)
    assert memory_state() == before


@pytest.fixture
def chat_person(db, fake_openai):
    person = UserFactory()
    _memory_of(person)
    profile = AIProfileFactory(
        owner=person, base_url=fake_openai.base_url, model="fake-model", is_default=True
    )
    return Conversation.objects.create(owner=person, ai_profile=profile, title="Gate")
