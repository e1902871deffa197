"""Where a confirmed rule goes (M13, M21), through the rule card, Remember as rule and the page."""

from __future__ import annotations

import json

import pytest

from accounts.models import Membership
from addons.errors import AddonNotFound
from addons.models import HOST_SKILLS, HostSkill, SkillRule
from addons.services import addon_setting_put, host_skill_create, skill_rules_save, skill_tags_set
from host.errors import Refusal
from learning.models import RuleSuggestion
from learning.selectors import rule_cards_for
from learning.services import rules
from memory_addon.models import ChangeSet, MemoryFile
from tests.factories import OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db


def rule_reply(text: str) -> dict:
    return {"content": json.dumps({"rule": text, "target": "user"})}


@pytest.fixture
def card(fake_openai, answered, django_capture_on_commit_callbacks):
    """A rule card under an answer, as detection leaves it (the fake model found the rule)."""

    def make(message: str, rule: str) -> RuleSuggestion:
        _, answer = answered(message)
        fake_openai.chat_replies.append(rule_reply(rule))
        with django_capture_on_commit_callbacks(execute=False):
            suggestion = rules.rule_check_after_answer(answer_id=answer.pk)
        assert suggestion is not None
        rules.rule_detect(suggestion_id=suggestion.pk)
        suggestion.refresh_from_db()
        assert suggestion.state == RuleSuggestion.State.PENDING
        return suggestion

    return make


def skill_rules_of(person, addon_id: str, skill: str) -> str:
    row = SkillRule.objects.filter(user=person, addon_id=addon_id, skill=skill).first()
    return row.text if row else ""


def note(person, path: str) -> str:
    row = MemoryFile.objects.filter(scope__owner=person, scope__kind="user", path=path).first()
    return row.content if row else ""


def test_a_rule_on_a_tagged_topic_goes_to_that_skills_learned_rules(person, card):
    host_skill_create(user=person, name="cooking", title="Cooking")
    skill_tags_set(user=person, addon_id=HOST_SKILLS, skill="cooking", topics=["recipes"])
    suggestion = card("From now on, give recipes in grams.", "Give recipes in grams.")
    [shown] = rule_cards_for(person.pk, [suggestion.answer_id])[suggestion.answer_id]
    assert shown.file == "Memory/skills/cooking.md"
    saved = rules.rule_save(user=person, suggestion=suggestion, text=suggestion.text)
    assert skill_rules_of(person, HOST_SKILLS, "cooking") == "Give recipes in grams."
    assert "- Give recipes in grams." in note(person, "skills/cooking.md")
    assert saved.change_set.source == ChangeSet.Source.LEARNING
    assert note(person, "index.md") == ""


def test_a_rule_about_a_known_language_starts_a_new_skill_marked_new_until_opened(
    person, card, client
):
    suggestion = card("From now on, always use type hints in Python.", "Use type hints in Python.")
    assert (suggestion.target, suggestion.skill_name) == ("new_skill", "python")
    rules.rule_save(user=person, suggestion=suggestion, text=suggestion.text)
    skill = HostSkill.objects.get(owner=person, name="python")
    assert skill.created_by_assistant and skill.is_new
    assert skill_rules_of(person, HOST_SKILLS, "python") == "Use type hints in Python."
    client.force_login(person)
    listed = client.get("/addons/skills/").content.decode()
    assert "NEW · created by the assistant" in listed and "+1 rule" in listed
    assert client.get("/addons/skills/_host/python/").status_code == 200
    assert "NEW · created by the assistant" not in client.get("/addons/skills/").content.decode()


def test_a_host_made_skill_with_rules_is_sent_along_in_turns(person, client):
    host_skill_create(user=person, name="python", title="Python")
    skill_rules_save(user=person, addon_id=HOST_SKILLS, skill="python", text="Use type hints.")
    client.force_login(person)
    turn = client.post(
        "/api/memory/turn-context", {"context_window": 8192}, content_type="application/json"
    ).json()
    sent = next(s for s in turn["addons"]["skills"] if s["name"] == "python")
    assert sent["addon"] == HOST_SKILLS and sent["rules"] == 1
    assert "- Use type hints." in turn["addons_block"]


