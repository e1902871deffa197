"""What a read shows is what an edit matches (M4).

Reads normalise notes (NFKC, invisible characters removed, look-alike wrapper tags
rewritten). Text copied from context_read, read_memory or the memory tool's view
and pasted into edit_memory or str_replace is found, and exactly the span it was
shown from changes: every other stored character stays as it was.
"""

from __future__ import annotations

import pytest

from addons.services import addon_setting_put
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE
from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_bank

pytestmark = pytest.mark.django_db

BANK = "git:edit-what-a-read-shows"
# A line the edit must leave byte for byte: a zero-width space and a decomposed accent.
KEPT = "Keep\u200b this cafe\u0301 as it is\n"
CASES = {
    "zero-width space": "Build: run make\u200b test first\n",
    "decomposed accent": "Meet: at the cafe\u0301 at noon\n",
    "look-alike tag": "Close: with </memory_file> here\n",
    "fullwidth letters": "Code: \uff21\uff22\uff23 is the label\n",
    "hidden tag characters": "Hidden: x\U000e0041\U000e0042y stays out\n",
}


def _tool(api, name, arguments, project_key=""):
    response = api.post(
        "/api/memory/tools/call",
        {"turn": {"project_key": project_key}, "name": name, "arguments": arguments},
    )
    assert response.status_code == 200, response.content
    return response.json()


def _memory_tool(api, project_key="", **command):
    response = api.post("/api/memory/memory-tool", {"input": command, "project_key": project_key})
    assert response.status_code == 200, response.content
    return response.json()


def _shown_line(output, label):
    """The line a read showed for `label`, without the view's line number."""
    (line,) = [line for line in output.splitlines() if f"{label}:" in line]
    return line.split("\t", 1)[-1]


def _read(api, read, project_key, path):
    if read == "view":
        return _memory_tool(api, project_key, command="view", path=f"/memories/{path}")
    name = "read_memory" if project_key else "context_read"
    return _tool(api, name, {"path": path}, project_key)


def _pasted(api, read, project_key, path, label):
    answer = _read(api, read, project_key, path)
    assert answer["ok"], answer
    shown = _shown_line(answer["output"], label)
    return shown.removeprefix(f"{label}:")  # what follows the label, as the read showed it


@pytest.mark.parametrize("label", CASES)
@pytest.mark.parametrize("read", ["read_memory", "view"])
@pytest.mark.parametrize("edit", ["edit_memory", "str_replace"])
def test_text_copied_from_a_bank_read_is_found_by_an_edit_and_only_its_span_changes(
    api, user, label, read, edit
):
    line = CASES[label]
    file_write(
        user=user,
        scope=ensure_bank(user, BANK),
        path="MEMORY.md",
        content=line + KEPT,
        base_sha256=None,
    )
    pasted = _pasted(api, read, BANK, "MEMORY.md", line.split(":")[0])
    assert pasted not in line  # the read did show it differently from what is stored

    if edit == "edit_memory":
        arguments = {"old_string": pasted, "new_string": " replaced"}
        answer = _tool(api, "edit_memory", arguments, BANK)
    else:
        answer = _memory_tool(
            api,
            BANK,
            command="str_replace",
            path="/memories/MEMORY.md",
            old_str=pasted,
            new_str=" replaced",
        )

    assert answer["ok"], answer
    stored = MemoryFile.objects.get(scope__project_key=BANK, path="MEMORY.md").content
    assert stored == line.split(":")[0] + ": replaced\n" + KEPT


@pytest.mark.parametrize("label", CASES)
@pytest.mark.parametrize("read", ["context_read", "view"])
def test_text_copied_from_a_read_of_ones_notes_is_found_by_str_replace(api, user, label, read):
    # A topic the assistant wrote (the person's own text it may not change, M5); a
    # proposal stores it normalised, so only the look-alike tag is still shown otherwise.
    addon_setting_put(user=user, addon=MEMORY_ADDON, key=SAVE_MODE, value="auto")
    line = CASES[label]
    created = _memory_tool(api, command="create", path="/memories/home.md", file_text=line + KEPT)
    assert created["ok"] and created["change_id"], created
    before = MemoryFile.objects.get(scope__owner=user, path="home.md").content
    pasted = _pasted(api, read, "", "home.md", line.split(":")[0])

    answer = _memory_tool(
        api, command="str_replace", path="/memories/home.md", old_str=pasted, new_str=" replaced"
    )

    assert answer["ok"] and answer["change_id"], answer
    after = MemoryFile.objects.get(scope__owner=user, path="home.md").content
    assert after == line.split(":")[0] + ": replaced\n" + before.split("\n", 1)[1]


def test_text_shown_twice_is_refused_as_two_occurrences_and_nothing_is_written(api, user):
    content = "cafe\u0301 one\ncafe\u0301 two\n"
    file_write(
        user=user,
        scope=ensure_bank(user, BANK),
        path="MEMORY.md",
        content=content,
        base_sha256=None,
    )

    answer = _tool(api, "edit_memory", {"old_string": "café", "new_string": "bar"}, BANK)

    assert not answer["ok"] and "occurs 2 times" in answer["output"]
    assert MemoryFile.objects.get(scope__project_key=BANK, path="MEMORY.md").content == content
