"""Indexing without overhead: the graph is built once after a bulk load, progress reports
are throttled, a PDF is extracted once, and creating a collection loads no model."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from host import embeddings
from host.local_model import E5_MODEL, PACKAGED_MODEL
from knowledge import services
from knowledge.core import scanning
from knowledge.errors import KnowledgeRefusal
from knowledge.models import Chunk, Job, Source, Store
from knowledge.retrieval import vector_ranking
from tests.knowledge.pdfs import text_pdf

pytestmark = pytest.mark.django_db(transaction=True)


def _index(store: Store, folder: Path) -> tuple[Source, Job, list[str]]:
    """Scan and index the folder in this process, as the worker does; the index run's SQL."""
    source = Source.objects.filter(store=store, path=str(folder)).first()
    if source is None:
        source = Source.objects.create(store=store, kind=Source.Kind.FOLDER, path=str(folder))
    scan = Job.objects.create(store=store, source=source, kind=Job.Kind.SCAN)
    services.scan_run(scan.pk)
    Job.objects.filter(pk=scan.pk).update(state=Job.State.SUCCEEDED)
    job = Job.objects.create(store=store, source=source, kind=Job.Kind.INDEX, scan_job=scan)
    with CaptureQueriesContext(connection) as queries:
        services.index_run(job.pk)
    job.refresh_from_db()
    assert job.state == Job.State.SUCCEEDED, job.error
    return source, job, [query["sql"] for query in queries]


def _index_exists(store: Store) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [store.index_name])
        row = cursor.fetchone()
    return bool(row and "hnsw" in row[0])


def _folder(root: Path, files: int) -> Path:
    folder = root / "docs"
    folder.mkdir()
    for i in range(files):
        (folder / f"note{i}.txt").write_text(f"Alpacas of herd {i} graze in valley {i}.\n")
    return folder


def test_a_bulk_index_builds_its_graph_once_after_loading(store, allowed_root, fake_openai):
    folder = _folder(allowed_root, 12)
    assert not _index_exists(store)  # a new collection has no graph to update row by row
    source, _, sql = _index(store, folder)
    creates = [i for i, text in enumerate(sql) if text.startswith("CREATE INDEX")]
    inserts = [
        i for i, text in enumerate(sql) if text.lstrip().startswith("INSERT INTO knowledge_chunk")
    ]
    assert len(creates) == 1 and len(inserts) == 1
    assert creates[0] > inserts[0]  # built from all the rows, in the same commit
    assert _index_exists(store)
    assert Chunk.objects.filter(source=source).count() == 12

    # A later job adds its rows to the existing graph: no second build.
    (folder / "late.txt").write_text("A late alpaca arrives.\n")
    _, _, sql = _index(store, folder)
    assert not [text for text in sql if text.startswith("CREATE INDEX")]
    late = Chunk.objects.get(document__path="late.txt")
    with connection.cursor() as cursor:
        cursor.execute("SELECT embedding::text FROM knowledge_chunk WHERE id = %s", [late.pk])
        vector = [float(x) for x in cursor.fetchone()[0].strip("[]").split(",")]
    store.refresh_from_db()
    found = vector_ranking(store, vector, [source.pk], limit=3)
    assert found[0] == late.pk


def _beats(sql: list[str]) -> list[str]:
    """Progress reports: job updates of the heartbeat that do not change the state."""
    return [
        text
        for text in sql
        if text.startswith('UPDATE "knowledge_job"')
        and "heartbeat_at" in text
        and '"state" =' not in text.split("WHERE")[0]
    ]


def test_progress_is_reported_at_most_every_interval_not_per_file(
    store, allowed_root, fake_openai, settings
):
    folder = _folder(allowed_root, 30)
    settings.KNOWLEDGE_PROGRESS_INTERVAL_SECONDS = 3600
    _, job, sql = _index(store, folder)
    beats = _beats(sql)
    assert len(beats) == 1  # the first file only; the finish reports the rest
    assert job.progress == 100 and job.counts["new"] == 30

    settings.KNOWLEDGE_PROGRESS_INTERVAL_SECONDS = 0  # what every file used to cost
    for i in range(30):
        (folder / f"note{i}.txt").write_text(f"Llamas of herd {i} rest.\n")
    _, _, sql = _index(store, folder)
    assert len(_beats(sql)) == 31  # each file, and the one batch their 30 chunks make


def test_a_pdf_is_extracted_once_for_scan_and_index(
    store, allowed_root, fake_openai, monkeypatch, settings, tmp_path
):
    settings.DATA_DIR = tmp_path / "data"
    calls = []
    real = scanning.pdf_pages
    monkeypatch.setattr(
        scanning, "pdf_pages", lambda data, **kw: calls.append(1) or real(data, **kw)
    )
    folder = allowed_root / "docs"
    folder.mkdir()
    (folder / "manual.pdf").write_bytes(text_pdf(["Guanaco care.", "Shearing in spring."]))
    source, _, _ = _index(store, folder)
    assert len(calls) == 1
    pages = sorted(Chunk.objects.filter(source=source).values_list("page", "text"))
    assert [page for page, _ in pages] == [1, 2] and "Guanaco care." in pages[0][1]
    assert not list((tmp_path / "data" / "extracted").iterdir())  # taken, not left behind


@pytest.mark.parametrize("model", [PACKAGED_MODEL, E5_MODEL])
def test_creating_a_local_model_collection_does_not_load_the_model(user, monkeypatch, model):
    monkeypatch.setattr(embeddings, "_models", {})
    monkeypatch.setattr(embeddings, "_failures", {})
    monkeypatch.setattr(embeddings, "_e5_model", None)
    try:
        store = services.store_create(
            owner=user, name="Local", provider="fastembed", model_name=model
        )
    except KnowledgeRefusal as refusal:  # the packaged model is not installed here
        pytest.skip(str(refusal))
    assert (store.model_name, store.dimension) == (model, 384)
    # Name and dimension came from the folder's config (MiniLM) or the package (e5).
    assert embeddings._models == {} and embeddings._e5_model is None
    assert services.semantic_status(model) == ""
    assert embeddings._models == {} and embeddings._e5_model is None


def _staging_inserts(sql: list[str]) -> int:
    return sum(1 for text in sql if text.startswith('INSERT INTO "knowledge_stagedchunk"'))


def test_keyword_only_chunks_are_staged_in_large_batches_model_chunks_per_model_batch(
    store, user, allowed_root, fake_openai
):
    folder = _folder(allowed_root, 70)
    keyword_only = services.store_create(owner=user, name="Keywords", provider="none")
    source, _, sql = _index(keyword_only, folder)
    assert Chunk.objects.filter(source=source).count() == 70
    assert _staging_inserts(sql) == 1  # one round trip, not one per 32 chunks

    source, _, sql = _index(store, folder)  # the model embeds 32 at a time, staged as it goes
    assert Chunk.objects.filter(source=source).count() == 70
    assert _staging_inserts(sql) == 3
