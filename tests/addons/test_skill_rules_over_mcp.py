"""Learned rules through MCP (M21): the model's memory tools reach a skill's rules note, and
the same gate as every other path keeps each rule within 300 characters."""

from __future__ import annotations

import pytest

from accounts.services import api_token_create
from addons.models import HOST_SKILLS, SkillRule
from addons.services import addon_setting_put, host_skill_create
from tests.config.test_mcp import mcp
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_learned_rules_note_written_over_mcp_follows_the_rule_limits(live_asgi_server):
    person = UserFactory()
    token = api_token_create(user=person, name="mcp")[1]
    host_skill_create(user=person, name="python", title="Python")
    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")

    def write(rules: str):
        [(ok, text)] = mcp(
            live_asgi_server,
            token,
            [
                (
                    "propose_change",
                    {
                        "action": "write_topic",
                        "topic": "skills/python.md",
                        "topic_content": f"# Learned rules: Python\n\n{rules}",
                    },
                )
            ],
        )
        return ok, text

    ok, text = write("- " + "very " * 70 + "long.\n")
    assert not ok and "300" in text
    assert not SkillRule.objects.filter(user=person).exists()
    ok, text = write("- Use type hints.\n")
    assert ok, text
    assert SkillRule.objects.get(user=person, addon_id=HOST_SKILLS).text == "Use type hints."
