"""Reviewed imports (M23): memory exported from other tools waits in the Inbox, item by
item, with its provenance; nothing is written before the person confirms."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from addons.services import addon_setting_put
from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import (
    memory_change_request,
    proposal_confirm,
    proposals_decide_all,
)
from memory_addon.turns import Turn

pytestmark = pytest.mark.django_db

# The shapes the tools export (docs/memory-imports.md).
CHATGPT_TEXT = "Prefers concise answers.\nIs learning Rust.\n"
CHATGPT_JSON = json.dumps(["Prefers concise answers.", "Is learning Rust."])
CHATGPT_OBJECTS = json.dumps(
    {
        "memories": [
            {"id": "m-1", "content": "Prefers concise answers.", "created_at": "2025-03-02"},
            {"id": "m-2", "content": "Is learning Rust."},
        ]
    }
)
CLAUDE_MD = """**Work context**

The user is a backend developer at a logistics company, working mainly in Go.

**Personal context**

- Lives in Lyon
"""
MEM0_JSON = json.dumps(
    [
        {
            "id": "2f1c6b7e-3d1a-4f3e-9a7e-0c2b1d4e5f60",
            "memory": "Likes to play cricket on weekends",
            "hash": "285d07801ae42054732314853e9eadd7",
            "metadata": None,
            "created_at": "2024-07-26T10:29:36.630547-07:00",
            "updated_at": None,
            "user_id": "alex",
        },
        {
            "id": "6f0e2a58-8c1b-4e0d-b3a4-9d6c5b4a3f21",
            "memory": "Is a vegetarian",
            "metadata": {"category": "food"},
            "created_at": "2024-07-27T08:00:00-07:00",
            "user_id": "alex",
        },
    ]
)
AGENTS_MD = """# AGENTS.md

## Style
- Use ruff for formatting.
- Prefer pathlib over os.path.

