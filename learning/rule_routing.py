"""Where a confirmed rule goes (M13, M21): the one router every rule path asks.

Rule cards, "Remember as rule…" and (later) the question card call ``route_rule`` for
the proposed target and ``target_from_choice`` for the person's Save to choice; the
order itself is pure and lives in learning/core/rule_routing.py. Only reads: the card
selectors use it as much as the rule services.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.translation import gettext

from accounts.models import User
from addons.errors import AddonNotFound
from addons.models import HOST_SKILLS
from addons.selectors import SkillView, person_skills
from chat.models import Conversation
from host.errors import ChangeRefused
from learning.core.rule_routing import (
    VOCABULARY,
    RoutingFacts,
    SkillTopics,
    aliases_of,
    route,
    vocabulary_term,
)
from learning.models import RuleSuggestion
from memory_addon.services.policy import Policy, kill_switch_on, policy_for
from memory_addon.services.user_settings import skill_rules_allowed_for

_KEY = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
Target = RuleSuggestion.Target


@dataclass(frozen=True)
class RuleTarget:
    kind: str  # a RuleSuggestion.Target value
    skill_addon: str = ""
    skill_name: str = ""
    skill_title: str = ""

    @property
    def choice(self) -> str:
        """The card's Save to value for this target."""
        if self.kind == Target.SKILL:
            return f"skill:{self.skill_addon}/{self.skill_name}"
        if self.kind == Target.NEW_SKILL:
            return f"new:{self.skill_name}"
        return str(self.kind)


@dataclass(frozen=True)
class TargetChoice:
    value: str
    label: str


def skills_allowed(user: User, policy: Policy | None = None) -> bool:
    """Rules may go to skills: the organization allows it and so does the person."""
    if kill_switch_on():
        return False
    policy = policy or policy_for(user)
    return policy.skills and skill_rules_allowed_for(user)


def _topics(skill: SkillView) -> SkillTopics:
    topics = skill.tags + skill.builtin_topics
    if skill.addon_id == HOST_SKILLS:
        topics += (skill.name, *aliases_of(skill.name))
    return SkillTopics(
        skill.addon_id,
        skill.name,
        skill.title,
        topics,
        person_tagged=bool(skill.tags) or skill.addon_id == HOST_SKILLS,
    )


def _facts(
    person: User, conversation: Conversation, skills: list[SkillView], *, about_agent: bool
) -> RoutingFacts:
    allowed = skills_allowed(person)
    return RoutingFacts(
        agent_name=conversation.agent.name if conversation.agent else "",
        about_agent=about_agent,
        has_conversation_memory=conversation.binding_id is not None,
        skills_allowed=allowed,
        skills=tuple(_topics(skill) for skill in skills) if allowed else (),
    )


def route_rule(
    person: User, text: str, conversation: Conversation, *, about_agent: bool = False
) -> RuleTarget:
    """The target of a confirmed rule, first fit wins (learning/core/rule_routing.py).

    about_agent: the detection call judged the rule to be about the assistant itself."""
    skills = person_skills(person)
    found = route(text, _facts(person, conversation, skills, about_agent=about_agent))
    if found.kind == "skill":
        return RuleTarget(Target.SKILL, found.addon_id, found.skill, found.title)
    if found.kind == "new_skill":
        return RuleTarget(Target.NEW_SKILL, HOST_SKILLS, found.skill, found.title)
    return RuleTarget(found.kind)


def target_choices(
    person: User,
    conversation: Conversation,
    text: str,
    routed: RuleTarget,
    policy: Policy | None = None,
) -> list[TargetChoice]:
    """What the card's Save to offers: memory, the agent or conversation, the person's
    skills and a new one (only while skills are allowed). policy: the person's, when the
    caller read it already."""
    choices = [TargetChoice(Target.USER, gettext("Your memory"))]
    if conversation.agent is not None:
        choices.append(
            TargetChoice(
                Target.AGENT, gettext("Memory of %(agent)s") % {"agent": conversation.agent.name}
            )
        )
    if conversation.binding_id is not None:
        choices.append(TargetChoice(Target.CONVERSATION, gettext("This conversation's memory")))
    if not skills_allowed(person, policy):
        return choices
    for skill in person_skills(person):
        value = f"skill:{skill.addon_id}/{skill.name}"
        choices.append(TargetChoice(value, gettext("Skill: %(title)s") % {"title": skill.title}))
    term = vocabulary_term(text)
    new = routed if routed.kind == Target.NEW_SKILL else None
    if (
        new is None
        and term is not None
        and not any(c.value.endswith(f"/{term[0]}") for c in choices)
    ):
        new = RuleTarget(Target.NEW_SKILL, HOST_SKILLS, term[0], term[1])
    if new is not None:
        choices.append(
            TargetChoice(new.choice, gettext("New skill: %(title)s") % {"title": new.skill_title})
        )
    return choices


def target_from_choice(person: User, conversation: Conversation, value: str) -> RuleTarget:
    """The person's Save to choice, checked: a skill they cannot see is not found (404),
    a target this conversation or their settings do not offer is refused naming the field."""
    value = value.strip()
    if value == Target.USER:
        return RuleTarget(Target.USER)
    if value == Target.AGENT and conversation.agent is not None:
        return RuleTarget(Target.AGENT)
    if value == Target.CONVERSATION and conversation.binding_id is not None:
        return RuleTarget(Target.CONVERSATION)
    kind, _, rest = value.partition(":")
    if kind in ("skill", "new") and not skills_allowed(person):
        raise ChangeRefused(
            gettext("target: rules may not go to skills (your setting or your organization).")
        )
    if kind == "skill":
        addon_id, _, name = rest.partition("/")
        skill = next(
            (s for s in person_skills(person) if s.addon_id == addon_id and s.name == name), None
        )
        if skill is None:
            raise AddonNotFound(gettext("target: you have no such skill."))
        return RuleTarget(Target.SKILL, skill.addon_id, skill.name, skill.title)
    if kind == "new" and _KEY.match(rest):
        existing = next(
            (s for s in person_skills(person) if s.addon_id == HOST_SKILLS and s.name == rest),
            None,
        )
        if existing is not None:
            return RuleTarget(Target.SKILL, HOST_SKILLS, existing.name, existing.title)
        title = next((title for slug, title, _ in VOCABULARY if slug == rest), rest)
        return RuleTarget(Target.NEW_SKILL, HOST_SKILLS, rest, title)
    raise ChangeRefused(gettext("target: choose where the rule goes from the list."))
