"""Clean-up (M12): merge with the fake model, refusals, archive and restore, shorten, undo."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from django.utils import timezone

from host.errors import ChangeRefused
from learning.core import cleanup as core
from learning.models import CleanupJob
from learning.services import cleanup
from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.services.changes import FileWrite, change_set_apply, change_set_undo, file_write
from memory_addon.services.notes import note_edit, note_key
from memory_addon.services.scopes import ensure_user_scope

pytestmark = pytest.mark.django_db

MINE = "I write my own notes here.\n"
FACTS = [
    "likes green tea",
    "lives in Rome",
    "works as a nurse",
    "has two cats",
    "prefers metric units",
    "speaks German and Italian",
    "drives an old Fiat",
    "plays chess on Sundays",
    "is allergic to peanuts",
    "uses Linux at home",
]


def entry(text: str, created: date | None = None) -> str:
    return entries.render_entry(
        text,
        entry_id=entries.new_entry_id(),
        origin="assistant",
        created=created or timezone.localdate(),
        source="chat",
    )


def write_index(person, body: str) -> MemoryFile:
    """The index as the assistant left it: entries it adds later stay its own (M5)."""
    scope = ensure_user_scope(person)
    if not MemoryFile.objects.filter(scope=scope, path="index.md").exists():
        file_write(user=person, scope=scope, path="index.md", content=body, base_sha256=None)
    else:
        change_set_apply(
            user=person,
            scope=scope,
            writes=[FileWrite("index.md", body)],
            origin=ChangeSet.Origin.ASSISTANT,
            source=ChangeSet.Source.CHAT,
            machine=True,
        )
    return MemoryFile.objects.get(scope=scope, path="index.md")


def index_of(person) -> str:
    return MemoryFile.objects.get(scope=ensure_user_scope(person), path="index.md").content


def run_job(person, kind, callbacks) -> CleanupJob:
    with callbacks(execute=False) as queued:
        job = cleanup.cleanup_start(user=person, scope=ensure_user_scope(person), kind=kind)
    assert len(queued) == 1
    cleanup.cleanup_run(job_id=job.pk)
    job.refresh_from_db()
    return job


def test_merging_30_entries_with_duplicates_sends_only_them_and_keeps_my_text(
    fake_openai, person, profile, django_capture_on_commit_callbacks
):
    texts = [FACTS[n % 10] if n % 3 else FACTS[n % 10].capitalize() for n in range(30)]
    write_index(person, MINE + "\n" + "\n\n".join(entry(t) for t in texts) + "\n")
    fake_openai.chat_replies.append({"content": json.dumps({"entries": FACTS})})
    job = run_job(person, CleanupJob.Kind.MERGE, django_capture_on_commit_callbacks)
    assert job.state == "ready", job.error
    [request] = fake_openai.chat_requests
    sent = json.dumps(request)
    assert "tools" not in request and "I write my own notes" not in sent
    assert all(fact in sent for fact in FACTS)
    change_set = cleanup.cleanup_apply(user=person, job=job)
    after = index_of(person)
    assert after.startswith(MINE)
    merged = [i.text for i in entries.machine_entries(after)]
    assert sorted(merged) == sorted(FACTS)
    change_set_undo(user=person, change_set=change_set)
    assert len(entries.machine_entries(index_of(person))) == 30


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ({"entries": ["likes green tea", "lives in Paris"]}, "adds words"),
        ({"entries": ["likes green tea"]}, "drops words"),
        ({"entries": []}, "empty"),
        ("Here you go: likes green tea, lives in Rome", "not JSON"),
        ({"entries": ["likes green tea", "lives in Rome", "x", "y"]}, "more notes"),
        ({"notes": ["likes green tea"]}, "no list"),
    ],
)
def test_a_reply_that_invents_drops_or_is_unusable_changes_nothing(
    fake_openai, person, profile, django_capture_on_commit_callbacks, reply, why
):
    body = MINE + "\n" + "\n\n".join(entry(t) for t in ["likes green tea", "lives in Rome"]) + "\n"
    before = write_index(person, body)
    content = reply if isinstance(reply, str) else json.dumps(reply)
    fake_openai.chat_replies.append({"content": content})
    job = run_job(person, CleanupJob.Kind.MERGE, django_capture_on_commit_callbacks)
    assert job.state == "refused"
    assert why in job.error and "Nothing was changed" in job.error
    with pytest.raises(ChangeRefused):
        cleanup.cleanup_apply(user=person, job=job)
    assert index_of(person) == before.content


def test_archive_and_restore_round_trip_byte_for_byte_and_each_step_undoes(person):
    old_day = timezone.localdate() - timedelta(days=200)
    old = [entry("lived in Milan", old_day), entry("had a dog", old_day)]
    body = MINE + "\n" + old[0] + "\n\n" + entry("lives in Rome") + "\n\n" + old[1] + "\n"
    original = write_index(person, body).content
    scope = ensure_user_scope(person)
    picks = [i.entry_id for i in core.old_entries(original, today=timezone.localdate(), days=180)]
    assert len(picks) == 2
    archived = cleanup.archive_entries(user=person, scope=scope, ids=picks)
    archive = MemoryFile.objects.get(scope=scope, path="archive.md").content
    assert old[0] in archive and old[1] in archive
    assert "lived in Milan" not in index_of(person) and "lives in Rome" in index_of(person)
    restored = cleanup.archive_restore(user=person, scope=scope, ids=picks)
    assert all(block in index_of(person) for block in old)
    change_set_undo(user=person, change_set=restored)
    change_set_undo(user=person, change_set=archived)
    assert index_of(person).encode() == original.encode()
    assert not MemoryFile.objects.filter(scope=scope, path="archive.md").exists()


def test_only_entries_older_than_180_days_can_be_archived_and_deleting_is_a_change(person):
    body = MINE + "\n" + entry("lives in Rome") + "\n"
    fresh = entries.machine_entries(write_index(person, body).content)[0].entry_id
    scope = ensure_user_scope(person)
    with pytest.raises(ChangeRefused, match="older than 180 days"):
        cleanup.archive_entries(user=person, scope=scope, ids=[fresh])
    old_body = body + "\n" + entry("had a dog", timezone.localdate() - timedelta(days=181)) + "\n"
    content = write_index(person, old_body).content
    old_id = core.old_entries(content, today=timezone.localdate(), days=180)[0].entry_id
    cleanup.archive_entries(user=person, scope=scope, ids=[old_id])
    deleted = cleanup.archive_delete(user=person, scope=scope, ids=[old_id])
    assert "had a dog" not in MemoryFile.objects.get(scope=scope, path="archive.md").content
    change_set_undo(user=person, change_set=deleted)
    assert "had a dog" in MemoryFile.objects.get(scope=scope, path="archive.md").content


def _person_edits(person, old: str, new: str) -> None:
    """The Memory tab's edit of one note (M5: the note becomes the person's text)."""
    scope = ensure_user_scope(person)
    row = MemoryFile.objects.get(scope=scope, path="index.md")
    (item,) = [i for i in entries.parse_items(row.content) if old in i.text]
    note_edit(
        user=person,
        scope=scope,
        key=note_key(item),
        base_sha256=row.sha256,
        text=item.text.replace(old, new),
        source=ChangeSet.Source.PAGE,
    )


def test_merging_skips_an_entry_the_person_edited(
    fake_openai, person, profile, django_capture_on_commit_callbacks
):
    texts = ["likes green tea", "lives in Rome", "Likes green tea"]
    write_index(person, MINE + "\n" + "\n\n".join(entry(t) for t in texts) + "\n")
    _person_edits(person, "Rome", "Milan")
    fake_openai.chat_replies.append({"content": json.dumps({"entries": ["likes green tea"]})})
    job = run_job(person, CleanupJob.Kind.MERGE, django_capture_on_commit_callbacks)
    assert job.state == "ready", job.error
    assert "Milan" not in json.dumps(fake_openai.chat_requests)
    cleanup.cleanup_apply(user=person, job=job)
    after = index_of(person)
    assert "lives in Milan" in after
    assert [i.text for i in entries.machine_entries(after)] == ["likes green tea"]


def test_archiving_skips_an_old_entry_the_person_edited(person):
    old_day = timezone.localdate() - timedelta(days=200)
    write_index(person, MINE + "\n" + entry("had a dog", old_day) + "\n")
    (old,) = core.old_entries(index_of(person), today=timezone.localdate(), days=180)
    _person_edits(person, "dog", "cat")
    assert core.old_entries(index_of(person), today=timezone.localdate(), days=180) == []
    with pytest.raises(ChangeRefused, match="older than 180 days"):
        cleanup.archive_entries(user=person, scope=ensure_user_scope(person), ids=[old.entry_id])
    assert "had a cat" in index_of(person)


def test_shortening_my_paragraphs_is_a_separate_diff_and_undoable(
    fake_openai, person, profile, django_capture_on_commit_callbacks
):
    long = "I really, truly like to drink green tea in the morning, every single day.\n"
    write_index(person, long + "\n" + entry("lives in Rome") + "\n")
    fake_openai.chat_replies.append(
        {"content": json.dumps({"paragraphs": ["Drinks green tea daily."]})}
    )
    job = run_job(person, CleanupJob.Kind.SHORTEN, django_capture_on_commit_callbacks)
    assert job.state == "ready", job.error
    assert "lives in Rome" not in json.dumps(fake_openai.chat_requests[0])
    assert index_of(person).startswith(long)  # nothing applied without the person
    change_set = cleanup.cleanup_apply(user=person, job=job)
    assert index_of(person).startswith("Drinks green tea daily.\n")
    assert "lives in Rome" in index_of(person)
    change_set_undo(user=person, change_set=change_set)
    assert index_of(person).startswith(long)


def test_a_slow_cleanup_reply_changes_nothing(
    fake_openai, person, profile, settings, django_capture_on_commit_callbacks
):
    settings.CLEANUP_TIMEOUT_SECONDS = 1
    before = write_index(person, "\n\n".join(entry(t) for t in FACTS[:3]) + "\n")
    fake_openai.chat_replies.append({"content": json.dumps({"entries": FACTS[:3]}), "stall": 30})
    job = run_job(person, CleanupJob.Kind.MERGE, django_capture_on_commit_callbacks)
    assert job.state == "refused"
    assert index_of(person) == before.content


def test_the_cleanup_page_checks_the_owner_and_bad_input_is_a_message(client, person):
    write_index(person, MINE + "\n" + entry("lives in Rome") + "\n")
    scope = ensure_user_scope(person)
    client.force_login(person)
    page = client.get(f"/learning/cleanup/?scope={scope.pk}")
    assert page.status_code == 200 and "1 machine entry" in page.text
    response = client.post(f"/learning/cleanup/{scope.pk}/archive/", {"entry": "nope"}, follow=True)
    assert response.status_code == 200 and "older than 180 days" in response.text
    assert client.post(f"/learning/cleanup/{scope.pk}/explode/").status_code == 404
    assert client.get("/learning/cleanup/?scope=abc").status_code == 404
    from tests.factories import UserFactory

    client.force_login(UserFactory())
    assert client.get(f"/learning/cleanup/?scope={scope.pk}").status_code == 404
    assert client.post(f"/learning/cleanup/{scope.pk}/merge/").status_code == 404
