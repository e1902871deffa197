"""No GET request writes a row (issue 11, item 1).

Every GET route of the URLconf (htmx pages and the JSON API; Django's admin aside) is
requested by a signed-in person, and the number of rows of every table must not change.
Path ids are filled with objects the person owns, so each page or endpoint really runs
its read; the walk is done twice: by a fresh person who has nothing yet (so a lookup that
would create their scope, a bank or a settings row shows up), and after they own one of
everything.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.apps import apps
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver

from accounts.services import api_token_create
from bridges.models import OutboxEvent
from bridges.services import binding_create, endpoint_create
from chat.models import Message
from chat.schedules import schedule_create
from chat.services import conversation_create
from knowledge.models import Job, Source
from knowledge.services import store_create
from learning.models import CleanupJob, RuleSuggestion
from memory_addon.models import ChangeSet, FileChange, ReferenceFile
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_agent_scope, user_scope_find
from memory_addon.turns import Turn
from tests.factories import AgentFactory, AIProfileFactory, UserFactory

pytestmark = pytest.mark.django_db

# Django's admin is Django's; /readyz waits for a Celery worker; a webhook is POST only.
SKIPPED = ("admin/", "readyz", "bridges/in/")
PARAM = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
# Query strings the endpoints need to reach their read (project keys nobody has used).
QUERIES = {
    "api/memory/banks/status": "?project_key=never-seen-before",
    "api/memory/banks/files": "?project_key=never-seen-before",
    "api/memory/banks/file": "?project_key=never-seen-before&path=MEMORY.md",
    "api/memory/tools": "?bank=true",
    "api/memory/scopes/<int:scope_id>/file": "?path=index.md",
}


def _routes(patterns: list[URLPattern | URLResolver], prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, route)
        else:
            yield route


def get_routes() -> list[str]:
    routes = {route.lstrip("^").rstrip("$") for route in _routes(get_resolver().url_patterns)}
    return sorted(r for r in routes if not r.startswith(SKIPPED))


def row_counts() -> dict[str, int]:
    """Rows of every table of every installed model, in one query."""
    tables = sorted({model._meta.db_table for model in apps.get_models(include_auto_created=True)})
    quoted = (connection.ops.quote_name(table) for table in tables)  # names from the models
    counts = ", ".join(f"(SELECT count(*) FROM {name})" for name in quoted)  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {counts}")
        return dict(zip(tables, cursor.fetchone(), strict=True))


def _url(route: str, ids: dict[str, object]) -> str | None:
    def fill(match: re.Match[str]) -> str:
        name = match["name"]
        if (route, name) in ids:
            return str(ids[route, name])
        return str(ids.get(name, 999_999 if match["converter"] in ("int", None) else "x"))

    url = "/" + PARAM.sub(fill, route)
    return url + QUERIES.get(route, "")


def _walk(client, ids: dict[str, object]) -> dict[str, int]:
    statuses, writes = {}, {}
    for route in get_routes():
        url = _url(route, ids)
        before = row_counts()
        response = client.get(url)
        statuses[url] = response.status_code
        after = row_counts()
        changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
        if changed:
            writes[url] = changed
    assert not writes, f"GET requests changed row counts: {writes}"
    assert all(status < 500 for status in statuses.values()), statuses
    return statuses


def test_a_fresh_person_walking_every_get_route_writes_no_row(client):
    person = UserFactory()
    client.force_login(person)
    statuses = _walk(client, {"addon_id": "memory", "addon": "memory", "skill": "memory"})
    assert (
        statuses["/memory/"] == 200
        and statuses["/api/memory/banks/status?project_key=never-seen-before"] == 200
    )
    assert statuses["/accounts/settings/"] == 200 and statuses["/api/memory/scopes"] == 200


def _own_one_of_everything(person) -> dict[str, object]:
    scope = user_scope_find(person)  # made with the person
    assert scope is not None
    file_write(
        user=person, scope=scope, path="index.md", content="- tea: tea -> tea.md\n", base_sha256=""
    )
    file_write(
        user=person,
        scope=scope,
        path="index.md",
        content="- tea: green tea -> tea.md\n",
        base_sha256=None,
    )
    change_set = ChangeSet.objects.filter(user=person).latest("pk")
    agent = AgentFactory(owner=person, memory_allowed=True, may_propose=True)
    ensure_agent_scope(agent)
    proposal = memory_change_request(
        turn=Turn(user=person, message_ref="m1", reply_ref_trusted=True),
        operation={"action": "add", "text": "- coffee: likes coffee -> coffee.md"},
    ).proposal
    profile = AIProfileFactory(owner=person)
    conversation = conversation_create(user=person, profile_id=profile.pk)
    message = Message.objects.create(conversation=conversation, role="user", content="hi")
    schedule = schedule_create(
        user=person, name="daily", prompt="hello", profile_id=profile.pk, every_minutes=60
    )
    store = store_create(owner=person, name="docs", provider="none")
    source = Source.objects.create(store=store, kind=Source.Kind.FOLDER, path="/nowhere/docs")
    job = Job.objects.create(store=store, source=source, kind=Job.Kind.SCAN, state=Job.State.REVIEW)
    suggestion = RuleSuggestion.objects.create(
        user=person,
        conversation=conversation,
        user_message=message,
        origin=RuleSuggestion.Origin.MANUAL,
        state=RuleSuggestion.State.PENDING,
        text="Answer briefly.",
    )
    reference = ReferenceFile.objects.create(
        owner=person, name="AGENTS.md", origin=ReferenceFile.Origin.UPLOAD, content="Be kind."
    )
    cleanup = CleanupJob.objects.create(
        user=person, scope=scope, kind=CleanupJob.Kind.MERGE, base_sha256="0" * 64
    )
    token, _secret = api_token_create(user=person, name="laptop")
    binding, _secret = binding_create(owner=person, kind="standard", title="Sample")
    endpoint, _secret = endpoint_create(
        owner=person, url="https://example.com/hook", event_types=["memory.changed"]
    )
    event = OutboxEvent.objects.create(
        endpoint=endpoint, sequence=1, webhook_id="msg_1", event_type="memory.changed", payload={}
    )
    version = FileChange.objects.filter(scope=scope).latest("pk")
    cleanup_route = "learning/cleanup/jobs/<int:job_id>/"
    return {
        "scope_id": scope.pk,
        "change_set_id": change_set.pk,
        "version_id": version.pk,
        "agent_id": agent.pk,
        "proposal_id": proposal.pk,
        "conversation_id": conversation.pk,
        "message_id": message.pk,
        "schedule_id": schedule.pk,
        "store_id": store.pk,
        "source_id": source.pk,
        "job_id": job.pk,
        (cleanup_route, "job_id"): cleanup.pk,
        "suggestion_id": suggestion.pk,
        "reference_id": reference.pk,
        "token_id": token.pk,
        "profile_id": profile.pk,
        "binding_id": binding.pk,
        "endpoint_id": endpoint.pk,
        "event_id": event.pk,
        "public_id": binding.public_id,
        "addon_id": "memory",
        "addon": "memory",
        "skill": "memory",
        "key": "save-mode",
        "number": 1,
        "path": "index.md",
        "action": "scan",
    }


def test_a_person_who_owns_one_of_everything_walks_every_get_route_and_writes_no_row(client):
    person = UserFactory()
    client.force_login(person)
    ids = _own_one_of_everything(person)
    statuses = _walk(client, ids)
    # The ids are the person's own: the reads ran rather than answering 404.
    for route in (
        "/memory/{scope_id}/history/",
        "/api/memory/scopes/{scope_id}/files",
        "/chat/{conversation_id}/",
        "/knowledge/{store_id}/",
        "/api/knowledge/jobs/{job_id}",
        "/api/memory/change-sets/{change_set_id}",
        "/accounts/agents/{agent_id}/",
        "/learning/references/{reference_id}/",
    ):
        url = route.format(**{k: v for k, v in ids.items() if isinstance(k, str)})
        assert statuses[url] == 200, (url, statuses[url])