def test_a_skill_the_person_tagged_beats_a_built_in_topic(person, answered):
    host_skill_create(user=person, name="my-notes", title="My notes")
    skill_tags_set(user=person, addon_id=HOST_SKILLS, skill="my-notes", topics=["notes"])
    question, _ = answered("Keep notes short.")
    saved = rules.rule_remember(user=person, message=question, text="Keep notes short.")
    assert (saved.target, saved.skill_addon, saved.skill_name) == ("skill", HOST_SKILLS, "my-notes")


def test_a_built_in_skill_takes_a_rule_on_its_own_topic(person, answered):
    question, _ = answered("Never keep notes about my health.")
    saved = rules.rule_remember(user=person, message=question, text=question.content)
    assert (saved.target, saved.skill_addon, saved.skill_name) == ("skill", "memory", "memory")
    assert skill_rules_of(person, "memory", "memory") == question.content


def test_undo_takes_a_skill_rule_back(person, card):
    suggestion = card("From now on, always use type hints in Python.", "Use type hints in Python.")
    saved = rules.rule_save(user=person, suggestion=suggestion, text=suggestion.text)
    rules.rule_undo(user=person, suggestion=saved)
    assert skill_rules_of(person, HOST_SKILLS, "python") == ""
    assert note(person, "skills/python.md") == ""
    assert not HostSkill.objects.filter(owner=person).exists()  # made for that rule only


def test_the_save_to_choice_overrides_the_router(person, card):
    suggestion = card("From now on, always use type hints in Python.", "Use type hints in Python.")
    rules.rule_save(user=person, suggestion=suggestion, text=suggestion.text, target="user")
    assert "Use type hints in Python." in note(person, "index.md")
    assert not HostSkill.objects.filter(owner=person).exists()


def test_someone_elses_skill_as_save_to_is_not_found_and_nothing_is_saved(person, card, client):
    stranger = UserFactory()
    host_skill_create(user=stranger, name="secret-project", title="Secret project")
    suggestion = card("From now on, answer me in British English.", "Answer in British English.")
    with pytest.raises(AddonNotFound):
        rules.rule_save(
            user=person,
            suggestion=suggestion,
            text=suggestion.text,
            target=f"skill:{HOST_SKILLS}/secret-project",
        )
    client.force_login(person)
    page = client.post(
        f"/learning/rules/{suggestion.pk}/save/",
        {"text": suggestion.text, "target": f"skill:{HOST_SKILLS}/secret-project"},
        follow=True,
    )
    assert page.status_code == 200
    assert "target: you have no such skill" in page.content.decode()
    suggestion.refresh_from_db()
    assert suggestion.state == RuleSuggestion.State.PENDING
    assert not SkillRule.objects.filter(skill="secret-project", user=person).exists()


def test_an_unknown_save_to_choice_is_a_form_error_naming_the_field(person, card, client):
    suggestion = card("From now on, answer me in British English.", "Answer in British English.")
    client.force_login(person)
    page = client.post(
        f"/learning/rules/{suggestion.pk}/save/",
        {"text": suggestion.text, "target": "somewhere"},
        follow=True,
    )
    assert page.status_code == 200 and "target: choose where the rule goes" in page.content.decode()


def _skills_off(how: str, person) -> None:
    if how == "person":
        addon_setting_put(user=person, addon="memory", key="skill-rules", value=False)
    else:
        Membership.objects.create(
            organization=OrganizationFactory(skills_enabled=False), user=person
        )


