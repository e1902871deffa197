"""Where a confirmed rule goes (M13, M21): no Django, no outside call.

First fit wins:

1. the rule names the conversation's agent (by its name or "this agent" / "dieser
   Agent") → the agent's memory; it names the conversation ("this chat" / "in diesem
   Chat") and the conversation has memory of its own → that memory;
2. it is about a topic of one of the person's skills → that skill's learned rules; a
   topic the person tagged (or a skill the host made for them) beats a topic an add-on
   gave its skill, and the topic named first wins among equals;
3. it names a known programming language or tool (``VOCABULARY`` below) and no skill has
   that topic → a new skill, made by the host, that starts with the rule;
4. else the person's memory.

Steps 2 and 3 apply only while skills are allowed (the person's setting, the
organization's policy). The vocabulary is fixed and documented here: language and tool
names read the same in English and German, so one list serves both; German compounds
such as "Python-Skripte" or "Excel-Tabellen" match by their name before the hyphen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# slug (the new skill's name), title, the spellings that name it (lowercase).
VOCABULARY: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("python", "Python", ("python", "python3")),
    ("javascript", "JavaScript", ("javascript", "js")),
    ("typescript", "TypeScript", ("typescript",)),
    ("java", "Java", ("java",)),
    ("kotlin", "Kotlin", ("kotlin",)),
    ("swift", "Swift", ("swift",)),
    ("rust", "Rust", ("rust", "cargo")),
    ("go", "Go", ("golang", "go code", "go-code", "go modules")),
    ("cpp", "C++", ("c++", "cpp")),
    ("csharp", "C#", ("c#", "csharp", ".net")),
    ("php", "PHP", ("php",)),
    ("ruby", "Ruby", ("ruby", "rails")),
    ("scala", "Scala", ("scala",)),
    ("haskell", "Haskell", ("haskell",)),
    ("elixir", "Elixir", ("elixir",)),
    ("dart", "Dart", ("dart", "flutter")),
    ("lua", "Lua", ("lua",)),
    ("perl", "Perl", ("perl",)),
    ("sql", "SQL", ("sql",)),
    ("shell", "Shell", ("bash", "zsh", "shell script", "shell scripts", "shellskript")),
    ("powershell", "PowerShell", ("powershell",)),
    ("html", "HTML", ("html",)),
    ("css", "CSS", ("css", "tailwind")),
    ("latex", "LaTeX", ("latex",)),
    ("markdown", "Markdown", ("markdown",)),
    ("yaml", "YAML", ("yaml",)),
    ("git", "Git", ("git", "commit messages", "commit-nachrichten", "commit-messages")),
    ("github", "GitHub", ("github",)),
    ("gitlab", "GitLab", ("gitlab",)),
    ("docker", "Docker", ("docker", "dockerfile", "docker compose")),
    ("kubernetes", "Kubernetes", ("kubernetes", "k8s", "kubectl", "helm")),
    ("terraform", "Terraform", ("terraform",)),
    ("ansible", "Ansible", ("ansible",)),
    ("django", "Django", ("django",)),
    ("flask", "Flask", ("flask",)),
    ("fastapi", "FastAPI", ("fastapi",)),
    ("react", "React", ("react", "jsx")),
    ("vue", "Vue", ("vue", "vue.js")),
    ("angular", "Angular", ("angular",)),
    ("nodejs", "Node.js", ("node.js", "nodejs", "npm")),
    ("pytest", "pytest", ("pytest",)),
    ("postgresql", "PostgreSQL", ("postgresql", "postgres", "psql")),
    ("mysql", "MySQL", ("mysql",)),
    ("redis", "Redis", ("redis",)),
    ("pandas", "pandas", ("pandas",)),
    ("linux", "Linux", ("linux",)),
    ("vim", "Vim", ("vim", "neovim")),
    ("vscode", "VS Code", ("vs code", "vscode", "visual studio code")),
    ("excel", "Excel", ("excel",)),
    ("powerpoint", "PowerPoint", ("powerpoint",)),
    ("jira", "Jira", ("jira",)),
    ("figma", "Figma", ("figma",)),
)

# How a rule names the agent or the conversation it was said in, in English and German.
AGENT_WORDS = (
    "this agent",
    "the agent",
    "this assistant",
    "dieser agent",
    "diesen agenten",
    "diesem agenten",
    "dieses agenten",
    "den agenten",
    "der agent",
)
CONVERSATION_WORDS = (
    "this conversation",
    "this chat",
    "this thread",
    "this channel",
    "this group",
    "diese unterhaltung",
    "dieser unterhaltung",
    "diesem chat",
    "diesen chat",
    "dieser chat",
    "dieses gespräch",
    "diesem gespräch",
    "diesem kanal",
    "diesen kanal",
    "diesem thread",
    "dieser gruppe",
)

RouteKind = Literal["agent", "conversation", "skill", "new_skill", "user"]


@dataclass(frozen=True)
class SkillTopics:
    """A skill the rule may go to, with its topics (lowercase)."""

    addon_id: str
    skill: str
    title: str
    topics: tuple[str, ...]
    person_tagged: bool  # tagged by the person, or a skill the host made for them


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    addon_id: str = ""
    skill: str = ""
    title: str = ""


@dataclass(frozen=True)
class RoutingFacts:
    """What the router knows about where the rule was said."""

    agent_name: str = ""  # "" when the conversation has no agent
    # The detection call judged the rule to be about the assistant itself.
    about_agent: bool = False
    has_conversation_memory: bool = False
    skills_allowed: bool = True
    skills: tuple[SkillTopics, ...] = ()


def _pattern(phrase: str) -> re.Pattern[str]:
    # A name is a word of its own: "java" is not in "javascript", "git" not in "digital";
    # a hyphen may follow, for German compounds ("Python-Skripte").
    body = re.escape(phrase.strip().lower()).replace(r"\ ", r"\s+")
    return re.compile(rf"(?<![\w+#.]){body}(?![\w+#]|\.\w)", re.IGNORECASE)


_VOCABULARY_PATTERNS = tuple(
    (slug, title, tuple(_pattern(alias) for alias in aliases))
    for slug, title, aliases in VOCABULARY
)
_AGENT = tuple(_pattern(words) for words in AGENT_WORDS)
_CONVERSATION = tuple(_pattern(words) for words in CONVERSATION_WORDS)


def _first_at(text: str, patterns: tuple[re.Pattern[str], ...]) -> int | None:
    found = [match.start() for pattern in patterns if (match := pattern.search(text))]
    return min(found) if found else None


def aliases_of(slug: str) -> tuple[str, ...]:
    """The spellings of a known language or tool, so its skill is found by any of them."""
    return next((aliases for name, _, aliases in VOCABULARY if name == slug), ())


def vocabulary_term(text: str) -> tuple[str, str] | None:
    """The language or tool the text names first, as (slug, title), or None."""
    best: tuple[int, str, str] | None = None
    for slug, title, patterns in _VOCABULARY_PATTERNS:
        at = _first_at(text, patterns)
        if at is not None and (best is None or at < best[0]):
            best = (at, slug, title)
    return (best[1], best[2]) if best else None


def _skill_match(text: str, skills: tuple[SkillTopics, ...]) -> SkillTopics | None:
    ranked: list[tuple[bool, int, int, SkillTopics]] = []
    for order, skill in enumerate(skills):
        at = _first_at(text, tuple(_pattern(topic) for topic in skill.topics if topic.strip()))
        if at is not None:
            ranked.append((not skill.person_tagged, at, order, skill))
    return min(ranked, key=lambda item: item[:3])[3] if ranked else None


def route(text: str, facts: RoutingFacts) -> Route:
    """Where the rule goes; see the module's docstring for the order."""
    if facts.agent_name and (
        facts.about_agent or _first_at(text, (*_AGENT, _pattern(facts.agent_name))) is not None
    ):
        return Route("agent")
    if facts.has_conversation_memory and _first_at(text, _CONVERSATION) is not None:
        return Route("conversation")
    if facts.skills_allowed:
        skill = _skill_match(text, facts.skills)
        if skill is not None:
            return Route("skill", skill.addon_id, skill.skill, skill.title)
        term = vocabulary_term(text)
        if term is not None:
            return Route("new_skill", "", term[0], term[1])
    return Route("user")
