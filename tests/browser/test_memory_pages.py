from __future__ import annotations

import pytest

from accounts.models import Membership, Organization
from memory_addon.core import entries
from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.context import turn_context_build
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.services.user_settings import save_mode_for
from memory_addon.turns import Turn
from tests.conftest import off_loop, wait_until_live
from tests.factories import OrganizationFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def person():
    return UserFactory()


def test_changing_save_mode_persists_across_reload(sign_in, person, screenshot):
    page = sign_in(person)
    page.goto("/addons/memory/")
    page.get_by_label("Save it and tell me").check()
    page.get_by_role("status").filter(has_text="Saved.").wait_for()
    screenshot("saved")
    page.reload()
    assert page.get_by_label("Save it and tell me").is_checked()
    assert save_mode_for(person) == "auto"


def test_a_failed_settings_save_keeps_the_earlier_choice_and_says_why(sign_in, person, screenshot):
    page = sign_in(person)
    page.goto("/addons/memory/")
    page.route("**/api/addons/**", lambda route: route.abort())
    page.get_by_label("Never").click()
    page.get_by_text("Not saved:").wait_for()
    screenshot("failed")
    assert page.get_by_label("Ask me first").is_checked()
    assert not page.get_by_label("Never").is_checked()
    assert save_mode_for(person) == "ask"


def test_a_new_proposal_appears_live_and_confirming_changes_the_file(sign_in, person, screenshot):
    page = sign_in(person)
    page.goto("/inbox/")
    wait_until_live(page)
    assert page.get_by_text("Nothing waits for you").is_visible()
    proposal = off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- home: lives in Rome -> home.md"},
        reason="They mentioned moving to Rome.",
    ).proposal
    card = page.locator(f"#proposal-{proposal.pk}")
    card.wait_for()
    page.locator("#inbox-count", has_text="1").wait_for()
    assert "They mentioned moving to Rome." in card.inner_text()
    assert "- home: lives in Rome -> home.md" in card.inner_text()
    screenshot("live-card")
    card.get_by_role("button", name="Confirm").click()
    page.wait_for_load_state()
    screenshot("after-confirm")
    page.get_by_text("Saved to memory.").first.wait_for()
    index = MemoryFile.objects.get(scope=ensure_user_scope(person), path="index.md").content
    assert [e.text for e in entries.machine_entries(index)] == ["- home: lives in Rome -> home.md"]


def test_edit_then_confirm_saves_the_edited_text(sign_in, person):
    proposal = off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- tea: likes tea -> tea.md"},
    ).proposal
    page = sign_in(person)
    page.goto("/inbox/")
    card = page.locator(f"#proposal-{proposal.pk}")
    card.get_by_text("Edit, then confirm").click()
    box = card.get_by_label("Entry text")
    box.fill("- tea: loves green tea -> tea.md")
    assert card.locator(f"#proposal-{proposal.pk}-counter").inner_text() == str(
        len("- tea: loves green tea -> tea.md")
    )
    card.get_by_role("button", name="Save edited text").click()
    page.get_by_text("Saved to memory.").first.wait_for()
    index = MemoryFile.objects.get(scope=ensure_user_scope(person), path="index.md").content
    assert "loves green tea" in index and "likes tea" not in index


def test_a_raw_markdown_conflict_keeps_the_unsaved_text(sign_in, person, screenshot):
    scope = ensure_user_scope(person)
    off_loop(
        file_write,
        user=person,
        scope=scope,
        path="index.md",
        content="First version.\n",
        base_sha256="",
    )
    page = sign_in(person)
    page.goto(f"/memory/?scope={scope.pk}&view=raw")
    page.get_by_label("index.md").fill("My unsaved edit.\n")
    off_loop(
        file_write,
        user=person,
        scope=scope,
        path="index.md",
        content="Changed elsewhere.\n",
        base_sha256=None,
    )
    page.get_by_role("button", name="Save").click()
    page.get_by_text("This file changed elsewhere").wait_for()
    screenshot("conflict")
    assert page.get_by_label("index.md").input_value() == "My unsaved edit.\n"
    assert MemoryFile.objects.get(scope=scope, path="index.md").content == "Changed elsewhere.\n"


