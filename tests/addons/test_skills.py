"""Skills (M21) through the REST API and the skill pages: ownership, tags, edits, deletion,
statistics, and the learned rules and host-made skills in the memory export and restore."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.test import Client

from addons.models import HOST_SKILLS, HostSkill, SkillRule, SkillUse
from addons.services import host_skill_create, skill_rules_save, skill_uses_record
from memory_addon.models import ChangeSet
from memory_addon.services.changes import change_set_undo
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def person():
    return UserFactory()


@pytest.fixture
def api(person) -> Client:
    client = Client()
    client.force_login(person)
    return client


def put(client: Client, url: str, body: dict):
    return client.put(url, body, content_type="application/json")


def test_a_skill_is_made_tagged_edited_and_deleted_through_the_api(api, person):
    made = api.post(
        "/api/skills/", {"name": "python", "title": "Python"}, content_type="application/json"
    )
    assert made.status_code == 201, made.content
    assert made.json()["host_made"] and not made.json()["new"]  # made by the person
    tagged = put(api, "/api/skills/_host/python/tags", {"topics": ["Python", "pytest"]})
    assert tagged.json()["tags"] == ["pytest", "python"]
    rules = put(api, "/api/addons/_host/skills/python/rules", {"text": "Use type hints."})
    assert rules.status_code == 200, rules.content
    edited = put(api, "/api/skills/_host/python", {"title": "Python 3", "instructions": "PEP 8."})
    assert edited.json()["title"] == "Python 3" and edited.json()["rules"] == ["Use type hints."]
    listed = {(s["addon"], s["name"]) for s in api.get("/api/skills/").json()}
    assert {("memory", "memory"), (HOST_SKILLS, "python")} <= listed
    assert api.delete("/api/skills/_host/python").status_code == 204
    assert not HostSkill.objects.filter(owner=person).exists()
    assert not SkillRule.objects.filter(user=person).exists()
    # The rules note went by a change set: undoing it brings skill and rules back.
    deletion = ChangeSet.objects.filter(user=person).latest("pk")
    change_set_undo(user=person, change_set=deletion, source=ChangeSet.Source.API)
    assert HostSkill.objects.filter(owner=person, name="python").exists()
    assert SkillRule.objects.get(user=person, skill="python").text == "Use type hints."


def test_an_add_on_skill_is_tagged_but_not_edited_or_deleted(api):
    assert put(api, "/api/skills/memory/memory/tags", {"topics": ["units"]}).json()["tags"] == [
        "units"
    ]
    assert put(api, "/api/skills/memory/memory", {"title": "Mine"}).status_code == 403
    assert api.delete("/api/skills/memory/memory").status_code == 403


def test_someone_elses_skill_is_not_found_on_every_endpoint(api, client):
    stranger = UserFactory()
    host_skill_create(user=stranger, name="private", title="Private")
    base = "/api/skills/_host/private"
    assert api.get(base).status_code == 404
    assert put(api, base, {"title": "Mine"}).status_code == 404
    assert api.delete(base).status_code == 404
    assert put(api, f"{base}/tags", {"topics": ["x"]}).status_code == 404
    assert api.get("/api/addons/_host/skills/private/rules").status_code == 404
    assert put(api, "/api/addons/_host/skills/private/rules", {"text": "Mine."}).status_code == 404
    assert api.get("/addons/skills/_host/private/").status_code == 404
    assert api.post("/addons/skills/_host/private/delete/").status_code == 404
    assert HostSkill.objects.filter(owner=stranger).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "Not A Key", "title": "x"}, "name"),
        ({"name": "ok", "title": "x", "instructions": "token ghp_" + "a1B2" * 9}, "instructions"),
    ],
)
def test_a_bad_new_skill_is_a_4xx_naming_the_field(api, body, field):
    response = api.post("/api/skills/", body, content_type="application/json")
    assert 400 <= response.status_code < 500 and field in response.json()["detail"]


def test_a_rule_over_300_characters_is_refused_on_every_path_to_the_rules_note(api, person):
    host_skill_create(user=person, name="python", title="Python")
    long_rule = "Use " + "very " * 70 + "long rules."
    response = put(api, "/api/addons/_host/skills/python/rules", {"text": long_rule})
    assert response.status_code == 400 and "300" in response.json()["detail"]
    scope_id = api.get("/api/memory/scopes").json()[0]["id"]
    written = put(
        api,
        f"/api/memory/scopes/{scope_id}/file?path=skills/python.md",
        {"content": f"# Learned rules: Python\n\n- {long_rule}\n"},
    )
    assert written.status_code == 400 and "300" in written.json()["detail"]
    assert not SkillRule.objects.filter(user=person).exists()


def test_statistics_count_each_sending_and_show_on_the_skills_page(api, person):
    skill_uses_record(user_id=person.pk, skills=[("memory", "memory")])
    skill_uses_record(user_id=person.pk, skills=[("memory", "memory"), ("memory", "x")])
    assert SkillUse.objects.get(user=person, skill="memory").sent_count == 2
    page = api.get("/addons/skills/memory/memory/").content.decode()
    assert "2 times" in page


def test_a_chat_turn_sends_a_host_made_skill_lists_it_in_sent_along_and_counts_it(
    person, fake_openai, api
):
    from chat.models import Conversation, Message
    from chat.runner import turn_run
    from tests.factories import AIProfileFactory

    host_skill_create(user=person, name="python", title="Python")
    skill_rules_save(user=person, addon_id=HOST_SKILLS, skill="python", text="Use type hints.")
    profile = AIProfileFactory(owner=person, base_url=fake_openai.base_url, model="fake-model")
    conversation = Conversation.objects.create(owner=person, ai_profile=profile)
    Message.objects.create(conversation=conversation, role="user", content="Hello")
    answer = Message.objects.create(conversation=conversation, role="assistant", state="streaming")
    fake_openai.chat_replies.append({"content": "Hi."})
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    sent = [(s["addon"], s["name"]) for s in answer.sent_along["addons"]["skills"]]
    assert (HOST_SKILLS, "python") in sent
    assert "Use type hints." in fake_openai.prompt(0)
    for addon_id, name in sent:
        use = SkillUse.objects.get(user=person, addon_id=addon_id, skill=name)
        assert use.sent_count == 1 and use.last_sent_at is not None
    page = api.get(f"/chat/{conversation.pk}/").content.decode()
    assert "your skill</span> Python with 1 learned rule" in page


def test_export_and_restore_carry_learned_rules_and_host_made_skills(api, person):
    host_skill_create(user=person, name="python", title="Python")
    skill_rules_save(user=person, addon_id=HOST_SKILLS, skill="python", text="Use type hints.")
    skill_rules_save(user=person, addon_id="memory", skill="memory", text="Ask before saving.")
    archive = api.get("/api/memory/export").content
    names = zipfile.ZipFile(io.BytesIO(archive)).namelist()
    assert {"Memory/skills/python.md", "Memory/skills/memory/memory.md"} <= set(names)
    newcomer = UserFactory()
    client = Client()
    client.force_login(newcomer)
    restored = client.post("/api/memory/restore", {"archive": io.BytesIO(archive)})
    assert restored.status_code == 200, restored.content
    assert HostSkill.objects.get(owner=newcomer, name="python").title == "Python"
    assert SkillRule.objects.get(user=newcomer, skill="python").text == "Use type hints."
    assert SkillRule.objects.get(user=newcomer, addon_id="memory").text == "Ask before saving."


def test_learned_rules_are_kept_when_an_add_on_is_updated(person):
    skill_rules_save(user=person, addon_id="memory", skill="memory", text="Ask before saving.")
    # An update replaces the add-on's package and manifest; the rules are the person's note.
    from addons.models import InstalledAddon

    InstalledAddon.objects.filter(addon_id="memory").delete()
    assert SkillRule.objects.get(user=person, addon_id="memory").text == "Ask before saving."


def test_the_learning_switch_and_the_skill_setting_sit_next_to_the_save_mode(api):
    page = api.get("/addons/memory/").content.decode()
    for label in ("Saving a note", "Rule learning", "May create skills and save learned rules"):
        assert label in page
    assert put(api, "/api/addons/memory/settings/learning", {"value": "off"}).status_code == 200
    bad = put(api, "/api/addons/memory/settings/skill-rules", {"value": "maybe"})
    assert bad.status_code == 400 and "skill-rules" in bad.json()["detail"]