```sh
make test
```
"""

SAMPLES = [
    ("chatgpt", CHATGPT_TEXT, ["Prefers concise answers.", "Is learning Rust."]),
    ("chatgpt", CHATGPT_JSON, ["Prefers concise answers.", "Is learning Rust."]),
    ("chatgpt", CHATGPT_OBJECTS, ["Prefers concise answers.", "Is learning Rust."]),
    (
        "claude",
        CLAUDE_MD,
        [
            "The user is a backend developer at a logistics company, working mainly in Go.",
            "Lives in Lyon",
        ],
    ),
    ("mem0", MEM0_JSON, ["Likes to play cricket on weekends", "Is a vegetarian"]),
    ("agents_md", AGENTS_MD, ["Use ruff for formatting.", "Prefer pathlib over os.path."]),
]


def _index(scope) -> str:
    row = MemoryFile.objects.filter(scope=scope, path="index.md").first()
    return row.content if row else ""


def _import(api, kind, text, file_name="export.txt"):
    return api.post("/api/memory/imports", {"kind": kind, "text": text, "file_name": file_name})


@pytest.mark.parametrize(("kind", "text", "notes"), SAMPLES)
def test_each_format_becomes_pending_proposals_and_nothing_is_written(
    api, user, scope, kind, text, notes
):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    answer = _import(api, kind, text)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert [p["operation"]["text"] for p in body["proposals"]] == notes
    assert [p["provenance"]["item"] for p in body["proposals"]] == list(range(1, len(notes) + 1))
    assert {p["provenance"]["kind"] for p in body["proposals"]} == {kind}
    assert Proposal.objects.filter(user=user, state=Proposal.State.PENDING).count() == len(notes)
    assert _index(scope) == "" and not ChangeSet.objects.filter(user=user).exists()


def test_mem0_ids_and_dates_are_kept_as_provenance(api, user):
    first = _import(api, "mem0", MEM0_JSON, "mem0.json").json()["proposals"][0]
    assert first["provenance"] == {
        "kind": "mem0",
        "file": "mem0.json",
        "item": 1,
        "line": 0,
        "original_id": "2f1c6b7e-3d1a-4f3e-9a7e-0c2b1d4e5f60",
        "original_date": "2024-07-26T10:29:36.630547-07:00",
    }
    assert first["operation"]["created"] == "2024-07-26"
    assert first["source"] == "import"


def test_the_inbox_card_shows_the_provenance(client, api, user):
    _import(api, "mem0", MEM0_JSON, "mem0.json")
    html = client.get(reverse("inbox")).content.decode()
    assert html.count("data-provenance") == 2
    assert "Imported from a mem0 export" in html and "mem0.json" in html
    assert "id 2f1c6b7e-3d1a-4f3e-9a7e-0c2b1d4e5f60" in html
    assert "dated 2024-07-26T10:29:36.630547-07:00" in html


def test_items_already_saved_are_marked_as_duplicates_and_conflicts_are_flagged(api, user, scope):
    file_write(
        user=user,
        scope=scope,
        path="index.md",
        content="Is a vegetarian\n\nEditor: Vim\n",
        base_sha256="",
    )
    body = _import(api, "chatgpt", "Is a vegetarian\nEditor: Emacs\nHas a dog\n").json()
    assert (body["duplicates"], body["conflicts"]) == (1, 1)
    duplicate, conflict, plain = body["proposals"]
    assert duplicate["conflict"]["kind"] == "duplicate"
    assert conflict["conflict"]["kind"] == "topic" and conflict["conflict"]["text"] == "Editor: Vim"
    assert plain["conflict"] is None


def test_an_item_the_file_holds_twice_is_proposed_once(api, user):
    body = _import(api, "chatgpt", "Is learning Rust.\n- is learning rust.\n").json()
    assert len(body["proposals"]) == 1 and body["repeated"] == 1


def test_a_secret_in_an_item_refuses_the_import_naming_the_item(api, user):
    text = "Likes tea.\nMy key is sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c\n"
    answer = _import(api, "chatgpt", text)
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("item 2:")
    assert not Proposal.objects.filter(user=user).exists()


def test_more_items_than_the_bound_are_refused_with_the_bound(api, user, settings):
    settings.MEMORY_IMPORT_MAX_ITEMS = 2
    answer = _import(api, "chatgpt", "a note\nb note\nc note\n")
    assert answer.status_code == 400
    assert "holds 3 memories; an import takes at most 2" in answer.json()["detail"]
    assert not Proposal.objects.filter(user=user).exists()


@pytest.mark.parametrize(
    ("kind", "text", "named"),
    [
        ("mem0", '[{"memory": "ok"},\n {"id": 2}]', "item 2: field 'memory' is missing"),
        ("mem0", '[{"memory": "ok"},\n oops]', "line 2: not valid JSON"),
        ("chatgpt", '{"items": []}', "line 1: expected a JSON list"),
        ("agents_md", "- fine\n- has <!-- a marker -->\n", "line 2:"),
        ("chatgpt", "x" * 301, "line 1: An entry holds at most 300 characters"),
    ],
)
def test_a_bad_file_is_a_400_naming_the_line_or_field(api, user, kind, text, named):
    answer = _import(api, kind, text)
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith(named), answer.json()
    assert answer.json()["field"] == "file"


def test_a_bad_kind_is_a_422_naming_the_field(api):
    answer = _import(api, "notion", "a note")
    assert answer.status_code == 422 and "kind" in json.dumps(answer.json())


def test_the_inbox_form_imports_an_uploaded_file(client, user, scope):
    client.force_login(user)
    upload = SimpleUploadedFile("mem0.json", MEM0_JSON.encode(), content_type="application/json")
    answer = client.post(
        reverse("inbox_import"), {"kind": "mem0", "file": upload}, HTTP_HX_REQUEST="true"
    )
    assert answer.status_code == 204 and answer["HX-Redirect"] == reverse("inbox")
    assert Proposal.objects.filter(user=user, provenance__file="mem0.json").count() == 2
    page = client.get(reverse("inbox")).content.decode()
    assert "2 memories wait for you below" in page
    assert _index(scope) == ""


def test_the_inbox_form_takes_pasted_text_without_htmx(client, user):
    client.force_login(user)
    answer = client.post(reverse("inbox_import"), {"kind": "chatgpt", "text": CHATGPT_TEXT})
    assert answer.status_code == 302
    assert Proposal.objects.filter(user=user, provenance__kind="chatgpt").count() == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "mem0", "text": "[oops"}, "line 1: not valid JSON"),
        ({"kind": "evernote", "text": "a"}, "kind must be one of"),
        ({"kind": "chatgpt", "text": ""}, "The file holds no memories to import."),
    ],
)
def test_a_bad_file_in_the_inbox_form_is_a_form_error(client, user, data, message):
    client.force_login(user)
    answer = client.post(reverse("inbox_import"), data, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    html = answer.content.decode()
    assert 'id="inbox-import"' in html and message in html
    plain = client.post(reverse("inbox_import"), data)
    assert plain.status_code == 400 and message in plain.content.decode()


def test_a_file_over_the_size_cap_is_a_form_error(client, user, settings):
    settings.MEMORY_IMPORT_MAX_BYTES = 10
    client.force_login(user)
    upload = SimpleUploadedFile("big.txt", b"a long note\n" * 3)
    answer = client.post(
        reverse("inbox_import"), {"kind": "chatgpt", "file": upload}, HTTP_HX_REQUEST="true"
    )
    assert "The file has 36 bytes; an import takes at most 10." in answer.content.decode()
    assert not Proposal.objects.filter(user=user).exists()


def test_imported_items_are_decided_one_by_one_and_all_at_once(api, user, scope):
    proposals = Proposal.objects.filter(
        pk__in=[p["id"] for p in _import(api, "mem0", MEM0_JSON).json()["proposals"]]
    ).order_by("id")
    first, second = list(proposals)
    proposal_confirm(user=user, proposal=first)
    assert [e.text for e in entries.machine_entries(_index(scope))] == [
        "Likes to play cricket on weekends"
    ]
    result = proposals_decide_all(user=user, proposal_ids=[second.pk], decision="confirm")
    assert result.decided == [second] and not result.refused
    assert [e.created for e in entries.machine_entries(_index(scope))] == [
        "2024-07-26",
        "2024-07-27",
    ]


def test_an_import_does_not_push_the_models_proposals_out(api, user, settings):
    settings.MEMORY_MAX_PENDING_PROPOSALS = 2
    waiting = memory_change_request(
        turn=Turn(user=user), operation={"action": "add", "text": "Has a cat."}
    ).proposal
    _import(api, "chatgpt", "a note\nb note\nc note\n")
    waiting.refresh_from_db()
    assert waiting.state == Proposal.State.PENDING
    assert Proposal.objects.filter(user=user, state=Proposal.State.PENDING).count() == 4


def test_confirm_all_in_the_inbox_saves_an_imports_items(client, api, user, scope):
    ids = [p["id"] for p in _import(api, "chatgpt", CHATGPT_TEXT).json()["proposals"]]
    answer = client.post(
        reverse("inbox_decide_all"),
        {"decision": "confirm", "proposal": ids},
        HTTP_HX_REQUEST="true",
    )
    assert answer.status_code == 200 and "Saved 2 notes to memory." in answer.content.decode()
    assert [e.text for e in entries.machine_entries(_index(scope))] == [
        "Prefers concise answers.",
        "Is learning Rust.",
    ]


def test_a_bad_file_is_refused_in_german_for_a_german_browser(client, user):
    client.force_login(user)
    answer = client.post(
        reverse("inbox_import"),
        {"kind": "mem0", "text": '[{"id": 1}]'},
        HTTP_HX_REQUEST="true",
        HTTP_ACCEPT_LANGUAGE="de",
    )
    assert "Eintrag 1: das Feld &#x27;memory&#x27; fehlt" in answer.content.decode()


def test_the_inbox_form_needs_its_csrf_token(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    answer = client.post(reverse("inbox_import"), {"kind": "chatgpt", "text": CHATGPT_TEXT})
    assert answer.status_code == 403
    assert not Proposal.objects.filter(user=user).exists()
    page = client.get(reverse("inbox")).content.decode()
    form = page.split('id="inbox-import"')[1].split("</form>")[0]
    assert 'name="csrfmiddlewaretoken"' in form
