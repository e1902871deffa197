from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import ApiToken, Membership
from accounts.services import api_token_create
from knowledge.models import Job, Source
from knowledge.services import store_create, store_share_set
from tests.factories import OrganizationFactory, UserFactory
from tests.knowledge.conftest import barrier

pytestmark = pytest.mark.django_db(transaction=True)


def _post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_the_api_runs_add_review_confirm_and_retrieve(
    client, user, store, sample_folder, allowed_root, celery_worker
):
    client.force_login(user)
    added = _post(client, f"/api/knowledge/stores/{store.pk}/sources", {"path": str(sample_folder)})
    assert added.status_code == 201, added.content
    job_id = added.json()["job"]["id"]
    barrier()
    review = client.get(f"/api/knowledge/jobs/{job_id}").json()
    assert review["state"] == "review"
    assert {row["path"] for row in review["review"] if row["status"] == "new"} == {
        "guide/setup.md",
        "manual.pdf",
        "notes.txt",
        "tool.py",
    }
    confirmed = _post(client, f"/api/knowledge/jobs/{job_id}/confirm", {})
    assert confirmed.status_code == 202
    barrier()
    result = _post(
        client, "/api/knowledge/retrieve", {"store_ids": [store.pk], "query": "guanaco care"}
    ).json()
    assert result["excerpts"][0]["path"] == "manual.pdf" and result["excerpts"][0]["page"] == 1
    assert "[R1] manual.pdf, page 1" in result["block"]


def test_another_users_collection_source_and_job_are_404(client, user, embedding_profile, tmp_path):
    stranger = UserFactory()
    theirs = store_create(owner=stranger, name="theirs", provider="none")
    source = Source.objects.create(store=theirs, kind=Source.Kind.FOLDER, path=str(tmp_path))
    job = Job.objects.create(
        store=theirs, source=source, kind=Job.Kind.SCAN, state=Job.State.REVIEW
    )
    client.force_login(user)
    responses = [
        client.get(f"/api/knowledge/stores/{theirs.pk}"),
        client.get(f"/api/knowledge/stores/{theirs.pk}/sources"),
        client.delete(f"/api/knowledge/stores/{theirs.pk}"),
        _post(client, f"/api/knowledge/sources/{source.pk}/update", {}),
        client.delete(f"/api/knowledge/sources/{source.pk}"),
        client.get(f"/api/knowledge/jobs/{job.pk}"),
        _post(client, f"/api/knowledge/jobs/{job.pk}/confirm", {}),
        _post(client, "/api/knowledge/retrieve", {"store_ids": [theirs.pk], "query": "x"}),
        client.get(f"/knowledge/{theirs.pk}/"),
        client.post(f"/knowledge/sources/{source.pk}/remove/"),
    ]
    assert [r.status_code for r in responses] == [404] * len(responses)
    assert Source.objects.filter(pk=source.pk).exists()


def test_keyword_only_collections_work_without_a_model(
    client, user, sample_folder, allowed_root, celery_worker
):
    client.force_login(user)
    created = _post(client, "/api/knowledge/stores", {"name": "Plain", "provider": "none"})
    assert created.status_code == 201 and created.json()["semantic"] is False
    store_id = created.json()["id"]
    job_id = _post(
        client, f"/api/knowledge/stores/{store_id}/sources", {"path": str(sample_folder)}
    ).json()["job"]["id"]
    barrier()
    _post(client, f"/api/knowledge/jobs/{job_id}/confirm", {})
    barrier()
    result = _post(
        client,
        "/api/knowledge/retrieve",
        {"store_ids": [store_id], "query": "Which animals live in the Andes?"},
    ).json()
    assert result["excerpts"] and result["excerpts"][0]["path"] == "notes.txt"


def test_a_token_uploads_files_that_are_reviewed_indexed_and_found(client, user, celery_worker):
    store = store_create(owner=user, name="Uploads", provider="none")
    _, token = api_token_create(user=user, name="uploader")
    url = f"/api/knowledge/stores/{store.pk}/uploads"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    files = [
        SimpleUploadedFile("tapirs.md", b"Tapirs browse on fruit in the rain forest.\n"),
        SimpleUploadedFile("../okapis.txt", b"Okapis are shy forest animals.\n"),
    ]
    added = client.post(url, {"documents": files}, **auth)
    assert added.status_code == 201, added.content
    assert added.json()["source"]["kind"] == "upload"
    assert added.json()["source"]["path"] == ""  # where our copies live is not the caller's
    assert added.json()["source"]["label"] == "okapis.txt, tapirs.md"
    job_id = added.json()["job"]["id"]
    barrier()
    review = client.get(f"/api/knowledge/jobs/{job_id}", **auth).json()
    assert review["state"] == "review"
    assert {row["path"] for row in review["review"]} == {"tapirs.md", "okapis.txt"}
    assert _post_as(client, f"/api/knowledge/jobs/{job_id}/confirm", auth).status_code == 202
    barrier()
    found = client.post(
        "/api/knowledge/retrieve",
        data=json.dumps({"store_ids": [store.pk], "query": "shy okapis"}),
        content_type="application/json",
        **auth,
    ).json()
    assert found["excerpts"][0]["path"] == "okapis.txt"


