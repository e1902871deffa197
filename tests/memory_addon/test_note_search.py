"""Semantic + keyword list_memory (M4, B3): notes are embedded by a Celery job after each change."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from host.core.fulltext import or_query
from memory_addon.models import MemoryFile, NoteEmbedding
from memory_addon.services.changes import file_write
from memory_addon.services.note_search import (
    KEYWORD_SQL,
    _keyword,
    note_embeddings_refresh,
    note_search,
)
from memory_addon.services.tools import tool_call_execute

NOTES = {
    "health.md": "I am allergic to peanuts and shellfish.\n",
    "work.md": "Quarterly budget review with Anna on Tuesday.\n",
    "garden.md": "Planted tomatoes and basil along the south fence.\n",
}
PARAPHRASE = "what foods are dangerous for me"


def _write_notes(user, scope):
    for path, content in NOTES.items():
        file_write(user=user, scope=scope, path=path, content=content, base_sha256="")


def _wait_for_embeddings(count: int, deadline_s: float = 120) -> None:
    deadline = time.monotonic() + deadline_s
    while NoteEmbedding.objects.count() < count:
        assert time.monotonic() < deadline, "the Celery job did not embed the notes in time"
        time.sleep(0.1)


@pytest.mark.django_db(transaction=True)
def test_list_memory_finds_a_paraphrase_after_the_celery_job_embeds_the_notes(
    celery_worker, user, scope, turn, settings
):
    settings.MEMORY_NOTE_EMBEDDINGS_ON_WRITE = True
    _write_notes(user, scope)
    # No word of the question is in the note: keyword search alone finds nothing.
    assert _keyword([scope.pk], PARAPHRASE, 10) == []
    _wait_for_embeddings(len(NOTES))
    ok, output = tool_call_execute(turn=turn, name="list_memory", arguments={"query": PARAPHRASE})
    assert ok and "health.md" in output
    assert output.index("health.md") < min(
        (output.index(p) for p in ("work.md", "garden.md") if p in output), default=len(output)
    )


@pytest.mark.django_db
def test_only_changed_notes_are_embedded_again(
    user, scope, django_capture_on_commit_callbacks, settings
):
    settings.MEMORY_NOTE_EMBEDDINGS_ON_WRITE = True
    with django_capture_on_commit_callbacks() as callbacks:
        _write_notes(user, scope)
    assert len(callbacks) >= len(NOTES)  # each change set schedules a refresh after commit
    assert note_embeddings_refresh(scope_id=scope.pk) == len(NOTES)
    assert note_embeddings_refresh(scope_id=scope.pk) == 0
    garden = MemoryFile.objects.get(scope=scope, path="garden.md")
    file_write(
        user=user,
        scope=scope,
        path="garden.md",
        content="Sold the lawnmower.\n",
        base_sha256=garden.sha256,
    )
    assert note_embeddings_refresh(scope_id=scope.pk) == 1
    assert (
        NoteEmbedding.objects.get(file__path="garden.md").sha256
        == MemoryFile.objects.get(scope=scope, path="garden.md").sha256
    )


@pytest.mark.django_db
def test_keyword_and_meaning_are_fused(user, scope, settings):
    _write_notes(user, scope)
    note_embeddings_refresh(scope_id=scope.pk)
    hits = note_search(user=user, scopes=[scope], query="peanuts " + PARAPHRASE)
    assert hits[0].path == "health.md"
    settings.KNOWLEDGE_FUSION_VECTOR_WEIGHT = 0.0  # meaning silenced: only the keyword hit ranks
    hits = note_search(user=user, scopes=[scope], query="tomatoes " + PARAPHRASE)
    assert hits[0].path == "garden.md"


@pytest.mark.django_db
def test_a_stale_vector_is_not_used_until_the_note_is_embedded_again(user, scope):
    _write_notes(user, scope)
    note_embeddings_refresh(scope_id=scope.pk)
    health = MemoryFile.objects.get(scope=scope, path="health.md")
    file_write(
        user=user,
        scope=scope,
        path="health.md",
        content="Runs every morning.\n",
        base_sha256=health.sha256,
    )
    paths = [hit.path for hit in note_search(user=user, scopes=[scope], query=PARAPHRASE)]
    assert "health.md" not in paths  # the old vector described text that is gone


@pytest.mark.django_db
def test_the_keyword_search_reads_the_stored_text_index_not_every_file(user, scope):
    # A person with 4,500 notes in 90 files: the planner must match words in the index, not parse
    # every file of the scope again for each query (linear in the notes).
    MemoryFile.objects.bulk_create(
        MemoryFile(
            scope=scope,
            path=f"topic-{i}.md",
            content="".join(f"- Ordinary note {i}.{n} about the week.\n" for n in range(50)),
        )
        for i in range(90)
    )
    _write_notes(user, scope)
    ts_query = or_query("peanuts budget")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_addon_memoryfile")
        cursor.execute("EXPLAIN " + KEYWORD_SQL, [ts_query, [scope.pk], ts_query, 10])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "to_tsvector" not in plan, plan  # nothing parsed at query time
    assert "search_vector" in plan, plan
    found = {file_id for file_id, _ in _keyword([scope.pk], "peanuts budget", 10)}
    assert set(MemoryFile.objects.filter(pk__in=found).values_list("path", flat=True)) == {
        "health.md",
        "work.md",
    }
