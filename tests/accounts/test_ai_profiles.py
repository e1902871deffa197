from __future__ import annotations

import json

import pytest
from django.db import connection

from accounts.models import AIProfile
from tests.factories import AIProfileFactory, UserFactory

pytestmark = pytest.mark.django_db

API_KEY = "sk-test-7f3a9c1e5b2d4f6a8c0e"


def _stored_key(profile_id: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT api_key_encrypted FROM accounts_aiprofile WHERE id = %s", [profile_id]
        )
        return cursor.fetchone()[0]


def test_api_key_is_encrypted_at_rest_and_decrypts_back(user):
    profile = AIProfileFactory(owner=user)
    profile.api_key = API_KEY
    profile.save()
    stored = _stored_key(profile.pk)
    assert API_KEY not in stored
    assert AIProfile.objects.get(pk=profile.pk).api_key == API_KEY


def test_api_key_never_appears_in_pages(client, user):
    client.force_login(user)
    response = client.post(
        "/accounts/settings/ai-profiles/new/",
        {
            "name": "Local",
            "base_url": "http://127.0.0.1:8080/v1",
            "model": "llama",
            "context_window": 8192,
            "role": "text",
            "api_key": API_KEY,
        },
    )
    assert response.status_code == 302
    profile = AIProfile.objects.get(owner=user)
    assert profile.api_key == API_KEY
    for url in ("/accounts/settings/", f"/accounts/settings/ai-profiles/{profile.pk}/"):
        page = client.get(url)
        assert page.status_code == 200
        assert API_KEY not in page.content.decode()
        assert _stored_key(profile.pk) not in page.content.decode()


def test_api_key_never_appears_in_the_admin(client):
    admin = UserFactory(is_staff=True, is_superuser=True)
    profile = AIProfileFactory(owner=admin)
    profile.api_key = API_KEY
    profile.save()
    client.force_login(admin)
    for url in ("/admin/accounts/aiprofile/", f"/admin/accounts/aiprofile/{profile.pk}/change/"):
        page = client.get(url)
        assert page.status_code == 200
        assert API_KEY not in page.content.decode()
        assert _stored_key(profile.pk) not in page.content.decode()


def test_api_key_is_write_only_in_the_api(client, user):
    client.force_login(user)
    created = client.post(
        "/api/ai-profiles",
        data=json.dumps(
            {
                "name": "Remote",
                "base_url": "https://api.example/v1",
                "model": "m",
                "api_key": API_KEY,
            }
        ),
        content_type="application/json",
    )
    assert created.status_code == 201
    assert API_KEY not in created.content.decode()
    assert created.json()["has_api_key"] is True
    listed = client.get("/api/ai-profiles")
    assert API_KEY not in listed.content.decode()
    assert listed.json()[0]["has_api_key"] is True


def test_saving_a_profile_with_an_empty_key_keeps_the_stored_key(client, user):
    profile = AIProfileFactory(owner=user)
    profile.api_key = API_KEY
    profile.save()
    client.force_login(user)
    response = client.put(
        f"/api/ai-profiles/{profile.pk}",
        data=json.dumps({"name": "Renamed", "base_url": profile.base_url, "model": "m2"}),
        content_type="application/json",
    )
    assert response.status_code == 200
    profile.refresh_from_db()
    assert (profile.name, profile.api_key) == ("Renamed", API_KEY)


def test_another_users_profile_is_a_404(client, user):
    foreign = AIProfileFactory()
    client.force_login(user)
    assert client.get(f"/accounts/settings/ai-profiles/{foreign.pk}/").status_code == 404
    response = client.put(
        f"/api/ai-profiles/{foreign.pk}",
        data=json.dumps({"name": "x", "base_url": "http://x.example/v1", "model": "m"}),
        content_type="application/json",
    )
    assert response.status_code == 404
    assert client.delete(f"/api/ai-profiles/{foreign.pk}").status_code == 404
    assert AIProfile.objects.filter(pk=foreign.pk).exists()


def test_a_second_default_for_the_same_role_replaces_the_first(user):
    from accounts.services import ai_profile_save

    first = ai_profile_save(profile=AIProfileFactory.build(owner=user, is_default=True), api_key="")
    second = ai_profile_save(
        profile=AIProfileFactory.build(owner=user, is_default=True), api_key=""
    )
    first.refresh_from_db()
    assert (first.is_default, second.is_default) == (False, True)


def test_invalid_profile_is_a_400_with_the_field_named(client, user):
    client.force_login(user)
    response = client.post(
        "/api/ai-profiles",
        data=json.dumps({"name": "Bad", "base_url": "not a url", "model": "m"}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "base_url" in response.json()["detail"]


def test_api_requires_sign_in(client):
    assert client.get("/api/ai-profiles").status_code == 401


LOCAL_FORM = {
    "name": "Ollama",
    "base_url": "http://127.0.0.1:11434/v1",
    "model": "llama",
    "context_window": 8192,
    "role": "text",
}


def test_a_profile_is_not_local_unless_the_person_says_so(client, user):
    client.force_login(user)
    page = client.get("/accounts/settings/ai-profiles/new/").content.decode()
    assert 'name="runs_locally"' in page and "The model runs on this machine" in page
    assert client.post("/accounts/settings/ai-profiles/new/", LOCAL_FORM).status_code == 302
    assert AIProfile.objects.get(owner=user).runs_locally is False
    created = client.post(
        "/api/ai-profiles",
        data=json.dumps({"name": "Remote", "base_url": "https://api.example/v1", "model": "m"}),
        content_type="application/json",
    )
    assert created.json()["runs_locally"] is False


def test_the_local_flag_is_set_on_the_page_and_in_the_api(client, user):
    client.force_login(user)
    response = client.post(
        "/accounts/settings/ai-profiles/new/", {**LOCAL_FORM, "runs_locally": "on"}
    )
    assert response.status_code == 302
    profile = AIProfile.objects.get(owner=user)
    assert profile.runs_locally is True
    updated = client.put(
        f"/api/ai-profiles/{profile.pk}",
        data=json.dumps({**LOCAL_FORM, "runs_locally": False}),
        content_type="application/json",
    )
    assert updated.status_code == 200 and updated.json()["runs_locally"] is False
    assert client.get("/api/ai-profiles").json()[0]["runs_locally"] is False
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]["AIProfileIn"]
    assert schema["properties"]["runs_locally"]["default"] is False


def test_the_demo_model_is_registered_as_running_on_this_machine(user):
    from accounts.management.commands.demo_model import demo_profile_register

    assert demo_profile_register(user=user, port=8091).runs_locally is True


def test_the_demo_model_is_the_default_only_for_someone_without_another_profile(user):
    from accounts.management.commands.demo_model import demo_profile_register

    assert demo_profile_register(user=user, port=8091).is_default is True
    other = UserFactory()
    AIProfileFactory(owner=other, name="Mine", is_default=False)
    demo = demo_profile_register(user=other, port=8091)
    assert demo.is_default is False, "a profile the person added, ticked or not, stays first"
    again = demo_profile_register(user=user, port=8092)
    assert again.is_default is True and again.base_url == "http://127.0.0.1:8092/v1"