def _post_as(client, url, auth):
    return client.post(url, data="{}", content_type="application/json", **auth)


def test_an_upload_the_caller_may_not_make_is_refused_naming_why(client, user, settings):
    store = store_create(owner=user, name="Uploads", provider="none")
    url = f"/api/knowledge/stores/{store.pk}/uploads"
    client.force_login(user)
    nothing = client.post(url, {})
    assert nothing.status_code == 422 and "documents" in nothing.content.decode()
    binary = client.post(url, {"documents": [SimpleUploadedFile("tool.exe", b"MZ\x00\x00binary")]})
    assert binary.status_code == 400 and "tool.exe" in binary.json()["detail"]
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    many = [SimpleUploadedFile(f"f{n}.md", b"x") for n in range(4)]
    too_many = client.post(url, {"documents": many})
    assert too_many.status_code == 400 and "more than 3 files" in too_many.json()["detail"]
    long_name = client.post(url, {"documents": [SimpleUploadedFile("𠀀" * 300 + ".md", b"x")]})
    assert long_name.status_code == 400 and "name is too long" in long_name.json()["detail"]
    settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES = 3
    big = client.post(url, {"documents": [SimpleUploadedFile("big.md", b"Too big.")]})
    assert big.status_code == 400 and "big.md" in big.json()["detail"]
    settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES = 2000
    just_over = client.post(url, {"documents": [SimpleUploadedFile("near.md", b"x" * 2001)]})
    assert "near.md is 2,001 bytes; a file may be at most 2,000 bytes" in just_over.json()["detail"]

    organization = OrganizationFactory()
    reader = UserFactory()
    for person in (user, reader):
        Membership.objects.create(organization=organization, user=person)
    store_share_set(store=store, actor=user, organization_id=None, readers=[reader.pk], managers=[])
    client.force_login(reader)
    one = {"documents": [SimpleUploadedFile("a.md", b"Hello.")]}
    assert client.post(url, one).status_code == 403
    _, read_only = api_token_create(user=user, name="reader", scope=ApiToken.Scope.READ_ONLY)
    one = {"documents": [SimpleUploadedFile("a.md", b"Hello.")]}
    assert client.post(url, one, HTTP_AUTHORIZATION=f"Bearer {read_only}").status_code == 403
    client.force_login(UserFactory())
    one = {"documents": [SimpleUploadedFile("a.md", b"Hello.")]}
    assert client.post(url, one).status_code == 404
    assert not Source.objects.filter(store=store).exists()


def test_bad_input_is_a_clear_400(client, user, store):
    client.force_login(user)
    response = _post(client, f"/api/knowledge/stores/{store.pk}/sources", {"path": "relative/path"})
    assert response.status_code == 400
    assert "full path" in response.json()["detail"]


@pytest.mark.parametrize(
    ("suffix", "message"),
    [
        ("/a\x00b", "NUL"),
        ("/" + "a" * 300, "255"),
        ("/x" * 600, "1024"),
        ("/a\nb", "control"),
    ],
)
def test_nul_control_and_over_long_folder_paths_are_a_clear_4xx(
    client, user, store, allowed_root, suffix, message
):
    client.force_login(user)
    response = _post(
        client, f"/api/knowledge/stores/{store.pk}/sources", {"path": str(allowed_root) + suffix}
    )
    assert response.status_code in (400, 422), response.content
    assert message in response.content.decode()
    assert not Source.objects.exists()


@pytest.mark.parametrize(
    ("suffix", "message"),
    # A NUL is refused for every request at the door (host.middleware), in words.
    [("/a\x00b", "NUL character"), ("/" + "a" * 300, "255"), ("/a\x01b", "control")],
)
def test_nul_control_and_over_long_folder_paths_are_a_form_error(
    client, user, store, allowed_root, suffix, message
):
    client.force_login(user)
    response = client.post(
        f"/knowledge/{store.pk}/folders/",
        {"path": str(allowed_root) + suffix, "max_file_mib": 50, "sync_mode": "manual"},
    )
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Source.objects.exists()
