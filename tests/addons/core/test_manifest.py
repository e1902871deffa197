"""The manifest schema: a table of good and bad manifests, each error naming its field."""

from __future__ import annotations

import json

import pytest

from addons.core.manifest import ManifestError, Skill, manifest_parse
from memory_addon.addons import MEMORY_MANIFEST
from memory_addon.services.tools import CHAT_TOOLS
from tests.addons.conftest import manifest

SETTING = {
    "key": "tone",
    "label": "Tone",
    "type": "string",
    "choices": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}],
    "default": "a",
}
MINIMAL = {
    "api": 2,
    "id": "minimal",
    "name": "Minimal",
    "version": "0.1.0",
    "author": "Someone",
    "description": "",
}

GOOD = [
    ("minimal", MINIMAL),
    ("the example add-on", manifest()),
    ("pre-release version", {**MINIMAL, "version": "1.0.0-beta.2"}),
    (
        "boolean and integer settings",
        {
            **MINIMAL,
            "permissions": ["user-settings"],
            "settings": [
                {"key": "short", "label": "Short", "type": "boolean", "default": False},
                {
                    "key": "words",
                    "label": "Words",
                    "type": "integer",
                    "default": 50,
                    "minimum": 10,
                    "maximum": 500,
                },
            ],
        },
    ),
    (
        "a skill with tools",
        {
            **MINIMAL,
            "permissions": ["memory-tools"],
            "skills": [
                {
                    "name": "recall",
                    "description": "Look things up",
                    "instructions": "Read the index first.",
                    "allowedTools": ["context_read"],
                }
            ],
        },
    ),
    ("no per-person switch", {**MINIMAL, "userToggle": False}),
]

BAD = [
    ("not an object", [], "manifest: must be a JSON object"),
    ("api 1", {**MINIMAL, "api": 1}, "api: must be 2"),
    ("no api", {k: v for k, v in MINIMAL.items() if k != "api"}, "api: must be 2"),
    (
        "missing name",
        {k: v for k, v in MINIMAL.items() if k != "name"},
        "name: is required: add it",
    ),
    (
        "id with capitals",
        {**MINIMAL, "id": "Tone"},
        "id: 'Tone' does not fit: use 2 to 40 lowercase letters, digits or dashes, starting "
        "with a letter",
    ),
    ("id with a slash", {**MINIMAL, "id": "../x"}, "id: '../x' does not fit: use 2 to 40"),
    (
        "version not semver",
        {**MINIMAL, "version": "one"},
        "version: 'one' does not fit: use MAJOR.MINOR.PATCH",
    ),
    ("unknown top-level key", {**MINIMAL, "colour": "red"}, "colour: is not a field here"),
    (
        "misspelt top-level key",
        {**MINIMAL, "permisions": []},
        "permisions: is not a field here; did you mean 'permissions'?",
    ),
    (
        "misspelt permission",
        {**MINIMAL, "permissions": ["pagez"]},
        "permissions.0: 'pagez' is not allowed; did you mean 'pages'?",
    ),
    (
        "unknown permission",
        {**MINIMAL, "permissions": ["root"]},
        "permissions.0: 'root' is not allowed; input should be 'context-files'",
    ),
    (
        "setting without permission",
        {**MINIMAL, "settings": [SETTING]},
        "permissions: add 'user-settings'",
    ),
    (
        "setting of an unknown type",
        {**MINIMAL, "permissions": ["user-settings"], "settings": [{**SETTING, "type": "float"}]},
        "settings.0.type: 'float' is not allowed; input should be 'string'",
    ),
    (
        "default outside the choices",
        {**MINIMAL, "permissions": ["user-settings"], "settings": [{**SETTING, "default": "c"}]},
        "settings.0: default of tone must be one of: a, b",
    ),
    (
        "a choice of the wrong type",
        {
            **MINIMAL,
            "permissions": ["user-settings"],
            "settings": [{**SETTING, "choices": [{"value": 3, "label": "Three"}]}],
        },
        "settings.0: a choice of tone must be text",
    ),
    ("an empty author", {**MINIMAL, "author": ""}, "author: must not be empty"),
    ("a number for a name", {**MINIMAL, "name": 7}, "name: must be text, not a number"),
    (
        "too many context files",
        {**MINIMAL, "capabilities": {"contextFiles": [f"f{i}.md" for i in range(11)]}},
        "capabilities.contextFiles: has 11 items; at most 10 allowed",
    ),
    (
        "two settings with one key",
        {**MINIMAL, "permissions": ["user-settings"], "settings": [SETTING, SETTING]},
        "settings: two settings have the same key",
    ),
    (
        "a skill naming a tool the host lacks",
        {
            **MINIMAL,
            "permissions": ["memory-tools"],
            "skills": [
                {
                    "name": "x",
                    "description": "d",
                    "instructions": "i",
                    "allowedTools": ["shell"],
                }
            ],
        },
        "skills.0.allowedTools: unknown tool shell",
    ),
    (
        "a skill without instructions",
        {**MINIMAL, "skills": [{"name": "x", "description": "d", "instructions": " "}]},
        "skills.0.instructions: must not be empty",
    ),
    (
        "context file escaping the package",
        {
            **MINIMAL,
            "permissions": ["context-files"],
            "capabilities": {"contextFiles": ["../a.md"]},
        },
        "capabilities.contextFiles.0: must be a relative path",
    ),
    (
        "absolute context file",
        {**MINIMAL, "permissions": ["context-files"], "capabilities": {"contextFiles": ["/etc/x"]}},
        "capabilities.contextFiles.0: must be a relative path",
    ),
    (
        "context file without permission",
        {**MINIMAL, "capabilities": {"contextFiles": ["a.md"]}},
        "permissions: add 'context-files'",
    ),
    (
        "placeholder naming no setting",
        {
            **MINIMAL,
            "permissions": ["context-files"],
            "capabilities": {"contextFiles": ["context/{tone}.md"]},
        },
        "capabilities.contextFiles: {tone} in a file name must name a setting with choices; for "
        "any other setting write {{tone}} inside the file instead",
    ),
    (
        "a page that is not HTML",
        {**MINIMAL, "permissions": ["pages"], "pages": [{"path": "p.js", "title": "P"}]},
        "pages.0.path: a page must be an .html file",
    ),
    (
        "pages without permission",
        {**MINIMAL, "pages": [{"path": "p.html", "title": "P"}]},
        "permissions: add 'pages'",
    ),
    (
        "name too long",
        {**MINIMAL, "name": "x" * 201},
        "name: has 201 characters; at most 200 allowed",
    ),
]


