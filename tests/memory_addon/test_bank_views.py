"""The project banks screen: ownership, the switch and its history, limits, files, agent view."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memory_addon.models import BankSwitch, MemoryFile, MemoryScope
from memory_addon.services.changes import file_write
from memory_addon.services.context import bank_agent_view
from memory_addon.services.scopes import bank_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

INDEX = "# Project\n- build: `make test`\n- see [style](style.md)\n"


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def bank(user):
    bank = bank_create(user=user, project_key="git:abc123", project_name="shop")
    file_write(user=user, scope=bank, path="MEMORY.md", content=INDEX, base_sha256=None)
    return bank


def _file(bank, path="MEMORY.md"):
    return MemoryFile.objects.get(scope=bank, path=path)


def test_the_list_shows_each_bank_with_its_state_files_and_size(signed_in, bank):
    response = signed_in.get("/memory/banks/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "shop" in html and "git:abc123" in html
    assert "1 of 100 files" in html
    assert f'value="{len(INDEX.encode())}"' in html  # the size meter
    assert 'data-state="on"' in html


def test_the_list_query_count_does_not_grow_with_banks(signed_in, user):
    def count():
        with CaptureQueriesContext(connection) as captured:
            assert signed_in.get("/memory/banks/").status_code == 200
        return len(captured)

    bank_create(user=user, project_key="k0")
    few = count()
    for i in range(1, 6):
        bank = bank_create(user=user, project_key=f"k{i}")
        file_write(user=user, scope=bank, path="MEMORY.md", content="x\n", base_sha256=None)
    assert count() == few


def test_creating_a_bank_from_the_page_opens_it(signed_in, user):
    response = signed_in.post(
        "/memory/banks/", {"project_key": " git:new ", "project_name": "New one"}
    )
    bank = MemoryScope.objects.get(owner=user, kind=MemoryScope.Kind.PROJECT)
    assert response.status_code == 302 and response["Location"] == f"/memory/banks/{bank.pk}/"
    assert (bank.project_key, bank.project_name, bank.enabled) == ("git:new", "New one", True)


@pytest.mark.parametrize(
    ("key", "name", "says"),
    [
        ("git:abc123", "", "already have a bank"),
        ("   ", "x", "Give the project key"),
        ("k" * 129, "", "longer than 128"),
        ("ok", "line\nbreak", "plain one-line text"),
        ("ok", "The wifi password is swordfish42", "project name"),
    ],
)
def test_a_refused_bank_keeps_the_form_and_says_why(signed_in, bank, key, name, says):
    response = signed_in.post("/memory/banks/", {"project_key": key, "project_name": name})
    assert response.status_code == 422
    html = response.content.decode()
    assert says in html
    assert MemoryScope.objects.filter(kind=MemoryScope.Kind.PROJECT).count() == 1


def test_another_persons_bank_is_404_everywhere(client, bank):
    client.force_login(UserFactory())
    base = f"/memory/banks/{bank.pk}/"
    assert client.get(base).status_code == 404
    assert client.get(base + "?view=agent").status_code == 404
    assert client.get(base + "delete/").status_code == 404
    assert client.post(base + "enabled/", {"enabled": "0"}).status_code == 404
    assert client.post(base + "edit/", {"project_key": "mine"}).status_code == 404
    assert client.post(base + "file/", {"path": "MEMORY.md", "content": "x"}).status_code == 404
    assert client.post(base + "delete/").status_code == 404
    bank.refresh_from_db()
    assert bank.enabled and bank.project_key == "git:abc123"
    assert _file(bank).content == INDEX


def test_a_notes_scope_is_not_a_bank(signed_in, scope):
    assert signed_in.get(f"/memory/banks/{scope.pk}/").status_code == 404


def test_forms_need_the_csrf_token(user, bank):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(f"/memory/banks/{bank.pk}/enabled/", {"enabled": "0"}).status_code == 403
    bank.refresh_from_db()
    assert bank.enabled


def test_turning_off_and_on_keeps_the_files_and_leaves_history(signed_in, user, bank):
    url = f"/memory/banks/{bank.pk}/enabled/"
    assert signed_in.post(url, {"enabled": "0"}).status_code == 302
    assert signed_in.post(url, {"enabled": "0"}).status_code == 302  # no change, no row
    bank.refresh_from_db()
    assert not bank.enabled and _file(bank).content == INDEX
    assert signed_in.post(url, {"enabled": "1"}).status_code == 302
    switches = list(BankSwitch.objects.filter(scope=bank).values_list("enabled", "source"))
    assert switches == [(True, "page"), (False, "page")]
    html = signed_in.get(f"/memory/banks/{bank.pk}/").content.decode()
    assert html.count('data-history="off"') == 1 and html.count('data-history="on"') == 1


def test_the_api_switch_is_in_the_history_too(api, user, bank):
    api.post("/api/memory/banks/enabled?enabled=false", {"project_key": "git:abc123"})
    assert BankSwitch.objects.get(scope=bank).source == "api"


def test_agent_view_is_what_the_api_sends(signed_in, api, bank, user):
    html = signed_in.get(f"/memory/banks/{bank.pk}/?view=agent").content.decode()
    status = api.get("/api/memory/banks/status?project_key=git:abc123").json()
    sent = status["startup_context"]
    assert "make test" in sent and 'trust="untrusted-observations"' in sent
    # The page shows the same text, escaped.
    assert sent.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;") in html


def test_a_bank_that_is_off_sends_no_startup_context(signed_in, api, user, bank):
    signed_in.post(f"/memory/banks/{bank.pk}/enabled/", {"enabled": "0"})
    status = api.get("/api/memory/banks/status?project_key=git:abc123").json()
    assert status["startup_context"] == "" and "off for this project" in status["memory_off_reason"]
    html = signed_in.get(f"/memory/banks/{bank.pk}/?view=agent").content.decode()
    assert 'id="agent-view-off"' in html and "make test" not in html.split("agent-view")[-1]


def test_the_preview_renders_markdown_and_never_runs_html(signed_in, user, bank):
    text = "# Title\n<script>alert(1)</script>\n[x](javascript:alert(1))\n"
    file_write(user=user, scope=bank, path="style.md", content=text, base_sha256=None)
    html = signed_in.get(f"/memory/banks/{bank.pk}/?path=style.md").content.decode()
    assert "<h1>Title</h1>" in html
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)" in html  # shown as text
    assert 'href="javascript:' not in html


def test_a_link_to_a_topic_file_opens_it_on_the_page(signed_in, bank):
    html = signed_in.get(f"/memory/banks/{bank.pk}/").content.decode()
    assert '<a href="?path=style.md" rel="noopener noreferrer nofollow">style</a>' in html


def test_the_first_file_of_a_bank_that_is_off_asks_to_turn_it_on(signed_in, user):
    bank = bank_create(user=user, project_key="git:quiet", enabled=False)
    html = signed_in.get(f"/memory/banks/{bank.pk}/?new=1&path=MEMORY.md").content.decode()
    assert 'id="enable-first"' in html and 'name="enable" value="1"' in html
    url = f"/memory/banks/{bank.pk}/file/"
    signed_in.post(url, {"path": "MEMORY.md", "content": "- a\n", "enable": "1"})
    bank.refresh_from_db()
    assert bank.enabled and _file(bank).content == "- a\n"


def test_saving_and_keeping_a_bank_off_leaves_it_off(signed_in, user):
    bank = bank_create(user=user, project_key="git:quiet", enabled=False)
    url = f"/memory/banks/{bank.pk}/file/"
    signed_in.post(url, {"path": "MEMORY.md", "content": "- a\n", "enable": "0"})
    bank.refresh_from_db()
    assert not bank.enabled and _file(bank).content == "- a\n"


def test_saving_a_file_over_the_limit_keeps_the_text_and_says_why(signed_in, user, bank, settings):
    settings.MEMORY_BANK_MAX_BYTES = 200
    big = "x" * 300
    response = signed_in.post(
        f"/memory/banks/{bank.pk}/file/",
        {"path": "big.md", "content": big, "base_sha256": ""},
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "limit is 200 bytes" in html and big in html
    assert not MemoryFile.objects.filter(scope=bank, path="big.md").exists()


def test_a_bad_path_is_a_form_error_not_a_500(signed_in, bank):
    response = signed_in.post(f"/memory/banks/{bank.pk}/file/", {"path": "../x.md", "content": "x"})
    assert response.status_code == 422 and 'id="file-error"' in response.content.decode()


def test_a_stale_edit_is_a_conflict_that_keeps_the_text(signed_in, user, bank):
    old = _file(bank).sha256
    file_write(user=user, scope=bank, path="MEMORY.md", content="newer\n", base_sha256=None)
    response = signed_in.post(
        f"/memory/banks/{bank.pk}/file/",
        {"path": "MEMORY.md", "content": "mine\n", "base_sha256": old},
    )
    assert response.status_code == 409 and "mine" in response.content.decode()
    assert _file(bank).content == "newer\n"


def test_near_the_file_limit_the_bank_warns(signed_in, user, bank, settings):
    settings.MEMORY_BANK_MAX_FILES = 3
    file_write(user=user, scope=bank, path="a.md", content="a", base_sha256=None)
    file_write(user=user, scope=bank, path="b.md", content="b", base_sha256=None)
    html = signed_in.get("/memory/banks/").content.decode()
    assert 'data-usage="files" data-state="near"' in html
    assert "Nearly at the file limit." in html


def test_a_long_memory_md_warns_that_the_agent_sees_only_its_beginning(
    signed_in, user, bank, settings
):
    settings.MEMORY_BANK_STARTUP_MAX_LINES = 3
    text = "".join(f"- line {i}\n" for i in range(10))
    file_write(user=user, scope=bank, path="MEMORY.md", content=text, base_sha256=None)
    html = signed_in.get(f"/memory/banks/{bank.pk}/").content.decode()
    assert "the agent sees only its beginning" in html
    assert "truncated" in bank_agent_view(user, bank).startup_context


def test_editing_the_identity_refuses_a_key_another_bank_has(signed_in, user, bank):
    bank_create(user=user, project_key="git:other")
    url = f"/memory/banks/{bank.pk}/edit/"
    response = signed_in.post(url, {"project_key": "git:other", "project_name": "x"})
    assert response.status_code == 422 and "already have a bank" in response.content.decode()
    moved = signed_in.post(url, {"project_key": "git:moved", "project_name": "Shop"})
    assert moved.status_code == 302
    bank.refresh_from_db()
    assert (bank.project_key, bank.project_name) == ("git:moved", "Shop")


def test_deleting_asks_first_then_removes_files_and_history(signed_in, bank):
    url = f"/memory/banks/{bank.pk}/delete/"
    page = signed_in.get(url)
    assert page.status_code == 200 and "cannot be undone" in page.content.decode()
    assert MemoryScope.objects.filter(pk=bank.pk).exists()
    assert signed_in.post(url)["Location"] == "/memory/banks/"
    assert not MemoryScope.objects.filter(pk=bank.pk).exists()
    assert not MemoryFile.objects.filter(scope_id=bank.pk).exists()
