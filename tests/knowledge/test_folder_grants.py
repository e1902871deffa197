"""Server folders are granted by an admin to people or organizations; by default admins only (K2).

Issue 10, item 14: before, every signed-up person could index every file under
KNOWLEDGE_ALLOWED_ROOTS, including folders another person indexed.
"""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from accounts.models import Membership, Organization
from knowledge import services
from knowledge.errors import KnowledgeRefusal
from knowledge.models import FolderGrant, Source
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def roots(settings, tmp_path):
    settings.KNOWLEDGE_ALLOWED_ROOTS = [str(tmp_path)]
    for name in ("team-a", "team-b"):
        (tmp_path / name / "docs").mkdir(parents=True)
    return tmp_path


@pytest.fixture
def plain_store(user):
    return services.store_create(owner=user, name="Plain", provider="none")


def _post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_without_a_grant_a_person_may_not_index_server_folders(client, user, plain_store, roots):
    client.force_login(user)
    response = _post(
        client, f"/api/knowledge/stores/{plain_store.pk}/sources", {"path": str(roots / "team-a")}
    )
    assert response.status_code == 400
    assert "No server folder has been granted to you" in response.json()["detail"]
    assert not Source.objects.exists()


def test_the_folder_form_names_what_a_person_may_use(client, user, plain_store, roots):
    FolderGrant.objects.create(path=str(roots / "team-a"), user=user)
    client.force_login(user)
    response = client.post(
        f"/knowledge/{plain_store.pk}/folders/",
        {"path": str(roots / "team-b"), "max_file_mib": 50, "sync_mode": "manual"},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "outside the folders you may index" in page and str(roots / "team-a") in page
    assert not Source.objects.exists()
    assert client.get(f"/knowledge/{plain_store.pk}/").content.decode().count(str(roots / "team-a"))


def test_a_user_grant_covers_its_folder_and_sub_folders_only(user, plain_store, roots):
    FolderGrant.objects.create(path=str(roots / "team-a"), user=user)
    source, _ = services.source_add_folder(store=plain_store, path=str(roots / "team-a" / "docs"))
    assert source.path == str(roots / "team-a" / "docs")
    with pytest.raises(KnowledgeRefusal, match="outside the folders you may index"):
        services.source_add_folder(store=plain_store, path=str(roots / "team-b"))


def test_an_organization_grant_covers_its_members(user, plain_store, roots):
    organization = Organization.objects.create(name="Team A", slug="team-a")
    Membership.objects.create(organization=organization, user=user)
    FolderGrant.objects.create(path=str(roots / "team-a"), organization=organization)
    services.source_add_folder(store=plain_store, path=str(roots / "team-a"))
    outsider = UserFactory()
    theirs = services.store_create(owner=outsider, name="Theirs", provider="none")
    with pytest.raises(KnowledgeRefusal, match="No server folder has been granted"):
        services.source_add_folder(store=theirs, path=str(roots / "team-a"))


def test_admins_may_use_every_allowed_root_without_a_grant(roots):
    admin = UserFactory(is_superuser=True, is_staff=True)
    store = services.store_create(owner=admin, name="Admin", provider="none")
    services.source_add_folder(store=store, path=str(roots / "team-b"))


def test_a_grant_outside_the_allowed_roots_is_refused_and_never_counts(
    user, roots, tmp_path_factory
):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    grant = FolderGrant(path=str(elsewhere), user=user)
    with pytest.raises(ValidationError, match="KNOWLEDGE_ALLOWED_ROOTS"):
        grant.full_clean()
    grant.save()  # even if written around the admin form, it grants nothing
    assert services.granted_folders(user) == []


def test_a_revoked_grant_stops_updates_of_its_sources(user, plain_store, roots):
    grant = FolderGrant.objects.create(path=str(roots / "team-a"), user=user)
    source, job = services.source_add_folder(store=plain_store, path=str(roots / "team-a"))
    job.state = "succeeded"
    job.save()
    grant.delete()
    with pytest.raises(KnowledgeRefusal, match="No server folder has been granted"):
        services.source_update_now(source=source)


def test_admins_grant_folders_in_the_django_admin(client, roots):
    admin = UserFactory(is_superuser=True, is_staff=True)
    person = UserFactory()
    client.force_login(admin)
    assert client.get("/admin/knowledge/foldergrant/").status_code == 200
    response = client.post(
        "/admin/knowledge/foldergrant/add/",
        {"path": str(roots / "team-a"), "user": person.pk, "organization": "", "note": ""},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert services.granted_folders(person) == [roots / "team-a"]


def test_adding_a_folder_through_a_linked_parent_is_refused(user, plain_store, roots):
    FolderGrant.objects.create(path=str(roots), user=user)
    (roots / "via").symlink_to(roots / "team-a", target_is_directory=True)
    with pytest.raises(KnowledgeRefusal, match="symbolic link"):
        services.source_add_folder(store=plain_store, path=str(roots / "via" / "docs"))
    with pytest.raises(KnowledgeRefusal, match="no folder at"):
        services.source_add_folder(store=plain_store, path=str(roots / "nowhere"))
    with pytest.raises(KnowledgeRefusal, match=r"without '\.\.'"):
        services.source_add_folder(store=plain_store, path=str(roots / "team-a" / ".." / "x"))


def test_a_person_without_a_grant_learns_nothing_about_other_folders(user, plain_store, roots):
    (roots / "via").symlink_to(roots / "team-a", target_is_directory=True)
    for path in (roots / "via", roots / "nowhere", roots / "team-b"):
        with pytest.raises(KnowledgeRefusal, match="No server folder has been granted"):
            services.source_add_folder(store=plain_store, path=str(path))
