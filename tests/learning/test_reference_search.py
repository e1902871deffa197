"""Search… for other tools' rule files in granted folders, and the Git-tree warning (M14)."""

from __future__ import annotations

import os
import re

import pytest
from django.test import Client

from knowledge.models import FolderGrant
from memory_addon.models import ReferenceFile
from memory_addon.services import reference_search, references
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

RULES = "# Rules\n\nUse pytest.\n"
KNOWN = {
    "CLAUDE.md": "Claude Code",
    "AGENTS.md": "Codex and other agents (AGENTS.md)",
    "app/GEMINI.md": "Gemini CLI",
    "app/QWEN.md": "Qwen Code",
    ".cursor/rules/style.mdc": "Cursor",
    ".github/copilot-instructions.md": "GitHub Copilot",
    ".kiro/steering/product.md": "Kiro",
    ".clinerules": "Cline",
    ".windsurfrules": "Windsurf",
}


@pytest.fixture
def granted(person, settings, tmp_path):
    root = tmp_path / "projects"
    root.mkdir()
    settings.KNOWLEDGE_ALLOWED_ROOTS = [str(tmp_path)]
    FolderGrant.objects.create(path=str(root), user=person)
    return root


def write(root, relative: str, text: str = RULES) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def search_page(client: Client, person, *, htmx: bool = False) -> str:
    client.force_login(person)
    headers = {"HX-Request": "true"} if htmx else {}
    response = client.get("/learning/references/search/", headers=headers)
    assert response.status_code == 200
    return response.text


def listed(page: str) -> list[str]:
    return re.findall(r'data-path="([^"]+)"', page)


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_search_lists_the_rule_files_of_known_tools_with_path_size_and_tool(
    client, person, granted, htmx
):
    for relative in KNOWN:
        write(granted, relative)
    for ignored in ("README.md", "node_modules/x/AGENTS.md", ".git/AGENTS.md", ".vscode/AGENTS.md"):
        write(granted, ignored)
    page = search_page(client, person, htmx=htmx)
    assert sorted(listed(page)) == sorted(str(granted / relative) for relative in KNOWN)
    for tool in set(KNOWN.values()):
        assert tool in page
    assert f"{len(RULES)}\xa0bytes" in page  # filesizeformat keeps the unit with the number
    assert "csrfmiddlewaretoken" in page
    assert ReferenceFile.objects.count() == 0  # a search adds nothing


def test_search_never_follows_links_out_of_the_grant_and_says_what_it_skipped(
    client, person, granted, tmp_path
):
    outside = tmp_path / "outside"
    write(outside, "AGENTS.md")
    write(outside, "deep/CLAUDE.md")
    (granted / "linked").symlink_to(outside / "deep", target_is_directory=True)
    (granted / "AGENTS.md").symlink_to(outside / "AGENTS.md")
    os.mkfifo(granted / "CLAUDE.md")
    page = search_page(client, person)
    assert listed(page) == []
    assert "symbolic link (not followed)" in page
    assert "not a regular file" in page
    assert str(outside) not in page


def test_search_stops_at_the_depth_the_entry_count_and_the_time_bound(person, granted, settings):
    write(granted, "a/b/c/AGENTS.md")
    write(granted, "CLAUDE.md")
    settings.REFERENCE_SEARCH_MAX_DEPTH = 2
    result = reference_search.reference_search(user=person)
    assert [f.path for f in result.found] == [str(granted / "CLAUDE.md")]
    assert result.too_deep == 1
    settings.REFERENCE_SEARCH_MAX_DEPTH = 6
    settings.REFERENCE_SEARCH_MAX_ENTRIES = 1
    assert reference_search.reference_search(user=person).stopped == "entries"
    settings.REFERENCE_SEARCH_MAX_ENTRIES = 20_000
    settings.REFERENCE_SEARCH_SECONDS = 0
    result = reference_search.reference_search(user=person)
    assert result.stopped == "time" and result.found == []


