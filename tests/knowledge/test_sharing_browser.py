"""Sharing in Chromium: an owner shares a collection with the organization; a member sees
it read-only, gets its excerpt in a chat answer and cannot upload to it."""

from __future__ import annotations

import pytest
from django.conf import settings

from accounts.models import Membership
from knowledge import services
from knowledge.models import StoreShare
from tests.factories import AIProfileFactory, OrganizationFactory, UserFactory
from tests.knowledge.test_sharing import add_excerpt

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EXCERPT = "Team llamas graze on the upper meadow."

TEXTS = {
    "en": {
        "share": "Share with {org}: members read, admins manage",
        "save": "Save sharing",
        "saved": "Saved who the collection is shared with.",
        "read_only": "read-only",
        "notice": "you may read and search it, not change it",
        "start": "Start",
    },
    "de": {
        "share": "Mit {org} teilen: Mitglieder lesen, Admins verwalten",
        "save": "Freigabe speichern",
        "saved": "Gespeichert, mit wem die Sammlung geteilt ist.",
        "read_only": "schreibgeschützt",
        "notice": "Sie dürfen sie lesen und durchsuchen, aber nicht ändern",
        "start": "Starten",
    },
}


@pytest.mark.parametrize(("language", "width"), [("de", 390), ("en", 1280)])
def test_an_owner_shares_with_the_organization_and_a_member_reads_it_in_chat(
    chat_worker, fake_openai, sign_in, screenshot, language, width
):
    text = TEXTS[language]
    organization = OrganizationFactory(name="Acme")
    owner, member = UserFactory(), UserFactory()
    for person in (owner, member):
        Membership.objects.create(organization=organization, user=person)
    store = services.store_create(owner=owner, name="Team handbook", provider="none")
    add_excerpt(store, "llamas.md", EXCERPT)
    AIProfileFactory(owner=member, base_url=fake_openai.base_url, model="fake", is_default=True)

    page = sign_in(owner)
    page.set_viewport_size({"width": width, "height": 900})
    page.context.set_extra_http_headers({"Accept-Language": language})
    page.goto(f"/knowledge/{store.pk}/")
    page.get_by_label(text["share"].format(org="Acme")).check()
    page.get_by_role("button", name=text["save"]).click()
    page.get_by_text(text["saved"]).wait_for()
    assert StoreShare.objects.filter(store=store, organization=organization).exists()
    screenshot(f"shared-{language}")

    sign_in(member)
    page.goto("/knowledge/")
    row = page.locator("tr", has_text="Team handbook")
    assert row.get_by_test_id("read-only").inner_text() == text["read_only"]
    row.get_by_role("link", name="Team handbook").click()
    assert text["notice"] in page.get_by_test_id("shared-notice").inner_text()
    assert page.locator(f"form[action='/knowledge/{store.pk}/uploads/']").count() == 0
    screenshot(f"read-only-{language}")
    cookies = page.context.cookies()
    csrf = next(c["value"] for c in cookies if c["name"] == settings.CSRF_COOKIE_NAME)
    refused = page.request.post(
        f"/knowledge/{store.pk}/uploads/",
        multipart={"documents": {"name": "x.md", "mimeType": "text/markdown", "buffer": b"x"}},
        headers={"X-CSRFToken": csrf},
    )
    assert refused.status == 403
    assert not store.sources.filter(name="x.md").exists()

    fake_openai.chat_replies.append({"content": "They graze on the upper meadow [R1]."})
    page.goto("/chat/")
    page.locator("#new-text").fill("Where do the team llamas graze?")
    page.get_by_role("button", name=text["start"], exact=True).click()
    answer = page.locator("article.msg-assistant[data-state=complete]")
    answer.wait_for(timeout=30_000)
    assert "upper meadow" in answer.inner_text()
    assert "llamas.md" in answer.locator("details[id^=cite-]").first.inner_text()
    assert EXCERPT in fake_openai.prompt()
    screenshot(f"chat-{language}")
