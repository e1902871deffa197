"""Project banks under races and odd input, and proposals naming odd conversation references."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from host.errors import ChangeRefused, LimitExceeded
from memory_addon.models import MemoryScope, Proposal
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import bank_create
from memory_addon.turns import Turn
from tests.factories import UserFactory


def _parallel(count: int, work) -> list[object]:
    """Run `work(n)` on `count` threads started together; each returns or raises."""
    results: list[object] = [None] * count
    start = threading.Barrier(count)

    def run(n: int) -> None:
        start.wait()
        try:
            results[n] = work(n)
        except Exception as error:  # what each caller would have seen
            results[n] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.django_db
def test_a_proposal_from_a_conversation_reference_in_odd_digits_keeps_the_inbox_up(client, user):
    turn = Turn(user=user, conversation_ref="\u00b2", message_ref="1")
    memory_change_request(turn=turn, operation={"action": "add", "text": "Likes tea."})
    assert Proposal.objects.filter(user=user, conversation_ref="\u00b2").exists()
    client.force_login(user)
    assert client.get("/inbox/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_parallel_bank_creates_stay_within_the_limit(settings):
    settings.MEMORY_MAX_BANKS_PER_PERSON = 5
    person = UserFactory()
    for n in range(3):
        bank_create(user=person, project_key=f"before/{n}")
    results = _parallel(8, lambda n: bank_create(user=person, project_key=f"race/{n}"))
    created = [r for r in results if isinstance(r, MemoryScope)]
    assert len(created) == 2
    assert all(isinstance(r, LimitExceeded) for r in results if r not in created)
    assert MemoryScope.objects.filter(owner=person, kind=MemoryScope.Kind.PROJECT).count() == 5


@pytest.mark.django_db(transaction=True)
def test_parallel_creates_of_one_key_are_one_bank_and_one_success():
    person = UserFactory()
    results = _parallel(6, lambda n: bank_create(user=person, project_key="race/same"))
    assert sum(isinstance(r, MemoryScope) for r in results) == 1
    assert sum(isinstance(r, ChangeRefused) for r in results) == 5
    assert MemoryScope.objects.filter(owner=person, project_key="race/same").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "identity",
    [
        {"project_key": "\u202eevil"},
        {"project_key": "z\u200bw"},
        {"project_key": "line1\nline2"},
        {"project_key": " padded "},
        {"project_key": "fine", "project_name": "n\u202ex"},
    ],
)
def test_the_banks_api_refuses_keys_and_names_the_page_refuses(client, user, identity):
    client.force_login(user)
    answer = client.post(
        "/api/memory/banks/enabled?enabled=true",
        json.dumps(identity),
        content_type="application/json",
    )
    assert 400 <= answer.status_code < 500, answer.content
    assert "plain one-line text" in answer.json()["detail"]
    assert not MemoryScope.objects.filter(owner=user, kind=MemoryScope.Kind.PROJECT).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["", "yes", "on"])
def test_a_malformed_switch_value_leaves_the_bank_as_it_is(client, user, value):
    bank = bank_create(user=user, project_key="shop")
    client.force_login(user)
    data = {"enabled": value} if value else {}
    answer = client.post(f"/memory/banks/{bank.pk}/enabled/", data)
    assert answer.status_code == 400
    bank.refresh_from_db()
    assert bank.enabled