def test_restore_from_history_asks_first_then_brings_the_old_text_back(sign_in, person, screenshot):
    scope = ensure_user_scope(person)
    off_loop(
        file_write, user=person, scope=scope, path="home.md", content="Old text.\n", base_sha256=""
    )
    off_loop(
        file_write,
        user=person,
        scope=scope,
        path="home.md",
        content="New text.\n",
        base_sha256=None,
    )
    page = sign_in(person)
    page.goto(f"/memory/{scope.pk}/history/")
    page.get_by_role("link", name="Restore…").last.click()
    page.get_by_role("heading", name="Restore home.md?").wait_for()
    screenshot("confirm")
    assert MemoryFile.objects.get(scope=scope, path="home.md").content == "New text.\n"
    page.get_by_role("button", name="Restore this version").click()
    page.get_by_text("The text it replaced stays in the history").wait_for()
    assert MemoryFile.objects.get(scope=scope, path="home.md").content == "Old text.\n"


def test_the_secret_banner_names_the_line(sign_in, person, screenshot):
    scope = ensure_user_scope(person)
    MemoryFile.objects.create(
        scope=scope, path="index.md", content="Fine.\nthe password is swordfish\n", sha256="x"
    )
    page = sign_in(person)
    page.goto(f"/memory/?scope={scope.pk}")
    banner = page.locator("[data-banner=secret]")
    banner.wait_for()
    screenshot("secret")
    assert "line 2" in banner.inner_text()
    assert "swordfish" not in banner.inner_text()


def test_the_policy_banner_appears_for_a_read_only_organization(sign_in, person):
    organization = OrganizationFactory(
        name="Acme", memory_mode=Organization.MemoryMode.READ_ONLY, rules="Use metric units."
    )
    Membership.objects.create(organization=organization, user=person)
    page = sign_in(person)
    page.goto("/memory/")
    assert "read-only" in page.locator("[data-banner=policy]").inner_text()
    assert page.get_by_text("Use metric units.").is_visible()


def test_disabling_the_add_on_stops_memory_and_keeps_the_files(sign_in, person, screenshot):
    scope = ensure_user_scope(person)
    off_loop(
        file_write,
        user=person,
        scope=scope,
        path="index.md",
        content="Lives in Rome.\n",
        base_sha256="",
    )
    assert "Lives in Rome." in turn_context_build(Turn(user=person)).block
    page = sign_in(person)
    page.goto("/addons/memory/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Turn off").click()
    page.get_by_role("button", name="Turn on").wait_for()
    screenshot("off")
    assert turn_context_build(Turn(user=person)).block == ""
    assert MemoryFile.objects.get(scope=scope, path="index.md").content == "Lives in Rome.\n"


def test_an_expired_proposal_leaves_the_open_inbox_without_reload(sign_in, person):
    from datetime import timedelta

    from django.utils import timezone

    from memory_addon.models import Proposal
    from memory_addon.services.proposals import proposals_expire

    proposal = off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- tea: likes tea -> tea.md"},
    ).proposal
    page = sign_in(person)
    page.goto("/inbox/")
    wait_until_live(page)
    card = page.locator(f"#proposal-{proposal.pk}")
    assert card.is_visible()
    Proposal.objects.filter(pk=proposal.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert off_loop(proposals_expire) == 1
    card.wait_for(state="detached")
    page.get_by_text("Nothing waits for you").wait_for()
    assert page.locator("#inbox-count").inner_text() == ""


def test_an_automatic_save_shows_saved_to_memory_with_undo_live(sign_in, person):
    from addons.services import addon_setting_put

    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")
    page = sign_in(person)
    page.goto("/memory/")
    wait_until_live(page)
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- tea: likes green tea -> tea.md"},
    )
    notice = page.locator("#live-notice")
    notice.get_by_text("Saved to memory: tea: likes green tea").wait_for()
    notice.get_by_role("button", name="Undo").click()
    notice.get_by_text("Change undone: tea: likes green tea").wait_for()
    # The Undo answered in place: still the Memory tab, and the entry left it live.
    assert page.url.endswith("/memory/")
    page.locator(".entry-text", has_text="likes green tea").wait_for(state="detached")
    assert not MemoryFile.objects.filter(scope=ensure_user_scope(person), path="index.md").exists()
