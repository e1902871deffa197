"""The order in which a confirmed rule finds its target (M13, M21), as a table.

The first table was written with the router; the held-out table was written afterwards
from the spec alone and run once, to check the vocabulary and the phrases generalise.
"""

from __future__ import annotations

import pytest

from learning.core.rule_routing import RoutingFacts, SkillTopics, route, vocabulary_term

PYTHON_SKILL = SkillTopics("_host", "python", "Python", ("python", "python3"), person_tagged=True)
TAGGED_TONE = SkillTopics("tone", "formal", "Tone · formal", ("emails", "e-mails"), True)
MEMORY_SKILL = SkillTopics("memory", "memory", "Short memory", ("memory", "notes"), False)
TAGGED_NOTES = SkillTopics("_host", "notes", "My notes", ("notes",), person_tagged=True)

AGENT_CHAT = RoutingFacts(agent_name="Coder", skills=(PYTHON_SKILL, MEMORY_SKILL))
BRIDGED_CHAT = RoutingFacts(has_conversation_memory=True, skills=(PYTHON_SKILL,))
PLAIN = RoutingFacts(skills=(PYTHON_SKILL, TAGGED_TONE, MEMORY_SKILL))
NO_SKILLS_ALLOWED = RoutingFacts(skills_allowed=False, skills=(PYTHON_SKILL,))

TUNED = [
    # 1. the agent or the conversation, by name or by words, EN and DE
    ("Coder should always answer with code first.", AGENT_CHAT, ("agent", "")),
    ("From now on this agent writes Python type hints.", AGENT_CHAT, ("agent", "")),
    ("Ab jetzt soll dieser Agent kürzer antworten.", AGENT_CHAT, ("agent", "")),
    ("In this chat, always answer in French.", BRIDGED_CHAT, ("conversation", "")),
    ("In diesem Chat immer auf Deutsch antworten.", BRIDGED_CHAT, ("conversation", "")),
    # no conversation memory: the words alone do not make one
    ("In this chat, always answer in French.", PLAIN, ("user", "")),
    # 2. a topic with a skill
    ("Always use f-strings in Python.", PLAIN, ("skill", "python")),
    ("Verwende immer Python3 mit Typannotationen.", PLAIN, ("skill", "python")),
    ("Sign my emails with my first name only.", PLAIN, ("skill", "formal")),
    ("Never keep notes about my health.", PLAIN, ("skill", "memory")),
    # a skill the person tagged beats an add-on's own topic
    (
        "Keep notes in bullet points.",
        RoutingFacts(skills=(MEMORY_SKILL, TAGGED_NOTES)),
        ("skill", "notes"),
    ),
    # 3. a known language or tool with no skill yet
    ("From now on, write commit messages in the imperative.", PLAIN, ("new_skill", "git")),
    ("Ab sofort Docker-Images immer mit festen Tags bauen.", PLAIN, ("new_skill", "docker")),
    ("Use TypeScript strict mode in every example.", PLAIN, ("new_skill", "typescript")),
    ("Merk dir: Excel-Tabellen immer mit Kopfzeile.", PLAIN, ("new_skill", "excel")),
    # 4. else the person's memory
    ("From now on, answer me in British English.", PLAIN, ("user", "")),
    ("Merk dir, dass ich vegetarisch esse.", PLAIN, ("user", "")),
    # skills not allowed: topics and vocabulary are skipped
    ("Always use f-strings in Python.", NO_SKILLS_ALLOWED, ("user", "")),
    ("Write commit messages in the imperative.", NO_SKILLS_ALLOWED, ("user", "")),
    # the agent comes first, even for a rule on a skill's topic
    ("Coder: always use Python 3.12.", AGENT_CHAT, ("agent", "")),
]

HELD_OUT = [
    ("Going forward, Kotlin examples should use coroutines.", PLAIN, ("new_skill", "kotlin")),
    ("Zukünftig bei SQL immer Großbuchstaben für Schlüsselwörter.", PLAIN, ("new_skill", "sql")),
    ("Remember that my Rust code targets edition 2021.", PLAIN, ("new_skill", "rust")),
    ("In future, pytest fixtures go into conftest.py.", PLAIN, ("new_skill", "pytest")),
    ("Benutze immer Kubernetes-Namespaces pro Team.", PLAIN, ("new_skill", "kubernetes")),
    ("Always answer me in metric units.", PLAIN, ("user", "")),
    ("Ab jetzt bitte immer duzen.", PLAIN, ("user", "")),
    ("My digital notes are private.", RoutingFacts(), ("user", "")),  # "git" not in "digital"
    ("Use JavaScript, never Java, for browser snippets.", PLAIN, ("new_skill", "javascript")),
    ("Dieser Agent soll nie Emojis verwenden.", AGENT_CHAT, ("agent", "")),
    ("In this thread, summarise every answer.", BRIDGED_CHAT, ("conversation", "")),
    ("Python docstrings in Google style, please, from now on.", PLAIN, ("skill", "python")),
]


@pytest.mark.parametrize(("text", "facts", "expected"), TUNED + HELD_OUT)
def test_a_rule_goes_to_the_first_target_that_fits(text, facts, expected):
    found = route(text, facts)
    assert (found.kind, found.skill) == expected


def test_the_detection_judging_a_rule_about_the_assistant_sends_it_to_the_agent():
    facts = RoutingFacts(agent_name="Coder", about_agent=True, skills=(PYTHON_SKILL,))
    assert route("Always use Python 3.12.", facts).kind == "agent"
    assert route("Always use Python 3.12.", RoutingFacts(about_agent=True)).kind == "new_skill"


def test_the_language_named_first_names_the_new_skill():
    assert vocabulary_term("Prefer Go code over Python scripts.") == ("go", "Go")
    assert vocabulary_term("I live in Rome.") is None
