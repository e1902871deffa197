"""A skill's learned rules as a Markdown file in the person's memory (M21). Pure: no Django.

Each skill keeps its rules in one file of the person's own memory scope, so a rule is a note like
any other: written by one change set, undone, audited, guarded, exported and restored.
Add-on skills live at ``skills/<add-on>/<skill>.md``, host-made skills at
``skills/<skill>.md``; each rule is one ``- `` line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SKILLS_FOLDER = "skills"
MAX_RULE_CHARS = 300
MAX_RULES = 30
MAX_RULES_CHARS = 2000
_KEY = r"[a-z][a-z0-9-]{0,39}"
_ADDON_PATH = re.compile(rf"^{SKILLS_FOLDER}/({_KEY})/({_KEY})\.md$")
_HOST_PATH = re.compile(rf"^{SKILLS_FOLDER}/({_KEY})\.md$")


@dataclass(frozen=True)
class SkillFile:
    addon_id: str  # "" for a host-made skill
    skill: str


class RulesRefused(ValueError):
    """A rules file that breaks a limit; the message names the rule."""


def rules_path(addon_id: str, skill: str) -> str:
    if not addon_id:
        return f"{SKILLS_FOLDER}/{skill}.md"
    return f"{SKILLS_FOLDER}/{addon_id}/{skill}.md"


def skill_of_path(path: str) -> SkillFile | None:
    """The skill whose rules a path holds, or None for any other note."""
    if match := _ADDON_PATH.match(path):
        return SkillFile(match[1], match[2])
    if match := _HOST_PATH.match(path):
        return SkillFile("", match[1])
    return None


def parse_rules(content: str) -> list[str]:
    """The rules of a file: its ``- `` lines (a heading or blank line is no rule)."""
    rules = []
    for line in content.replace("\r\n", "\n").split("\n"):
        stripped = line.strip()
        if stripped.startswith(("- ", "* ")):
            text = stripped[2:].strip()
            if text:
                rules.append(text)
    return rules


def check_rules(rules: list[str]) -> None:
    for number, rule in enumerate(rules, start=1):
        if len(rule) > MAX_RULE_CHARS:
            raise RulesRefused(
                f"Rule {number} is {len(rule)} characters long; a rule keeps at most "
                f"{MAX_RULE_CHARS}."
            )
    if len(rules) > MAX_RULES or len("\n".join(rules)) > MAX_RULES_CHARS:
        raise RulesRefused(
            f"A skill keeps at most {MAX_RULES} rules and {MAX_RULES_CHARS} characters."
        )


_TITLE = "# Learned rules: "


def parse_title(content: str) -> str:
    first = content.lstrip().split("\n", 1)[0].strip()
    return first[len(_TITLE) :].strip()[:80] if first.startswith(_TITLE) else ""


def render_rules(title: str, rules: list[str]) -> str:
    lines = [f"{_TITLE}{title}", ""]
    lines += [f"- {rule}" for rule in rules]
    return "\n".join(lines) + "\n"
