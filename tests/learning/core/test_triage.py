"""The triage reply is the model's, so it is checked before a card shows it (M20)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from learning.core.triage import (
    MAX_REPLY_CHARS,
    TEXT_CHARS,
    TITLE_CHARS,
    TriageUnusable,
    option_from_stored,
    parse_judgement,
)


def option(**changes: Any) -> dict[str, Any]:
    base = {
        "title": "Do it",
        "summary": "In one go.",
        "feasibility": "high",
        "recommended": False,
        "steps": ["First", "Second"],
    }
    return {**base, **changes}


def reply(**changes: Any) -> str:
    data = {
        "complex": True,
        "reasons": ["Many steps"],
        "options": [option(title="A"), option(title="B", recommended=True)],
    }
    return json.dumps({**data, **changes})


def test_a_good_reply_puts_the_recommended_option_first():
    judgement = parse_judgement(reply())
    assert judgement.complex and judgement.reasons == ("Many steps",)
    assert [o.title for o in judgement.options] == ["B", "A"]
    assert judgement.options[0].recommended


def test_a_fenced_reply_is_read_and_invisible_characters_are_dropped():
    text = "```json\n" + reply(reasons=["Many\u200b steps"]) + "\n```"
    assert parse_judgement(text).reasons == ("Many steps",)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not JSON"),
        (json.dumps([1, 2]), "complex"),
        (reply(complex="yes"), "complex"),
        (reply(options=[option(recommended=True)]), "2 to 3 options"),
        (reply(options=[option(recommended=True)] + [option()] * 3), "2 to 3 options"),
        (reply(options=[option(), option()]), "exactly one"),
        (reply(options=[option(recommended=True), option(recommended=True)]), "exactly one"),
        (reply(options=[option(recommended=True), "text"]), "not an object"),
        (reply(options=[option(recommended=True), option(feasibility="sure")]), "feasibility"),
        (reply(options=[option(recommended=True), option(title="")]), "empty"),
        (reply(options=[option(recommended=True), option(title=7)]), "not text"),
        (
            reply(options=[option(recommended=True), option(title="x" * (TITLE_CHARS + 1))]),
            "longer than",
        ),
        (
            reply(options=[option(recommended=True), option(steps=["x" * (TEXT_CHARS + 1)])]),
            "longer than",
        ),
        (reply(options=[option(recommended=True), option(risks=["r"] * 7)]), "at most 6"),
        (reply(reasons=["a", "b", "c", "d"]), "at most 3"),
        (reply(options=[option(recommended=True), option(recommended="yes")]), "recommended"),
        ("x" * (MAX_REPLY_CHARS + 1), "longer than"),
    ],
)
def test_an_unusable_reply_is_refused_with_its_reason(text, problem):
    with pytest.raises(TriageUnusable, match=problem):
        parse_judgement(text)


def test_a_stored_option_reads_back_the_same():
    first = parse_judgement(reply()).options[0]
    assert option_from_stored(first.stored()) == first
    assert first.as_plan() == "B\nIn one go.\n1. First\n2. Second"
