"""A bridge turn with a strict-mode AI profile: strict schemas go to the model and a
null for an optional tool argument counts as not given (M4)."""

from __future__ import annotations

import json

import pytest

from bridges.models import InboundMessage
from memory_addon.models import Proposal
from scripts.sample_bridge import send_message

pytestmark = pytest.mark.django_db(transaction=True)

STRICT_ADD = json.dumps(
    {
        "action": "add",
        "scope": "conversation",
        "text": "- train: takes the train on Mondays",
        "entry_id": None,
        "topic": None,
        "topic_content": None,
        "reason": None,
    }
)


def test_a_strict_profile_over_a_bridge_gets_strict_schemas_and_its_null_options_run(
    fake_openai, webhook_url, bound, person, profile, work
):
    profile.strict_tools = True
    profile.save()
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": STRICT_ADD}]},
        {"content": "Noted."},
    ]
    assert send_message(webhook_url, bound[1], "I take the train on Mondays").status_code == 202
    (row,) = work()
    assert row.state == InboundMessage.State.ANSWERED
    tools = fake_openai.chat_requests[0]["tools"]
    assert tools and all(tool["function"]["strict"] is True for tool in tools)
    assert Proposal.objects.filter(user=person, source="bridge").count() == 1
