"""A profile marked for strict mode gets the strict tool schemas, and the runner takes a
null for an optional argument as not given."""

from __future__ import annotations

import json

import pytest

from chat.models import Message
from chat.runner import turn_run
from memory_addon.models import Proposal

pytestmark = pytest.mark.django_db(transaction=True)

STRICT_ADD = json.dumps(
    {
        "action": "add",
        "scope": None,
        "text": "- home: lives in Rome -> home.md",
        "entry_id": None,
        "topic": None,
        "topic_content": None,
        "reason": None,
    }
)


def test_a_strict_profile_gets_strict_schemas_and_its_null_options_run(
    fake_openai, ask, profile, person
):
    profile.strict_tools = True
    profile.save()
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": STRICT_ADD}]},
        {"content": "Asked."},
    ]
    answer = ask("Remember that I live in Rome")
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()

    tools = fake_openai.chat_requests[0]["tools"]
    assert tools and all(tool["function"]["strict"] is True for tool in tools)
    assert answer.state == Message.State.COMPLETE and answer.tool_calls[0]["ok"], answer.tool_calls
    assert Proposal.objects.filter(user=person).count() == 1


def test_a_default_profile_gets_the_plain_schemas_and_a_null_option_is_refused(
    fake_openai, ask, person
):
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": STRICT_ADD}]},
        {"content": "Sorry."},
    ]
    answer = ask("Remember that I live in Rome")
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()

    assert all("strict" not in tool["function"] for tool in fake_openai.chat_requests[0]["tools"])
    assert not answer.tool_calls[0]["ok"] and "'scope' must be" in answer.tool_calls[0]["result"]
    assert not Proposal.objects.filter(user=person).exists()
