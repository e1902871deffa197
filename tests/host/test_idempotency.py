"""A write sent again with the same Idempotency-Key is stored once and answered as the first,
because its answer is kept in the write's own transaction."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import psycopg
import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.services import api_token_create
from host.idempotency import answer_name, idempotent_answers_purge, lock_id
from host.models import IdempotentAnswer
from host.outbound import release_db_connection
from memory_addon.api import notes as notes_api
from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.services.scopes import ensure_user_scope
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _add(client, scope, text, key=None, **extra):
    headers = {"Idempotency-Key": key} if key is not None else {}
    return client.post(
        f"/api/memory/scopes/{scope.pk}/notes",
        json.dumps({"text": text}),
        content_type="application/json",
        headers=headers,
        **extra,
    )


def _index(scope) -> str:
    row = MemoryFile.objects.filter(scope=scope, path="index.md").first()
    return row.content if row else ""


def test_a_note_sent_twice_with_one_key_is_saved_once_and_answered_alike(client, user, scope):
    client.force_login(user)
    first = _add(client, scope, "likes green tea", key="retry-1")
    again = _add(client, scope, "likes green tea", key="retry-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert ChangeSet.objects.filter(scope=scope).count() == 1
    assert _index(scope).count("likes green tea") == 1


def test_without_a_key_or_with_a_new_key_each_send_is_a_write(client, user, scope):
    client.force_login(user)
    assert _add(client, scope, "likes green tea").status_code == 201
    assert _add(client, scope, "likes black tea", key="a").status_code == 201
    assert _add(client, scope, "likes herbal tea", key="b").status_code == 201
    assert ChangeSet.objects.filter(scope=scope).count() == 3


def test_a_key_reused_with_another_body_is_refused_and_saves_nothing(client, user, scope):
    client.force_login(user)
    _add(client, scope, "likes green tea", key="k")
    other = _add(client, scope, "likes coffee", key="k")
    assert other.status_code == 422
    assert "another body" in other.json()["detail"]
    assert "coffee" not in _index(scope)


def test_one_persons_key_is_never_replayed_to_another(client, user, scope):
    client.force_login(user)
    _add(client, scope, "likes green tea", key="shared")
    stranger = UserFactory()
    client.force_login(stranger)
    theirs = ensure_user_scope(stranger)
    answer = _add(client, theirs, "likes green tea", key="shared")
    assert answer.status_code == 201 and "Idempotent-Replayed" not in answer
    assert ChangeSet.objects.filter(scope=theirs).count() == 1


def test_a_token_caller_gets_the_same_protection(client, user, scope):
    _, plain = api_token_create(user=user, name="script")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {plain}"}
    assert _add(client, scope, "likes green tea", key="t1", **auth).status_code == 201
    assert _add(client, scope, "likes green tea", key="t1", **auth).status_code == 201
    assert ChangeSet.objects.filter(scope=scope).count() == 1


@pytest.mark.parametrize("key", ["", "x" * 256, "bad\x01key"])
def test_an_unusable_key_is_a_400_naming_the_header(client, user, scope, key):
    client.force_login(user)
    answer = _add(client, scope, "likes green tea", key=key)
    assert answer.status_code == 400
    assert "Idempotency-Key" in answer.json()["detail"]
    assert ChangeSet.objects.filter(scope=scope).count() == 0


def test_without_redis_a_retried_write_is_still_stored_once(client, user, scope, monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("Redis is away")

    for method in ("add", "get", "set", "delete"):
        monkeypatch.setattr(cache, method, down)
    client.force_login(user)
    first = _add(client, scope, "likes green tea", key="k")
    again = _add(client, scope, "likes green tea", key="k")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert ChangeSet.objects.filter(scope=scope).count() == 1


def test_a_request_that_fails_after_its_write_stores_nothing_and_its_retry_stores_once(
    user, scope, monkeypatch
):
    real = notes_api.change_summary
    failures = iter([RuntimeError("the answer could not be built")])

    def fails_once(change_set):
        for failure in failures:
            raise failure
        return real(change_set)

    monkeypatch.setattr(notes_api, "change_summary", fails_once)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    assert _add(client, scope, "likes green tea", key="k").status_code == 500
    # The note was written before the failure; the 500 rolled it back with no kept answer.
    assert ChangeSet.objects.filter(scope=scope).count() == 0
    assert not IdempotentAnswer.objects.exists()
    retry = _add(client, scope, "likes green tea", key="k")
    assert retry.status_code == 201 and "Idempotent-Replayed" not in retry
    assert _add(client, scope, "likes green tea", key="k")["Idempotent-Replayed"] == "true"
    assert _index(scope).count("likes green tea") == 1


@pytest.mark.django_db(transaction=True)
def test_a_second_request_while_the_key_is_running_is_told_to_wait_and_stores_nothing(
    client, user, scope
):
    client.force_login(user)
    path = f"/api/memory/scopes/{scope.pk}/notes"
    name = answer_name(f"user:{user.pk}", "POST", path, "k")
    settings = connection.settings_dict
    # Another web worker's request holds the key's lock in its open transaction.
    with psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"],
        user=settings["USER"],
        password=settings["PASSWORD"],
        dbname=settings["NAME"],
    ) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", [lock_id(name)])
        waiting = _add(client, scope, "likes green tea", key="k")
        assert waiting.status_code == 409
        assert "still running" in waiting.json()["detail"]
        assert ChangeSet.objects.filter(scope=scope).count() == 0
    # Its worker died (the connection closed): the lock is gone and the retry runs.
    assert _add(client, scope, "likes green tea", key="k").status_code == 201
    assert ChangeSet.objects.filter(scope=scope).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_keyed_request_that_calls_out_holds_no_transaction_while_it_waits(
    client, user, scope, monkeypatch
):
    real = notes_api.note_add
    seen: list[bool] = []

    def calls_out_first(**kwargs):
        release_db_connection()  # as before an embeddings or model call
        seen.append(connection.in_atomic_block)
        return real(**kwargs)

    monkeypatch.setattr(notes_api, "note_add", calls_out_first)
    client.force_login(user)
    first = _add(client, scope, "likes green tea", key="k")
    again = _add(client, scope, "likes green tea", key="k")
    assert first.status_code == again.status_code == 201
    assert seen == [False]  # it ran again without the transaction, once; then replayed
    assert again["Idempotent-Replayed"] == "true"
    assert ChangeSet.objects.filter(scope=scope).count() == 1


def test_a_kept_answer_lives_a_day_and_is_purged_after(client, user, scope):
    client.force_login(user)
    _add(client, scope, "likes green tea", key="k")
    IdempotentAnswer.objects.update(created_at=timezone.now() - timedelta(days=1, minutes=1))
    # A day later the key is a new write, and the old answer goes with the purge.
    assert "Idempotent-Replayed" not in _add(client, scope, "likes green tea", key="k")
    IdempotentAnswer.objects.update(created_at=timezone.now() - timedelta(days=2))
    assert idempotent_answers_purge() == 1
    assert not IdempotentAnswer.objects.exists()


def test_the_memory_tabs_add_form_sent_again_adds_one_note(client, user, scope):
    client.force_login(user)
    page = client.get(reverse("memory") + f"?scope={scope.pk}").content.decode()
    key = re.search(r'name="idempotency_key" value="([0-9a-f]{32})"', page)
    assert key, "the add form carries a key"
    form = {"text": "likes green tea", "idempotency_key": key.group(1)}
    url = reverse("memory_entry_add", args=[scope.pk])
    first = client.post(url, form)
    again = client.post(url, form)
    assert first.status_code == again.status_code == 302
    assert _index(scope).count("likes green tea") == 1
    # The replay goes where the first answer went, with its security headers.
    assert again["Idempotent-Replayed"] == "true"
    for header in ("Location", "Content-Security-Policy", "X-Frame-Options", "Cache-Control"):
        assert again.get(header) == first.get(header) is not None, header
    # The page after the save carries a new key, so the next note is its own write.
    fresh = client.get(reverse("memory") + f"?scope={scope.pk}").content.decode()
    assert key.group(1) not in fresh