@pytest.mark.parametrize(("case", "data"), GOOD, ids=[case for case, _ in GOOD])
def test_good_manifests_parse(case, data):
    parsed = manifest_parse(json.dumps(data))
    assert parsed.id == data["id"]
    assert manifest_parse(parsed.as_json()) == parsed  # what the host stores reads back


@pytest.mark.parametrize(("case", "data", "error"), BAD, ids=[case for case, _, _ in BAD])
def test_bad_manifests_are_refused_naming_the_field(case, data, error):
    with pytest.raises(ManifestError) as raised:
        manifest_parse(data)
    assert any(problem.startswith(error) for problem in raised.value.problems), (
        raised.value.problems
    )


def test_invalid_json_and_oversized_manifests_are_refused():
    with pytest.raises(ManifestError, match="not valid JSON"):
        manifest_parse(b"{nope")
    with pytest.raises(ManifestError, match="larger than 64 KiB"):
        manifest_parse(b" " * (64 * 1024 + 1))


def test_every_problem_is_listed_at_once():
    with pytest.raises(ManifestError) as raised:
        manifest_parse({**MINIMAL, "id": "X", "version": "v", "colour": 1})
    fields = [problem.split(":")[0] for problem in raised.value.problems]
    assert sorted(fields) == ["colour", "id", "version"]


def test_setting_values_are_checked_by_type_and_choice():
    parsed = manifest_parse(manifest())
    tone = parsed.setting("tone")
    assert tone.check("formal") == "formal"
    for bad, reason in [(3, "must be text"), ("loud", "must be one of"), (None, "must be text")]:
        with pytest.raises(ValueError, match=reason):
            tone.check(bad)


def test_the_memory_add_on_declares_its_two_skills_with_host_tools():
    assert [skill.name for skill in MEMORY_MANIFEST.skills] == ["memory", "memory-check-own-files"]
    host_tools = {tool["function"]["name"] for tool in CHAT_TOOLS}
    for skill in MEMORY_MANIFEST.skills:
        assert set(skill.allowed_tools) <= host_tools
    assert MEMORY_MANIFEST.setting("save-mode").default == "ask"


def test_context_file_placeholders_resolve_to_one_file_per_choice():
    parsed = manifest_parse(manifest())
    assert parsed.context_file_variants("context/{tone}.md") == [
        "context/friendly.md",
        "context/formal.md",
        "context/brief.md",
    ]
    assert parsed.resolve_context_file("context/{tone}.md", {"tone": "brief"}) == "context/brief.md"


def test_a_skill_without_a_title_is_shown_by_its_name_in_words():
    skill = Skill.model_validate(
        {"name": "tone-check", "description": "Checks the tone.", "instructions": "Be kind."}
    )
    assert skill.label == "Tone check"
    titled = Skill.model_validate(
        {
            "name": "tone-check",
            "title": "Kind words",
            "description": "Checks the tone.",
            "instructions": "Be kind.",
        }
    )
    assert titled.label == "Kind words"
