"""Server-rendered memory pages: they render, check ownership, and keep query counts flat."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from addons.services import addon_setting_put
from memory_addon.models import MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from tests.factories import AgentFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


def _queries(client, url):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return len(captured)


def _propose(user, n, start=0):
    for i in range(start, start + n):
        memory_change_request(
            turn=Turn(user=user, message_ref=f"m{i}", reply_ref_trusted=True),
            operation={"action": "add", "text": f"- t{i}: note {i} -> t{i}.md"},
        )


def test_inbox_query_count_does_not_grow_with_proposals(signed_in, user):
    _propose(user, 1)
    few = _queries(signed_in, "/inbox/")
    _propose(user, 6, start=1)
    assert Proposal.objects.filter(user=user).count() == 7
    assert _queries(signed_in, "/inbox/") == few


def test_memory_tab_query_count_does_not_grow_with_entries(signed_in, user, scope):
    file_write(user=user, scope=scope, path="index.md", content="- a: 1 -> a.md\n", base_sha256="")
    few = _queries(signed_in, f"/memory/?scope={scope.pk}")
    many = "".join(f"- e{i}: entry {i} -> e{i}.md\n" for i in range(35))
    file_write(user=user, scope=scope, path="index.md", content=many, base_sha256=None)
    assert _queries(signed_in, f"/memory/?scope={scope.pk}") == few


def test_history_query_count_does_not_grow_with_versions(signed_in, user, scope):
    file_write(user=user, scope=scope, path="a.md", content="v0\n", base_sha256=None)
    few = _queries(signed_in, f"/memory/{scope.pk}/history/")
    for i in range(1, 12):
        file_write(user=user, scope=scope, path="a.md", content=f"v{i}\n", base_sha256=None)
    assert _queries(signed_in, f"/memory/{scope.pk}/history/") == few


def test_files_and_audit_query_counts_do_not_grow(signed_in, user, scope):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    _propose(user, 1)
    file_write(user=user, scope=scope, path="a.md", content="x\n", base_sha256=None)
    files_few, audit_few = _queries(signed_in, "/files/"), _queries(signed_in, "/memory/audit/")
    _propose(user, 4, start=1)
    for i in range(8):
        file_write(user=user, scope=scope, path=f"f{i}.md", content="x\n", base_sha256=None)
    assert _queries(signed_in, "/files/") == files_few
    assert _queries(signed_in, "/memory/audit/") == audit_few


def test_another_users_scope_and_files_are_404(signed_in):
    stranger = UserFactory()
    scope = ensure_user_scope(stranger)
    file_write(user=stranger, scope=scope, path="a.md", content="theirs\n", base_sha256="")
    version = scope.versions.get()
    assert signed_in.get(f"/memory/?scope={scope.pk}").status_code == 404
    assert signed_in.get(f"/memory/{scope.pk}/history/").status_code == 404
    assert signed_in.get(f"/files/{scope.pk}/?path=a.md").status_code == 404
    assert (
        signed_in.post(f"/files/{scope.pk}/", {"path": "a.md", "action": "delete"}).status_code
        == 404
    )
    assert signed_in.get(f"/memory/versions/{version.pk}/restore/").status_code == 404
    assert MemoryFile.objects.filter(scope=scope).exists()


def test_entries_show_badges_and_what_is_sent(signed_in, user, scope, settings):
    settings.MEMORY_TURN_BUDGET_TOKENS = 12
    file_write(
        user=user,
        scope=scope,
        path="index.md",
        content="Short.\n\n" + "Long paragraph " * 10 + "\n",
        base_sha256="",
    )
    page = signed_in.get(f"/memory/?scope={scope.pk}").content.decode()
    assert page.count("Your text") == 2
    assert ">sent<" in page and ">not sent<" in page
    assert "1 item left out" in page


def test_adding_an_entry_by_hand_saves_it_as_the_persons_text(signed_in, user, scope):
    response = signed_in.post(
        f"/memory/{scope.pk}/entries/", {"text": "tea: likes green tea -> tea.md"}
    )
    assert response.status_code == 302
    assert (
        MemoryFile.objects.get(scope=scope, path="index.md").content
        == "- tea: likes green tea -> tea.md\n"
    )


def test_agent_editor_links_to_the_agents_memory(signed_in, user):
    agent = AgentFactory(owner=user, memory_allowed=True)
    page = signed_in.get(f"/accounts/agents/{agent.pk}/").content.decode()
    assert "Edit agent memory…" in page
    response = signed_in.get(f"/memory/agents/{agent.pk}/")
    assert response.status_code == 302 and "?scope=" in response["Location"]
    assert signed_in.get(response["Location"]).status_code == 200


def test_agent_editor_saves_memory_rights(signed_in, user):
    response = signed_in.post(
        "/accounts/agents/new/",
        {
            "name": "Coder",
            "slug": "coder",
            "instructions": "",
            "memory_allowed": "on",
            "may_propose": "on",
        },
    )
    assert response.status_code == 302
    agent = user.agents.get()
    assert agent.memory_allowed and agent.may_propose


def test_nav_shows_the_pending_count(signed_in, user):
    _propose(user, 2)
    assert 'id="inbox-count" class="badge">2<' in signed_in.get("/memory/").content.decode()


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/", "/\\evil.example/"])
def test_undo_never_redirects_off_site(signed_in, user, scope, target):
    change = file_write(user=user, scope=scope, path="a.md", content="x\n", base_sha256="")
    response = signed_in.post(f"/memory/changes/{change.pk}/undo/", {"next": target})
    assert response.status_code == 302 and response["Location"] == "/memory/audit/"


def test_the_save_mode_page_says_what_each_choice_covers(signed_in):
    page = " ".join(signed_in.get("/addons/memory/").content.decode().split())
    assert "What each choice covers" in page
    assert "no rule cards are suggested" in page
    assert "Project banks of coding agents are not covered" in page
    assert 'href="/memory/banks/"' in page


def test_the_memory_tab_scans_only_topic_files_it_has_not_seen(signed_in, user, scope, monkeypatch):
    from memory_addon import pages

    scanned: list[str] = []
    real_find_secret = pages.find_secret

    def counting(text, **kwargs):
        scanned.append(text)
        return real_find_secret(text, **kwargs)

    monkeypatch.setattr(pages, "find_secret", counting)
    file_write(
        user=user, scope=scope, path="index.md", content=f"- a: {user.pk} -> a.md\n", base_sha256=""
    )
    for n in range(5):
        file_write(
            user=user,
            scope=scope,
            path=f"t{n}.md",
            content=f"# t{n}\n\nnote {n} {user.pk}\n",
            base_sha256="",
        )
    url = f"/memory/?scope={scope.pk}"
    assert signed_in.get(url).status_code == 200
    assert len(scanned) == 6  # the index and five topic files, once
    scanned.clear()
    assert signed_in.get(url).status_code == 200
    assert scanned == []  # unchanged files are not read or scanned again
    file_write(
        user=user,
        scope=scope,
        path="t0.md",
        content=f"# t0\n\nchanged {user.pk}\n",
        base_sha256=None,
    )
    assert signed_in.get(url).status_code == 200
    assert scanned == [f"# t0\n\nchanged {user.pk}\n"]


def test_a_secret_pasted_into_a_topic_file_still_shows_its_banner_after_a_clean_view(
    signed_in, user, scope
):
    file_write(user=user, scope=scope, path="index.md", content="- a: 1 -> a.md\n", base_sha256="")
    url = f"/memory/?scope={scope.pk}"
    assert 'data-banner="secret"' not in signed_in.get(url).content.decode()
    key = "AKIA" + "Q3EGRIVNKL7QX4TZ"
    MemoryFile.objects.create(scope=scope, path="keys.md", content=f"aws {key}\n")
    page = signed_in.get(url).content.decode()
    assert "keys.md" in page and "data-banner" in page