@pytest.mark.parametrize("how", ["person", "policy"])
def test_with_skills_not_allowed_rules_go_to_memory_and_skills_cannot_be_chosen(
    person, answered, how
):
    _skills_off(how, person)
    question, _ = answered("From now on, always use type hints in Python.")
    saved = rules.rule_remember(user=person, message=question, text="Use type hints in Python.")
    assert saved.target == "user" and "type hints" in note(person, "index.md")
    with pytest.raises(Refusal, match="target"):
        rules.rule_remember(
            user=person, message=question, text="Use tabs in Python.", target="new:python"
        )
    assert not HostSkill.objects.filter(owner=person).exists()


def test_a_card_shown_while_skills_were_allowed_saves_to_memory_once_they_are_not(person, card):
    suggestion = card("From now on, always use type hints in Python.", "Use type hints in Python.")
    _skills_off("person", person)
    saved = rules.rule_save(user=person, suggestion=suggestion, text=suggestion.text)
    assert saved.target == "user" and "type hints" in note(person, "index.md")


def _refuse(how: str, person, settings) -> None:
    if how == "kill switch":
        settings.MEMORY_AI_MEMORY = "off"
    elif how == "save mode never":
        addon_setting_put(user=person, addon="memory", key="save-mode", value="never")
    else:
        Membership.objects.create(organization=OrganizationFactory(memory_mode=how), user=person)


@pytest.mark.parametrize("how", ["kill switch", "save mode never", "read_only", "off"])
def test_a_skill_rule_is_refused_under_the_rules_of_every_memory_write(person, card, settings, how):
    suggestion = card("From now on, always use type hints in Python.", "Use type hints in Python.")
    _refuse(how, person, settings)
    with pytest.raises(Refusal):
        rules.rule_save(user=person, suggestion=suggestion, text=suggestion.text)
    assert not SkillRule.objects.filter(user=person).exists()
    assert not HostSkill.objects.filter(owner=person).exists()


def test_a_secret_in_a_skill_rule_is_refused(person, answered):
    question, _ = answered("From now on, use this Python token.")
    with pytest.raises(Refusal, match="secret"):
        rules.rule_remember(
            user=person,
            message=question,
            text="Python token ghp_" + "a1B2" * 9,
            target="new:python",
        )
    assert not SkillRule.objects.filter(user=person).exists()


def test_remember_as_rule_offers_save_to_and_the_page_saves_where_chosen(
    person, conversation, answered, client
):
    host_skill_create(user=person, name="python", title="Python")
    question, _ = answered("Always use type hints in Python.")
    client.force_login(person)
    page = client.get(f"/chat/{conversation.pk}/").content.decode()
    assert f'id="remember-target-{question.pk}"' in page
    assert f'value="skill:{HOST_SKILLS}/python"' in page
    client.post(
        f"/learning/messages/{question.pk}/remember/",
        {"text": "Use type hints in Python.", "target": "user"},
    )
    assert "Use type hints in Python." in note(person, "index.md")
    client.post(
        f"/learning/messages/{question.pk}/remember/",
        {"text": "Use type hints everywhere in Python.", "target": ""},
    )
    assert skill_rules_of(person, HOST_SKILLS, "python") == "Use type hints everywhere in Python."


def test_a_rule_naming_a_bridged_conversation_goes_to_that_conversations_memory(person, profile):
    from accounts.services import messaging_binding_create
    from chat.models import Conversation, Message
    from memory_addon.services.scopes import ensure_channel_scope

    binding, _ = messaging_binding_create(owner=person, bridge="telegram", external_id="chat-7")
    conversation = Conversation.objects.create(
        owner=person, ai_profile=profile, binding=binding, external_chat="7"
    )
    question = Message.objects.create(
        conversation=conversation, role="user", content="In this chat, always answer in French."
    )
    saved = rules.rule_remember(user=person, message=question, text=question.content)
    assert saved.target == "conversation"
    scope = ensure_channel_scope(binding, conversation.chat_key)
    assert "answer in French" in MemoryFile.objects.get(scope=scope, path="index.md").content
    assert note(person, "index.md") == ""
