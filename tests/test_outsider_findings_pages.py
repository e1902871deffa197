"""Holes an outside tester found in the collection and project-bank pages."""

from __future__ import annotations

import json
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from host.errors import ChangeRefused, LimitExceeded
from knowledge import services as knowledge
from knowledge.errors import KnowledgeRefusal
from knowledge.models import Job, Source
from knowledge.services import sources as knowledge_sources
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
@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "9" * 40, "-1"])
def test_a_source_filter_that_is_not_a_plain_id_is_a_404(client, user, value):
    store = knowledge.store_create(owner=user, name="Notes", provider="none")
    client.force_login(user)
    assert client.get(f"/knowledge/{store.pk}/files/", {"source": value}).status_code == 404


@pytest.mark.django_db
def test_chat_ids_in_superscript_digits_are_ignored_not_a_500(client, user):
    client.force_login(user)
    answer = client.post("/chat/new/", {"stores": ["\u00b2", "9" * 40], "profile": "\u00b2"})
    assert answer.status_code == 302


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


@pytest.mark.django_db
def test_an_upload_that_passed_its_check_before_a_parallel_one_was_scanned_is_skipped(
    user, monkeypatch
):
    store = knowledge.store_create(owner=user, name="Notes", provider="none")
    _first, first_scan = knowledge.source_add_upload(
        store=store, files=[SimpleUploadedFile("par.md", b"parallel identical content")]
    )
    knowledge.scan_run(first_scan.pk)
    assert Job.objects.get(pk=first_scan.pk).state == Job.State.REVIEW
    # The second request checked before the first scan had run: its check saw nothing.
    monkeypatch.setattr(knowledge_sources, "_check_uploads", lambda *args: None)
    _second, second_scan = knowledge.source_add_upload(
        store=store, files=[SimpleUploadedFile("par.md", b"parallel identical content")]
    )
    knowledge.scan_run(second_scan.pk)
    row = Job.objects.get(pk=second_scan.pk).review[0]
    assert row["status"] == "skipped"
    assert row["reason"] == "already in this collection as par.md"
    assert Source.objects.filter(store=store).count() == 2


@pytest.mark.django_db
def test_a_long_upload_name_keeps_its_suffix():
    name = knowledge.upload_safe_name("A" * 400 + ".md")
    assert name.endswith(".md") and len(name) == 120


@pytest.mark.django_db
def test_a_home_folder_path_is_not_expanded(client, user, settings, tmp_path):
    store = knowledge.store_create(owner=user, name="Notes", provider="none")
    with pytest.raises(KnowledgeRefusal) as refusal:
        knowledge.source_add_folder(store=store, path="~/x")
    assert "starting with /" in str(refusal.value)
    assert "/root" not in str(refusal.value)


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["\u202egnp.md", "two\nlines", "   "])
def test_a_collection_name_is_one_plain_line(user, name):
    with pytest.raises(KnowledgeRefusal, match="one plain line"):
        knowledge.store_create(owner=user, name=name, provider="none")


@pytest.mark.django_db
def test_more_files_than_django_reads_get_a_page_that_says_why(client, user, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    store = knowledge.store_create(owner=user, name="Notes", provider="none")
    client.force_login(user)
    files = [SimpleUploadedFile(f"f{n}.md", b"x") for n in range(4)]
    answer = client.post(f"/knowledge/{store.pk}/uploads/", {"documents": files})
    assert answer.status_code == 400
    assert "more than 3 files at once" in answer.content.decode()
