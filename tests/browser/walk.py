"""Every page a signed-in person (staff) can reach, with something on each: the walks over
all pages (phone widths, accessibility, screenshots) share this world."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from accounts.models import Membership
from accounts.services import api_token_create
from bridges.services import binding_create, endpoint_create
from chat.models import Message, Question
from chat.schedules import schedule_create
from chat.services import conversation_create
from config.theme import THEME_COOKIE
from knowledge.models import Chunk, Document, Source
from knowledge.services import store_create
from memory_addon.models import ChangeSet, FileChange
from memory_addon.services.notes import note_add
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.references import reference_upload
from memory_addon.services.scopes import ensure_agent_scope, ensure_user_scope
from memory_addon.turns import Turn
from tests.factories import AgentFactory, AIProfileFactory, OrganizationFactory, UserFactory

LONG = "a-rather-long-unbroken-word-" * 3
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


def world():
    """One person with something on every page, so lists and tables are not empty."""
    person = UserFactory(is_staff=True)
    profile = AIProfileFactory(owner=person, name="Local model with a long name", model=LONG)
    agent = AgentFactory(owner=person, name="Research helper", slug="research-helper")
    scope = ensure_user_scope(person)
    note_add(user=person, scope=scope, text=f"home: lives in Rome {LONG}", source="page")
    note_add(
        user=person, scope=ensure_agent_scope(agent), text="tone: short answers", source="page"
    )
    memory_change_request(
        turn=Turn(user=person),
        operation={"action": "add", "text": f"- city: moved to Berlin {LONG}"},
        reason="They said so.",
    )
    conversation = conversation_create(user=person, profile_id=profile.pk, title=f"Trip {LONG}")
    Message.objects.create(conversation=conversation, role="user", content=f"Plan {LONG}")
    answer = Message.objects.create(
        conversation=conversation,
        role="assistant",
        state="complete",
        content=f"Here:\n\n```python\nprint('{LONG}{LONG}')\n```\n\nhttps://example.org/{LONG}",
    )
    Question.objects.create(
        owner=person,
        message=answer,
        number=1,
        call_id="call-1",
        text="Which city should the trip start from?",
        why="Only you know where you will be.",
        options=["Rome", "Milan"],
        expires_at=timezone.now() + timedelta(hours=1),
    )
    schedule_create(
        user=person,
        name=f"Morning {LONG}",
        prompt="Summarize",
        profile_id=profile.pk,
        every_minutes=60,
    )
    store = store_create(owner=person, name=f"Docs {LONG}", provider="none")
    source = Source.objects.create(
        store=store, kind=Source.Kind.UPLOAD, path=f"/u/{LONG}.md", chunk_count=1
    )
    document = Document.objects.create(
        source=source, path=f"{LONG}.md", sha256="x", format="text", size=1
    )
    Chunk.objects.create(
        document=document, store=store, source=source, ordinal=0, text="alpaca", token_count=5
    )
    reference = reference_upload(
        user=person, name="AGENTS.md", data=f"# Rules\n\n{LONG}\n".encode()
    )
    api_token_create(user=person, name=f"laptop {LONG}")
    organization = OrganizationFactory(name=f"Team {LONG}", rules=f"- Cite sources. {LONG}{LONG}\n")
    Membership.objects.create(organization=organization, user=person, role=Membership.Role.ADMIN)
    binding_create(owner=person, kind="standard", title=f"Family chat {LONG}")
    endpoint_create(owner=person, url="https://example.org/hook", event_types=["memory.changed"])
    version = FileChange.objects.filter(change_set__scope=scope).latest("pk")
    return person, {
        "scope": scope.pk,
        "conversation": conversation.pk,
        "store": store.pk,
        "reference": reference.pk,
        "agent": agent.pk,
        "profile": profile.pk,
        "version": version.pk,
        "change_sets": ChangeSet.objects.filter(scope=scope).count(),
    }


PAGES = [
    ("memory", "/memory/"),
    ("memory-raw", "/memory/?view=raw"),
    ("memory-search", "/memory/?q=Rome"),
    ("memory-clear", "/memory/{scope}/clear/"),
    ("memory-history", "/memory/{scope}/history/"),
    ("memory-restore", "/memory/versions/{version}/restore/"),
    ("memory-audit", "/memory/audit/"),
    ("memory-agent", "/memory/agents/{agent}/"),
    ("files", "/files/"),
    ("file", "/files/{scope}/?path=index.md"),
    ("inbox", "/inbox/"),
    ("addon-memory", "/addons/memory/"),
    ("addons", "/addons/"),
    ("skills", "/addons/skills/"),
    ("banks", "/memory/banks/"),
    ("chat-new", "/chat/"),
    ("chat", "/chat/{conversation}/"),
    ("chat-delete", "/chat/{conversation}/delete/"),
    ("schedules", "/chat/schedules/"),
    ("knowledge", "/knowledge/"),
    ("knowledge-new", "/knowledge/new/"),
    ("store", "/knowledge/{store}/"),
    ("store-files", "/knowledge/{store}/files/"),
    ("references", "/learning/references/"),
    ("reference", "/learning/references/{reference}/"),
    ("cleanup", "/learning/cleanup/"),
    ("settings", "/accounts/settings/"),
    ("organization", "/accounts/organization/"),
    ("agents", "/accounts/agents/"),
    ("agent-new", "/accounts/agents/new/"),
    ("agent-edit", "/accounts/agents/{agent}/"),
    ("profile-new", "/accounts/settings/ai-profiles/new/"),
    ("profile-edit", "/accounts/settings/ai-profiles/{profile}/"),
    ("tokens", "/accounts/settings/api-tokens/"),
    ("messaging", "/bridges/messaging/"),
    ("events", "/bridges/events/"),
]
# Also reached: the installed add-on's own page (its link in the library), a page that does
# not exist, and the signed-out pages.
NOT_FOUND = "/no-such-page/"
SIGNED_OUT = [("sign-in", "/accounts/sign-in/"), ("sign-up", "/accounts/sign-up/")]


def add_on_url(page) -> str:
    """The first installed add-on's page, as the library links it."""
    page.goto("/addons/")
    return str(page.locator(".addon-item a").first.get_attribute("href"))


def dressed(page, url: str, *, language: str, theme: str) -> None:
    """The browser asks the server at `url` for pages in this language and colour theme."""
    page.set_extra_http_headers({"Accept-Language": language})
    page.context.add_cookies([{"name": THEME_COOKIE, "value": theme, "url": url}])
