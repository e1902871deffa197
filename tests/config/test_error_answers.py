"""Error answers fit the caller: JSON for the API, the HTML page for people."""

from __future__ import annotations

import pytest

from accounts.models import ApiToken
from accounts.services import api_token_create
from memory_addon.models import MemoryFile
from memory_addon.services.scopes import ensure_user_scope
from tests.factories import UserFactory


@pytest.mark.django_db
def test_an_oversized_api_body_is_a_json_400_that_names_the_limit(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    person = UserFactory()
    scope = ensure_user_scope(person)
    _, plain = api_token_create(user=person, name="script", scope=ApiToken.Scope.READ_WRITE)
    body = '{"text": "' + "y" * (80 * 1024) + '"}'
    response = client.post(
        f"/api/memory/scopes/{scope.pk}/notes",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {plain}",
    )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert "64 KiB" in response.json()["detail"]
    assert not MemoryFile.objects.filter(scope=scope).exists()


@pytest.mark.django_db
def test_an_unreadable_page_form_still_gets_the_html_page(client, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    person = UserFactory()
    client.force_login(person)
    fields = {f"f{n}": "x" for n in range(10)}
    response = client.post("/chat/schedules/", fields)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert "The request could not be read" in response.text


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/no-such-endpoint"),
        ("put", "/api/memory/scopes/{scope}/notes/1%2F..%2Fx"),
        ("delete", "/api/memory/scopes/{scope}/notes/a/b?base_sha256=x"),
    ],
)
def test_an_api_address_that_leads_nowhere_is_a_json_404(client, method, path):
    person = UserFactory()
    scope = ensure_user_scope(person)
    _, plain = api_token_create(user=person, name="script", scope=ApiToken.Scope.READ_WRITE)
    response = getattr(client, method)(
        path.format(scope=scope.pk),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {plain}",
    )
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


@pytest.mark.django_db
def test_a_page_address_that_leads_nowhere_is_still_the_page(client):
    client.force_login(UserFactory())
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
