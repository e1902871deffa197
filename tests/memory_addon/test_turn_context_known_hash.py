"""B9 for client authors: POST /api/memory/turn-context with known_hash answers
unchanged, a delta against a block the host still knows, or the whole block."""

from __future__ import annotations

import hashlib

import pytest

from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.conftest import Api, free_port
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

URL = "/api/memory/turn-context"
TEA = "- tea: likes green tea -> tea.md"
BIKE = "- bike: rides a blue bike -> bike.md"


def _index(user, *lines: str) -> None:
    file_write(
        user=user,
        scope=ensure_user_scope(user),
        path="index.md",
        content="".join(f"{line}\n" for line in lines),
        base_sha256=None,
    )


def test_the_hash_of_the_current_block_answers_unchanged_without_the_block(api, user):
    _index(user, TEA)
    first = api.post(URL, {}).json()
    assert TEA in first["block"] and first["unchanged"] is False and first["delta"] is None
    again = api.post(URL, {"known_hash": first["hash"]}).json()
    assert again["unchanged"] is True and again["block"] == "" and again["delta"] is None
    assert again["hash"] == first["hash"]


def test_the_hash_of_an_earlier_block_answers_a_delta_and_the_new_hash(api, user):
    _index(user, TEA)
    first = api.post(URL, {}).json()
    _index(user, BIKE)
    body = api.post(URL, {"known_hash": first["hash"]}).json()
    assert body["unchanged"] is False and body["block"] == ""
    assert body["delta"] == {"base_hash": first["hash"], "added": [BIKE], "removed": [TEA]}
    assert body["hash"] != first["hash"]
    # The new hash is the block's own: the block without known_hash has it.
    whole = api.post(URL, {}).json()
    assert whole["hash"] == body["hash"]
    assert hashlib.sha256(whole["block"].encode()).hexdigest() == body["hash"]


def test_a_delta_past_the_bound_is_answered_with_the_whole_block(api, user, settings):
    settings.MEMORY_DELTA_MAX_TOKENS = 5
    _index(user, TEA)
    first = api.post(URL, {}).json()
    _index(user, TEA, BIKE)
    body = api.post(URL, {"known_hash": first["hash"]}).json()
    assert body["delta"] is None and BIKE in body["block"] and TEA in body["block"]


def test_an_unknown_hash_gets_the_whole_block(api, user):
    _index(user, TEA)
    body = api.post(URL, {"known_hash": "0" * 64}).json()
    assert TEA in body["block"] and body["delta"] is None and body["unchanged"] is False


def test_only_the_last_blocks_are_kept_per_person(api, user, settings):
    settings.MEMORY_KNOWN_BLOCKS = 2
    hashes = []
    for n in range(3):
        _index(user, f"- n{n}: note {n} -> n{n}.md")
        hashes.append(api.post(URL, {}).json()["hash"])
    oldest = api.post(URL, {"known_hash": hashes[0]}).json()
    assert oldest["delta"] is None and "note 2" in oldest["block"]
    newer = api.post(URL, {"known_hash": hashes[1]}).json()
    assert newer["delta"] is not None and newer["block"] == ""


@pytest.mark.parametrize(
    "known_hash", ["xyz", "a" * 63, "a" * 65, "A" * 64, "g" * 64, " " + "a" * 63, 5]
)
def test_a_bad_known_hash_is_a_422_naming_the_field(api, known_hash):
    response = api.post(URL, {"known_hash": known_hash})
    assert response.status_code == 422
    assert "known_hash" in response.content.decode()


def test_another_persons_hash_never_yields_their_block_or_a_delta(api, user, client):
    other = UserFactory()
    _index(other, "- secret: the other person's note -> secret.md")
    client.force_login(other)
    theirs = Api(client).post(URL, {}).json()
    assert "other person's note" in theirs["block"]
    client.force_login(user)
    _index(user, TEA)
    mine = api.post(URL, {"known_hash": theirs["hash"]}).json()
    assert mine["delta"] is None and mine["unchanged"] is False
    assert TEA in mine["block"] and "other person's note" not in str(mine)


def test_a_person_without_notes_can_hold_the_empty_block_too(api):
    first = api.post(URL, {"known_hash": hashlib.sha256(b"").hexdigest()}).json()
    assert first["unchanged"] is True and first["block"] == ""


def test_without_redis_the_answer_is_the_whole_block(api, user, settings):
    _index(user, TEA)
    first = api.post(URL, {}).json()
    _index(user, BIKE)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }
    response = api.post(URL, {"known_hash": first["hash"]})
    assert response.status_code == 200
    assert BIKE in response.json()["block"] and response.json()["delta"] is None
