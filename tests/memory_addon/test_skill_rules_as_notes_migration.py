"""Learned rules stored before M21 become notes under Memory/skills/ on migrate."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from addons.models import SkillRule
from memory_addon.models import MemoryFile
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("memory_addon.migrations.0008_skill_rules_as_notes")


def test_rules_kept_before_skills_became_notes_are_written_as_notes_once():
    person = UserFactory()
    SkillRule.objects.create(user=person, addon_id="memory", skill="memory", text="Be brief.")
    migration.rules_to_notes(apps, None)
    migration.rules_to_notes(apps, None)  # run twice: the note is not written again
    [note] = MemoryFile.objects.filter(scope__owner=person, path="skills/memory/memory.md")
    assert "- Be brief." in note.content