def test_search_looks_only_in_the_persons_own_grants(client, person, granted, tmp_path):
    other_root = tmp_path / "theirs"
    write(other_root, "AGENTS.md")
    FolderGrant.objects.create(path=str(other_root), user=UserFactory())
    write(granted, "CLAUDE.md")
    assert listed(search_page(client, person)) == [str(granted / "CLAUDE.md")]


def test_approving_a_found_file_goes_through_the_approval_with_digest_and_secret_guard(
    client, person, granted
):
    write(granted, "AGENTS.md")
    write(granted, "CLAUDE.md", RULES + "\ndb_password=Xk9#mQ2!vL7p\n")
    search_page(client, person)
    response = client.post("/learning/references/add/", {"path": str(granted / "AGENTS.md")})
    ref = ReferenceFile.objects.get(path=str(granted / "AGENTS.md"))
    assert response.status_code == 302 and response["Location"].endswith(f"/{ref.pk}/")
    sha = references.reference_review(ref).sha256
    assert sha in client.get(response["Location"]).text  # the digest is shown first
    assert ref.approved_sha256 == ""
    client.post(response["Location"], {"sha256": sha})
    ref.refresh_from_db()
    assert ref.approved_sha256 == sha
    assert "Already added: open" in search_page(client, person)
    response = client.post(
        "/learning/references/add/", {"path": str(granted / "CLAUDE.md")}, follow=True
    )
    assert "Not added" in response.text and "Line 5" in response.text
    assert not ReferenceFile.objects.filter(path=str(granted / "CLAUDE.md")).exists()


@pytest.mark.parametrize("git", ["folder", "file"])
def test_the_approval_page_warns_when_the_file_is_in_a_git_working_tree(
    client, person, granted, git
):
    write(granted, "repo/sub/AGENTS.md")
    if git == "folder":
        (granted / "repo" / ".git").mkdir()
    else:  # a linked worktree or submodule: .git is a file naming the real one
        (granted / "repo" / ".git").write_text("gitdir: /elsewhere\n")
    ref = references.reference_add_folder_file(
        user=person, path=str(granted / "repo" / "sub" / "AGENTS.md")
    )
    client.force_login(person)
    page = client.get(f"/learning/references/{ref.pk}/").text
    assert 'data-banner="git"' in page
    assert "checkout or pull" in page and "digest changes" in page


def test_no_git_warning_outside_a_working_tree_or_for_a_git_folder_above_the_grant(
    client, person, tmp_path, settings
):
    settings.KNOWLEDGE_ALLOWED_ROOTS = [str(tmp_path)]
    (tmp_path / ".git").mkdir()
    root = tmp_path / "projects"
    FolderGrant.objects.create(path=str(root), user=person)
    write(root, "plain/AGENTS.md")
    ref = references.reference_add_folder_file(user=person, path=str(root / "plain" / "AGENTS.md"))
    upload = references.reference_upload(user=person, name="CLAUDE.md", data=RULES.encode())
    client.force_login(person)
    for pk in (ref.pk, upload.pk):
        assert 'data-banner="git"' not in client.get(f"/learning/references/{pk}/").text


def test_the_search_page_speaks_german_with_the_skip_reasons_translated(client, person, granted):
    write(granted, "CLAUDE.md")
    (granted / "AGENTS.md").symlink_to(granted / "CLAUDE.md")
    client.force_login(person)
    page = client.get("/learning/references/search/", headers={"Accept-Language": "de"}).text
    assert "Gefunden in Ihren erlaubten Ordnern" in page and "Freigeben…" in page
    assert "symbolischer Link (nicht verfolgt)" in page


def test_a_folder_whose_name_is_not_utf8_is_listed_as_skipped_and_the_page_still_answers(
    client, person, granted
):
    odd = granted / os.fsdecode(b"caf\xe9")  # a Latin-1 name, as an old archive leaves it
    odd.mkdir()
    (odd / "AGENTS.md").write_text(RULES)
    write(granted, "CLAUDE.md")
    page = search_page(client, person)
    assert listed(page) == [str(granted / "CLAUDE.md")]
    assert "caf\ufffd" in page and "the name is not valid UTF-8" in page
