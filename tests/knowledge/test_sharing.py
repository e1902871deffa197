"""Collections shared with an organization and named people (issue 27): one access rule
for every page, htmx form and API route; readers read, managers manage, others get 404."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from accounts.models import Membership, Organization, User
from knowledge import services
from knowledge.models import Chunk, Document, Job, Source, Store, StoreShare
from tests.conftest import Api
from tests.factories import OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db

ROLES = ["owner", "org_member", "org_admin", "named_reader", "named_manager", "stranger", "other"]
READERS = {"owner", "org_member", "org_admin", "named_reader", "named_manager"}
MANAGERS = {"owner", "org_admin", "named_manager"}


@dataclass
class World:
    people: dict[str, User]
    organization: Organization
    store: Store
    source: Source
    document: Document
    job: Job


def add_excerpt(store: Store, path: str, text: str) -> tuple[Source, Document]:
    source = Source.objects.create(
        store=store, kind=Source.Kind.UPLOAD, path=f"/nowhere/{path}", name=path, chunk_count=1
    )
    document = Document.objects.create(
        source=source, path=path, sha256="x", format="markdown", size=len(text)
    )
    Chunk.objects.create(
        document=document, store=store, source=source, ordinal=0, text=text, token_count=8
    )
    return source, document


def join(organization: Organization, role: str = Membership.Role.MEMBER) -> User:
    person = UserFactory()
    Membership.objects.create(organization=organization, user=person, role=role)
    return person


def shared_world() -> World:
    organization = OrganizationFactory()
    owner = join(organization)
    people = {
        "owner": owner,
        "org_member": join(organization),
        "org_admin": join(organization, Membership.Role.ADMIN),
        "named_reader": join(organization),
        "named_manager": join(organization),
        "stranger": UserFactory(),
        "other": join(OrganizationFactory(), Membership.Role.ADMIN),
    }
    store = services.store_create(owner=owner, name="Team handbook", provider="none")
    source, document = add_excerpt(store, "llamas.md", "Team llamas graze on the upper meadow.")
    job = Job.objects.create(
        store=store, source=source, kind=Job.Kind.SCAN, state=Job.State.REVIEW, review=[]
    )
    services.store_share_set(
        store=store,
        actor=owner,
        organization_id=organization.pk,
        readers=[people["named_reader"].pk],
        managers=[people["named_manager"].pk],
    )
    return World(people, organization, store, source, document, job)


@pytest.fixture
def world() -> World:
    return shared_world()


# (method, url template, body, status for a reader, status for a manager). A reader of a
# manage route gets 403; anyone who may not read gets 404. The manager statuses are what
# the action answers once past the gate (a form error or refusal after it counts too).
PAGE_ROUTES = [
    ("get", "/knowledge/{store}/", None, 200, 200),
    ("get", "/knowledge/{store}/files/", None, 200, 200),
    ("get", "/knowledge/{store}/search/?query=llamas&context_window=8192", None, 200, 200),
    ("get", "/knowledge/jobs/{job}/", None, 200, 200),
    ("post", "/knowledge/{store}/delete/", {}, 403, 302),
    ("post", "/knowledge/{store}/rebuild/", {}, 403, 302),
    ("post", "/knowledge/{store}/folders/", {"path": ""}, 403, 400),
    ("post", "/knowledge/{store}/uploads/", {}, 403, 400),
    ("post", "/knowledge/{store}/sharing/", {}, 403, 302),
    ("post", "/knowledge/files/{document}/remove/", {}, 403, 302),
    ("post", "/knowledge/sources/{source}/update/", {}, 403, 302),
    ("post", "/knowledge/sources/{source}/disable/", {}, 403, 302),
    ("post", "/knowledge/sources/{source}/remove/", {}, 403, 302),
    ("post", "/knowledge/jobs/{job}/confirm/", {}, 403, 302),
    ("post", "/knowledge/jobs/{job}/dismiss/", {}, 403, 302),
    ("post", "/knowledge/jobs/{job}/cancel/", {}, 403, 302),
]
API_ROUTES = [
    ("get", "/api/knowledge/stores/{store}", None, 200, 200),
    ("get", "/api/knowledge/stores/{store}/sources", None, 200, 200),
    ("get", "/api/knowledge/stores/{store}/sharing", None, 200, 200),
    ("get", "/api/knowledge/jobs/{job}", None, 200, 200),
    ("post", "/api/knowledge/retrieve", {"query": "llamas", "store_ids": ["{store}"]}, 200, 200),
    ("delete", "/api/knowledge/stores/{store}", None, 403, 204),
    ("post", "/api/knowledge/stores/{store}/sources", {"path": "/nowhere/docs"}, 403, 400),
    ("put", "/api/knowledge/stores/{store}/sharing", {"readers": [], "managers": []}, 403, 200),
    ("post", "/api/knowledge/sources/{source}/update", {}, 403, 202),
    ("patch", "/api/knowledge/sources/{source}", {"enabled": False}, 403, 200),
    ("delete", "/api/knowledge/sources/{source}", None, 403, 204),
    ("post", "/api/knowledge/jobs/{job}/confirm", {}, 403, 202),
    ("post", "/api/knowledge/jobs/{job}/cancel", {}, 403, 400),
]


def _fill(value, ids: dict[str, int]):
    if isinstance(value, str):
        filled = value.format(**ids)
        return int(filled) if value.startswith("{") and filled.isdigit() else filled
    if isinstance(value, list):
        return [_fill(item, ids) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, ids) for key, item in value.items()}
    return value


def _ids(world: World) -> dict[str, int]:
    return {
        "store": world.store.pk,
        "source": world.source.pk,
        "document": world.document.pk,
        "job": world.job.pk,
    }


def _expected(role: str, reader_status: int, manager_status: int) -> int:
    if role not in READERS:
        return 404
    if reader_status == manager_status:
        return reader_status
    return manager_status if role in MANAGERS else reader_status


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "url", "body", "reader", "manager"), PAGE_ROUTES)
def test_every_collection_page_answers_by_the_persons_access(
    client, world, role, method, url, body, reader, manager
):
    client.force_login(world.people[role])
    ids = _ids(world)
    call = getattr(client, method)
    response = (
        call(_fill(url, ids), _fill(body, ids)) if body is not None else call(_fill(url, ids))
    )
    assert response.status_code == _expected(role, reader, manager), response.content[:500]
    if response.status_code == 403:
        assert "may read the collection" in response.content.decode()


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "url", "body", "reader", "manager"), API_ROUTES)
def test_every_collection_api_route_answers_by_the_persons_access(
    client, world, role, method, url, body, reader, manager
):
    client.force_login(world.people[role])
    api = Api(client)
    ids = _ids(world)
    target = _fill(url, ids)
    if method == "patch":
        response = client.patch(target, _fill(body, ids), content_type="application/json")
    else:
        call = getattr(api, method)
        response = call(target, _fill(body, ids)) if body is not None else call(target)
    assert response.status_code == _expected(role, reader, manager), response.content[:500]
    if response.status_code == 403:
        assert "may read the collection" in response.json()["detail"]


def test_a_collection_shared_with_people_only_is_hidden_from_the_rest_of_the_organization(
    client,
):
    organization = OrganizationFactory()
    owner, reader, colleague = join(organization), join(organization), join(organization)
    store = services.store_create(owner=owner, name="Just us", provider="none")
    services.store_share_set(
        store=store, actor=owner, organization_id=None, readers=[reader.pk], managers=[]
    )
    client.force_login(reader)
    assert client.get(f"/api/knowledge/stores/{store.pk}").status_code == 200
    client.force_login(colleague)
    assert client.get(f"/api/knowledge/stores/{store.pk}").status_code == 404
    assert client.get(f"/knowledge/{store.pk}/").status_code == 404


def test_the_list_shows_shared_collections_read_only_and_the_api_lists_them(client, world):
    mine = services.store_create(owner=world.people["stranger"], name="Private", provider="none")
    client.force_login(world.people["org_member"])
    page = client.get("/knowledge/").content.decode()
    assert "Team handbook" in page and "read-only" in page and "Private" not in page
    listed = [row["name"] for row in Api(client).get("/api/knowledge/stores").json()]
    assert listed == ["Team handbook"]
    client.force_login(world.people["stranger"])
    listed = [row["id"] for row in Api(client).get("/api/knowledge/stores").json()]
    assert listed == [mine.pk]


def test_a_reader_sees_no_upload_folder_or_sharing_forms_on_the_collection_page(client, world):
    client.force_login(world.people["named_reader"])
    page = client.get(f"/knowledge/{world.store.pk}/").content.decode()
    assert "shared-notice" in page
    for form in ("/uploads/", "/folders/", "/sharing/", "/delete/"):
        assert f"/knowledge/{world.store.pk}{form}" not in page
    client.force_login(world.people["named_manager"])
    page = client.get(f"/knowledge/{world.store.pk}/").content.decode()
    assert f"/knowledge/{world.store.pk}/uploads/" in page


def test_sharing_is_read_back_as_set(client, world):
    client.force_login(world.people["owner"])
    sharing = Api(client).get(f"/api/knowledge/stores/{world.store.pk}/sharing").json()
    assert sharing == {
        "organization_id": world.organization.pk,
        "readers": [world.people["named_reader"].pk],
        "managers": [world.people["named_manager"].pk],
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"organization_id": "other_org"}, "organization_id"),
        ({"organization_id": 999_999}, "organization_id"),
        ({"readers": ["stranger"]}, "readers"),
        ({"readers": ["other"]}, "readers"),
        ({"readers": [999_999]}, "readers"),
        ({"managers": ["stranger"]}, "managers"),
        ({"readers": ["org_member"], "managers": ["org_member"]}, "managers"),
        ({"readers": ["owner"]}, "readers"),
    ],
)
def test_sharing_with_a_foreign_or_unknown_id_is_a_400_naming_the_field(client, world, body, field):
    other_org = Organization.objects.exclude(pk=world.organization.pk).get()

    def resolve(value):
        if value == "other_org":
            return other_org.pk
        return world.people[value].pk if isinstance(value, str) else value

    payload = {
        key: [resolve(v) for v in value] if isinstance(value, list) else resolve(value)
        for key, value in body.items()
    }
    client.force_login(world.people["owner"])
    response = Api(client).put(f"/api/knowledge/stores/{world.store.pk}/sharing", payload)
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert response.json()["detail"].startswith(f"{field}:")
    assert StoreShare.objects.filter(store=world.store).count() == 3


def test_sharing_ids_that_are_not_numbers_are_a_4xx_naming_the_field(client, world):
    client.force_login(world.people["owner"])
    response = Api(client).put(
        f"/api/knowledge/stores/{world.store.pk}/sharing", {"readers": ["someone"]}
    )
    assert 400 <= response.status_code < 500
    assert "readers" in response.content.decode()


def test_the_sharing_form_refuses_a_person_outside_the_organization(client, world):
    client.force_login(world.people["owner"])
    response = client.post(
        f"/knowledge/{world.store.pk}/sharing/",
        {"organization": "on", "readers": [str(world.people["stranger"].pk)]},
    )
    assert response.status_code == 400
    assert response.context["share_form"].errors["readers"]
    assert StoreShare.objects.filter(store=world.store).count() == 3


def test_the_sharing_form_shares_with_the_organization_and_people(client):
    organization = OrganizationFactory()
    owner, reader = join(organization), join(organization)
    store = services.store_create(owner=owner, name="Handbook", provider="none")
    client.force_login(owner)
    response = client.post(
        f"/knowledge/{store.pk}/sharing/", {"organization": "on", "readers": [str(reader.pk)]}
    )
    assert response.status_code == 302
    shares = {(s.user_id, s.organization_id, s.access) for s in store.shares.all()}
    assert shares == {(reader.pk, None, "read"), (None, organization.pk, "read")}


def test_a_manager_cannot_add_a_folder_only_the_owner_was_granted(
    client, world, tmp_path, settings
):
    from knowledge.models import FolderGrant

    settings.KNOWLEDGE_ALLOWED_ROOTS = [str(tmp_path)]
    FolderGrant.objects.create(path=str(tmp_path), user=world.people["owner"])
    (tmp_path / "private").mkdir()
    client.force_login(world.people["named_manager"])
    response = Api(client).post(
        f"/api/knowledge/stores/{world.store.pk}/sources", {"path": str(tmp_path / "private")}
    )
    assert response.status_code == 400
    assert not world.store.sources.filter(kind=Source.Kind.FOLDER).exists()
    client.force_login(world.people["owner"])
    response = Api(client).post(
        f"/api/knowledge/stores/{world.store.pk}/sources", {"path": str(tmp_path / "private")}
    )
    assert response.status_code == 201


def test_a_share_reaches_no_one_once_it_is_taken_back(client, world):
    services.store_share_set(
        store=world.store,
        actor=world.people["owner"],
        organization_id=None,
        readers=[],
        managers=[],
    )
    for role in ROLES[1:]:
        client.force_login(world.people[role])
        assert client.get(f"/knowledge/{world.store.pk}/").status_code == 404


def test_a_share_ends_when_the_person_or_the_owner_leaves_the_organization(client, world):
    url = f"/api/knowledge/stores/{world.store.pk}"
    Membership.objects.filter(user=world.people["named_reader"]).delete()
    client.force_login(world.people["named_reader"])
    assert client.get(url).status_code == 404
    Membership.objects.filter(user=world.people["owner"]).delete()
    for role in ("org_member", "org_admin", "named_manager"):
        client.force_login(world.people[role])
        assert client.get(url).status_code == 404


def test_the_collection_page_speaks_german_to_a_reader(client, world):
    client.force_login(world.people["named_reader"])
    page = client.get(f"/knowledge/{world.store.pk}/", HTTP_ACCEPT_LANGUAGE="de").content
    assert "Sie dürfen sie lesen und durchsuchen, aber nicht ändern" in page.decode()
    refused = client.post(f"/knowledge/{world.store.pk}/delete/", HTTP_ACCEPT_LANGUAGE="de")
    assert refused.status_code == 403
    assert "lesen, aber nicht ändern" in refused.content.decode()


def test_a_manager_saving_the_sharing_form_unchanged_keeps_every_share(client, world):
    manager = world.people["named_manager"]
    client.force_login(manager)
    form = client.get(f"/knowledge/{world.store.pk}/").context["share_form"]
    before = set(StoreShare.objects.filter(store=world.store).values_list("user", "access"))
    response = client.post(
        f"/knowledge/{world.store.pk}/sharing/",
        {
            "organization": "on",
            "readers": form["readers"].value(),
            "managers": form["managers"].value(),
        },
    )
    assert response.status_code == 302
    after = set(StoreShare.objects.filter(store=world.store).values_list("user", "access"))
    assert after == before and (manager.pk, "manage") in after
