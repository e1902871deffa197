"""Ingest against its raw pieces, measured in the same run (issue 13).

1. Keyword-only indexing of two real corpora (the LoCoMo sessions as text files, and
   Django's own `django/db` source files from the virtualenv) through the product's
   scan and index jobs, against the raw floor: the same files read, cut by the
   product's chunker and written with one COPY into a bare table with the chunk
   table's columns (its generated search columns too, no index, no trigger, no
   foreign key), in one transaction.
2. A model-backed index job (the local fastembed model) against the raw model time:
   fastembed alone embedding the same chunk texts with the same batch size and threads.
3. A 100-page PDF with text on every page, indexed by a model-backed collection, against
   the raw model time for its chunks; the text extraction is timed on its own.
4. Worker memory: a real Celery worker (prefork, one child, the product's settings) runs a
   model-backed index job; the child's RSS is sampled during the job and read again after
   the job, when a child above WORKER_MAX_MEMORY_MB has been replaced.

Product and raw runs alternate and each figure is the median of REPEATS runs, so a
burst of load on the shared machine hits both sides alike.

Run: `python -m benchmarks.ingest_bench` (writes the `ingest` section of
docs/benchmarks.md); `make bench` runs it too.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # standalone: the same embedded database as `make bench`
    from benchmarks.standalone import setup_django

    setup_django("bench")

import statistics
import subprocess
import textwrap

import django as django_package
import psutil
from django.conf import settings
from django.db import connection, transaction
from django.test import override_settings

from accounts.models import User
from benchmarks.knowledge_bench import _locomo, _turns
from host import embeddings
from host.embeddings import BATCH_SIZE, FastembedEmbedder, windows
from knowledge import services
from knowledge.core import scanning
from knowledge.core.chunking import chunk_pages
from knowledge.core.extract import Page
from knowledge.core.formats import PDF
from knowledge.models import Chunk, Document, Job, Source

ROOT = Path(__file__).resolve().parent.parent
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
FLOOR_TABLE = "bench_ingest_floor"
MODEL_FILES = 60  # LoCoMo sessions for the model-backed job (the model is the slow part)
PDF_PAGES = 100
WORKER_DEADLINE_SECONDS = 600


def median(values: list[float]) -> float:
    return float(statistics.median(values))


# --- Corpora ---------------------------------------------------------------------


def locomo_folder(base: Path, limit: int | None = None) -> Path:
    """The LoCoMo dialogues as text files, one per session (as knowledge_bench writes them)."""
    folder = base / ("locomo" if limit is None else f"locomo-{limit}")
    folder.mkdir(parents=True)
    written = 0
    for number, conversation in enumerate(_locomo()):
        sessions: dict[int, list[str]] = {}
        for _, text, session in _turns(conversation):
            sessions.setdefault(session, []).append(text)
        for session, lines in sessions.items():
            if limit is not None and written >= limit:
                return folder
            (folder / f"conversation{number}-session{session}.txt").write_text("\n".join(lines))
            written += 1
    return folder


def django_folder(base: Path) -> Path:
    """Django's own database layer source (`django/db`, Python files) from the virtualenv."""
    origin = Path(django_package.__file__).resolve().parent / "db"
    folder = base / "django-db"
    for path in sorted(origin.rglob("*.py")):
        target = folder / path.relative_to(origin)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    return folder


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def hundred_page_pdf(pages: int = PDF_PAGES) -> tuple[bytes, int]:
    """A PDF of `pages` pages, each with 46 lines of LoCoMo dialogue set in Helvetica.

    Written by hand (no layout library is installed): one content stream per page,
    one text object whose lines are moved down by the text leading (T*).
    """
    lines: list[str] = []
    for conversation in _locomo():
        for _, text, _ in _turns(conversation):
            lines += textwrap.wrap(text.encode("latin-1", "replace").decode("latin-1"), 95)
    per_page = 46
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    page_ids = [3 + 2 * i for i in range(pages)]
    font_id = 3 + 2 * pages
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode())
    words = 0
    for index in range(pages):
        page_lines = lines[index * per_page : (index + 1) * per_page]
        words += sum(len(line.split()) for line in page_lines)
        body = " T* ".join(f"({_pdf_escape(line)}) Tj" for line in page_lines)
        stream = f"BT /F1 9 Tf 11 TL 40 760 Td {body} ET".encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {page_ids[index] + 1}"
            f" 0 R /Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body_bytes in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body_bytes + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out), words


def pdf_folder(base: Path) -> tuple[Path, int]:
    folder = base / "pdf"
    folder.mkdir(parents=True)
    data, words = hundred_page_pdf()
    (folder / "dialogues.pdf").write_bytes(data)
    return folder, words


# --- The product: scan and index jobs --------------------------------------------


def _user() -> User:
    """A superuser: folder sources need a grant or a superuser (K2)."""
    return User.objects.create_user(f"bench-i-{uuid.uuid4().hex[:8]}", is_superuser=True)


def product_index(user: User, folder: Path, provider: str) -> dict[str, float]:
    """A new collection, its folder scanned and indexed by the product's job bodies.

    The jobs run in this process, as a worker runs them (the queued task messages are
    purged before the worker test starts).
    """
    store = services.store_create(
        owner=user, name=f"ingest-{uuid.uuid4().hex[:6]}", provider=provider
    )
    with override_settings(KNOWLEDGE_ALLOWED_ROOTS=[str(folder.parent)]):
        source, scan_job = services.source_add_folder(store=store, path=str(folder))
    start = time.perf_counter()
    services.scan_run(scan_job.pk)
    scanned = time.perf_counter()
    scan_job.refresh_from_db()
    index_job = services.scan_confirm(scan_job=scan_job)
    confirmed = time.perf_counter()
    services.index_run(index_job.pk)
    done = time.perf_counter()
    index_job.refresh_from_db()
    if index_job.state != Job.State.SUCCEEDED:
        raise RuntimeError(f"index job {index_job.pk}: {index_job.state} {index_job.error}")
    chunks = Chunk.objects.filter(source=source).count()
    services.store_delete(store=store)
    return {
        "scan_s": scanned - start,
        "index_s": done - confirmed,
        "total_s": done - start,
        "chunks": float(chunks),
    }


# --- The raw floor: read, chunk, one COPY ------------------------------------------


def _floor_table_reset() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {FLOOR_TABLE}")
        # The chunk table's columns with the one text-search vector keyword search needs
        # (a generated column: computed once per row); no index, no trigger, no foreign key.
        cursor.execute(f"CREATE TABLE {FLOOR_TABLE} (LIKE knowledge_chunk INCLUDING DEFAULTS)")
        cursor.execute(
            f"ALTER TABLE {FLOOR_TABLE} DROP COLUMN search, DROP COLUMN search_length,"
            " ADD COLUMN search tsvector"
            " GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED"
        )


def read_and_chunk(folder: Path) -> list[tuple[str, int, int | None, str, int]]:
    """(path, ordinal, page, text, tokens) of every chunk, as plain reads and the chunker."""
    rows = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8")
        for chunk in chunk_pages(
            [Page(None, text)],
            chunk_tokens=settings.KNOWLEDGE_CHUNK_TOKENS,
            overlap_tokens=settings.KNOWLEDGE_CHUNK_OVERLAP_TOKENS,
        ):
            rows.append((str(path), chunk.ordinal, chunk.page, chunk.text, chunk.tokens))
    return rows


def floor_index(folder: Path) -> dict[str, float]:
    _floor_table_reset()
    start = time.perf_counter()
    rows = read_and_chunk(folder)
    documents: dict[str, int] = {}
    with (
        transaction.atomic(),
        connection.cursor() as cursor,
        cursor.cursor.copy(
            f"COPY {FLOOR_TABLE} (id, document_id, store_id, source_id, ordinal, page, text, "
            "token_count) FROM STDIN"
        ) as copy,
    ):
        for number, (path, ordinal, page, text, tokens) in enumerate(rows, start=1):
            document = documents.setdefault(path, len(documents) + 1)
            copy.write_row((number, document, 1, 1, ordinal, page, text, tokens))
    elapsed = time.perf_counter() - start
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {FLOOR_TABLE}")
    return {"total_s": elapsed, "chunks": float(len(rows))}


def floor_into_chunk_table(user: User, folder: Path) -> dict[str, float]:
    """The same floor, written into the product's own chunk table (its indexes, its
    language and keyword-statistics triggers, its foreign keys) for a throwaway store."""
    store = services.store_create(owner=user, name=f"floor-{uuid.uuid4().hex[:6]}", provider="none")
    source = Source.objects.create(store=store, kind=Source.Kind.FOLDER, path=f"/bench/{store.pk}")
    start = time.perf_counter()
    rows = read_and_chunk(folder)
    paths = sorted({row[0] for row in rows})
    with transaction.atomic():
        documents = Document.objects.bulk_create(
            Document(source=source, path=path, sha256="-", format="text", size=0) for path in paths
        )
        ids = {document.path: document.pk for document in documents}
        with (
            connection.cursor() as cursor,
            cursor.cursor.copy(
                "COPY knowledge_chunk (document_id, store_id, source_id, ordinal, page, text, "
                "token_count) FROM STDIN"
            ) as copy,
        ):
            for path, ordinal, page, text, tokens in rows:
                copy.write_row((ids[path], store.pk, source.pk, ordinal, page, text, tokens))
    elapsed = time.perf_counter() - start
    services.store_delete(store=store)
    return {"total_s": elapsed, "chunks": float(len(rows))}


def bench_keyword(user: User, folders: dict[str, Path]) -> dict[str, dict[str, float]]:
    result = {}
    for name, folder in folders.items():
        product_index(user, folder, "none")  # warm-up: caches, first-use imports
        floor_index(folder)
        product: list[dict[str, float]] = []
        floor: list[dict[str, float]] = []
        own_table: list[dict[str, float]] = []
        for _ in range(REPEATS):
            product.append(product_index(user, folder, "none"))
            floor.append(floor_index(folder))
            own_table.append(floor_into_chunk_table(user, folder))
        chunks = product[0]["chunks"]
        if floor[0]["chunks"] != chunks:
            raise RuntimeError(f"{name}: product {chunks} chunks, floor {floor[0]['chunks']}")
        files = sum(1 for p in folder.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        product_s = median([r["total_s"] for r in product])
        floor_s = median([r["total_s"] for r in floor])
        own_s = median([r["total_s"] for r in own_table])
        result[name] = {
            "files": float(files),
            "mib": size / 2**20,
            "chunks": chunks,
            "scan_s": median([r["scan_s"] for r in product]),
            "index_s": median([r["index_s"] for r in product]),
            "product_s": product_s,
            "floor_s": floor_s,
            "product_per_s": chunks / product_s,
            "floor_per_s": chunks / floor_s,
            "share": floor_s / product_s,
            "own_s": own_s,
            "own_share": own_s / product_s,
        }
    return result


# --- The raw model ----------------------------------------------------------------


def raw_model() -> Any:
    """fastembed's TextEmbedding from the same folder with the same threads, no product code."""
    from fastembed import TextEmbedding

    return TextEmbedding(
        settings.EMBEDDING_MODEL,
        threads=settings.EMBEDDING_THREADS,
        cache_dir=str(Path(settings.DATA_DIR) / "models"),
        specific_model_path=settings.EMBEDDING_MODEL_PATH,
        local_files_only=True,
    )


def raw_embed(model: Any, texts: list[str]) -> float:
    start = time.perf_counter()
    vectors = list(model.embed(texts, batch_size=BATCH_SIZE))
    elapsed = time.perf_counter() - start
    assert len(vectors) == len(texts)  # noqa: S101
    return elapsed


def model_tokens(model: Any, texts: list[str]) -> int:
    """Word pieces the model reads (after its truncation)."""
    tokenizer = model.model.tokenizer
    return sum(len(encoding.ids) for encoding in tokenizer.encode_batch(texts))


def bench_model(
    user: User, folder: Path, model: Any, chunk_texts: list[str] | None = None
) -> dict[str, float]:
    """The product's index job against fastembed on the same chunk texts and on its windows."""
    texts = chunk_texts if chunk_texts is not None else [row[3] for row in read_and_chunk(folder)]
    flat = [window for text in texts for window in windows(text)]
    product: list[dict[str, float]] = []
    raw_chunks: list[float] = []
    raw_windows: list[float] = []
    for _ in range(REPEATS):
        product.append(product_index(user, folder, "fastembed"))
        raw_chunks.append(raw_embed(model, texts))
        raw_windows.append(raw_embed(model, flat))
    if product[0]["chunks"] != len(texts):
        raise RuntimeError(f"product {product[0]['chunks']} chunks, raw {len(texts)}")
    index_s = median([r["index_s"] for r in product])
    raw_s = median(raw_chunks)
    return {
        "chunks": float(len(texts)),
        "windows": float(len(flat)),
        "tokens_chunks": float(model_tokens(model, texts)),
        "tokens_windows": float(model_tokens(model, flat)),
        "scan_s": median([r["scan_s"] for r in product]),
        "index_s": index_s,
        "raw_chunks_s": raw_s,
        "raw_windows_s": median(raw_windows),
        "ratio": index_s / raw_s,
        "ratio_windows": index_s / median(raw_windows),
    }


def bench_pdf(user: User, folder: Path, model: Any) -> dict[str, float]:
    data = next(folder.iterdir()).read_bytes()
    extraction = []
    pages: list[Page] = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        pages = scanning.document_pages(data, PDF, max_chars=scanning.MAX_EXTRACTED_CHARS)
        extraction.append(time.perf_counter() - start)
    texts = [
        chunk.text
        for chunk in chunk_pages(
            pages,
            chunk_tokens=settings.KNOWLEDGE_CHUNK_TOKENS,
            overlap_tokens=settings.KNOWLEDGE_CHUNK_OVERLAP_TOKENS,
        )
    ]
    result = bench_model(user, folder, model, texts)
    result["pages"] = float(len(pages))
    result["extract_s"] = median(extraction)
    result["mib"] = len(data) / 2**20
    return result


# --- Worker memory ---------------------------------------------------------------


def _rss_mb(process: psutil.Process) -> float:
    try:
        return float(process.memory_info().rss) / 2**20
    except psutil.Error:
        return 0.0


@contextmanager
def celery_worker() -> Iterator[subprocess.Popen[bytes]]:
    """A prefork worker with one child on the default queue, as compose's index worker runs."""
    from config.celery import app
    from host.tasks import ping

    app.control.purge()  # the in-process runs above queued their jobs' messages too
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    worker = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "1",
            "-Q",
            "celery",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--hostname",
            f"bench-ingest-{os.getpid()}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,  # its banner; warnings and errors still reach stderr
    )
    try:
        # The first ping waits in the queue until the worker is up: the readiness signal.
        if ping.delay().get(timeout=120) != "pong":
            raise RuntimeError("the worker did not answer its ping")
        yield worker
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=30)


def _children(worker: subprocess.Popen[bytes]) -> list[psutil.Process]:
    try:
        children: list[psutil.Process] = psutil.Process(worker.pid).children(recursive=False)
    except psutil.Error:
        return []
    return children


def bench_worker_memory(user: User, folder: Path) -> dict[str, Any]:
    from host.tasks import ping

    with celery_worker() as worker:
        parent = psutil.Process(worker.pid)
        children = _children(worker)
        before_child = max((_rss_mb(child) for child in children), default=0.0)
        store = services.store_create(owner=user, name="worker-memory", provider="fastembed")
        with override_settings(KNOWLEDGE_ALLOWED_ROOTS=[str(folder.parent)]):
            source, scan_job = services.source_add_folder(store=store, path=str(folder))
        peak = 0.0
        job_pids = {child.pid for child in children}
        deadline = time.monotonic() + WORKER_DEADLINE_SECONDS
        index_job: Job | None = None
        start = time.perf_counter()
        while True:
            if time.monotonic() > deadline:
                raise RuntimeError("the worker did not finish the index job in time")
            for child in _children(worker):
                job_pids.add(child.pid)
                peak = max(peak, _rss_mb(child))
            if index_job is None:
                scan_job.refresh_from_db()
                if scan_job.state == Job.State.REVIEW:
                    index_job = services.scan_confirm(scan_job=scan_job)
                elif scan_job.state not in Job.ACTIVE_STATES:
                    raise RuntimeError(f"scan job ended {scan_job.state}: {scan_job.error}")
            else:
                index_job.refresh_from_db()
                if index_job.state not in Job.ACTIVE_STATES:
                    break
            time.sleep(0.1)  # the sampling interval, not a wait for the result
        job_s = time.perf_counter() - start
        if index_job.state != Job.State.SUCCEEDED:
            raise RuntimeError(f"index job ended {index_job.state}: {index_job.error}")
        # The child that ran the job exits after it when it is above the limit, and the
        # pool forks a fresh one: wait (bounded) for a child that did not run the job.
        replaced = False
        replace_deadline = time.monotonic() + 60
        while time.monotonic() < replace_deadline:
            current = _children(worker)
            for child in current:
                if child.pid in job_pids:
                    peak = max(peak, _rss_mb(child))
            if current and not {child.pid for child in current} & job_pids:
                replaced = True
                break
            time.sleep(0.1)
        # The next task runs in whatever child the pool has now: once it answers, read it.
        if ping.delay().get(timeout=120) != "pong":
            raise RuntimeError("the worker did not answer after the job")
        after_child = max((_rss_mb(child) for child in _children(worker)), default=0.0)
        chunks = Chunk.objects.filter(source=source).count()
        services.store_delete(store=store)
        return {
            "before_child_mb": before_child,
            "peak_child_mb": peak,
            "after_child_mb": after_child,
            "parent_mb": _rss_mb(parent),
            "replaced": replaced,
            "job_s": job_s,
            "chunks": float(chunks),
            "limit_mb": float(settings.WORKER_MAX_MEMORY_MB),
        }


# --- Report ----------------------------------------------------------------------


def _goal(met: bool) -> str:
    return "**met**" if met else "**not met**"


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    load_start = os.getloadavg()
    base = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    user = _user()
    corpora = {
        "LoCoMo sessions": locomo_folder(base),
        "Django `django/db` source": django_folder(base),
    }
    keyword = bench_keyword(user, corpora)
    model: Any = None
    model_error = ""
    try:
        FastembedEmbedder(settings.EMBEDDING_MODEL).embed(["warm up"])  # the product's model
        model = raw_model()
        raw_embed(model, ["warm up"])
    except Exception as error:  # no local model: the keyword figures still stand
        model_error = f"{type(error).__name__}: {error}"
    model_job = pdf = memory = None
    pdf_words = 0
    if model is not None:
        model_job = bench_model(user, locomo_folder(base, MODEL_FILES), model)
        folder, pdf_words = pdf_folder(base)
        pdf = bench_pdf(user, folder, model)
        del model
        embeddings._models.clear()  # this process's copy is not what is measured below
        memory = bench_worker_memory(user, folder)
    load_end = os.getloadavg()
    lines = [
        "## Ingest: indexing against its raw pieces, and worker memory",
        "",
        "Command: `python -m benchmarks.ingest_bench` (also part of `make bench`). "
        f"Machine: {machine}, shared with other work: load average {load_start[0]:.1f} at the "
        f"start and {load_end[0]:.1f} at the end (1-minute). Measured {time.strftime('%Y-%m-%d')}. "
        f"Each figure is the median of {REPEATS} runs; product and raw runs alternate.",
        "",
        "**Keyword-only indexing against the raw floor.** *Product*: a new keyword-only "
        "collection, its folder scanned and indexed by the scan and index job bodies "
        "(`scan_run`, `scan_confirm`, `index_run`: read and hash, extract, review rows, "
        "read and hash again, chunk, stage, one commit with the search columns, the "
        "source's counts and the event). *Floor*: the same files read and cut by the "
        "product's chunker, then one `COPY` into a bare table with the chunk table's "
        "columns (generated full-text columns included; no index, trigger or foreign key), "
        "in one transaction. *Floor, chunk table*: the same floor written into the product's "
        "own chunk table for a throwaway collection (its full-text index and other indexes, "
        "its language and BM25-statistics triggers, foreign keys): what the table itself costs.",
        "",
        "| corpus | files | MiB | chunks | product scan + index | floor | floor, chunk table "
        "| product chunks/s | floor chunks/s | product ÷ floor throughput (goal ≥ 80%) "
        "| product ÷ floor, chunk table |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in keyword.items():
        lines.append(
            f"| {name} | {row['files']:.0f} | {row['mib']:.1f} | {row['chunks']:.0f} "
            f"| {row['scan_s']:.2f} + {row['index_s']:.2f} s | {row['floor_s']:.2f} s "
            f"| {row['own_s']:.2f} s | {row['product_per_s']:.0f} | {row['floor_per_s']:.0f} "
            f"| {100 * row['share']:.0f}% | {100 * row['own_share']:.0f}% |"
        )
    if model_job is None or pdf is None or memory is None:
        lines += [
            "",
            f"Model-backed rows skipped: the local model is not available ({model_error}).",
        ]
    else:
        lines += [
            "",
            f"**Model-backed jobs against the raw model time.** Local model {settings.EMBEDDING_MODEL} "
            f"via fastembed, {settings.EMBEDDING_THREADS} threads, batches of {BATCH_SIZE}. "
            "*Raw, chunk texts*: fastembed's `TextEmbedding.embed` alone on the job's chunk "
            "texts (the model truncates each at its 512 word pieces). *Raw, windows*: the same "
            f"on the windows the product embeds ({embeddings.WINDOW_WORDS} words each, averaged "
            "per chunk), the same word pieces the job's model reads. The job time is the index "
            "job alone; its scan is listed apart.",
            "",
            "| job | chunks | windows | word pieces read (chunks / windows) | scan | index job "
            "| raw, chunk texts | raw, windows | job ÷ raw chunk texts (goal ≤ 1.1) "
            "| job ÷ raw windows |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for label, row in (
            (f"{MODEL_FILES} LoCoMo sessions", model_job),
            (f"{pdf['pages']:.0f}-page PDF ({pdf_words:,} words, {pdf['mib']:.1f} MiB)", pdf),
        ):
            lines.append(
                f"| {label} | {row['chunks']:.0f} | {row['windows']:.0f} "
                f"| {row['tokens_chunks']:,.0f} / {row['tokens_windows']:,.0f} "
                f"| {row['scan_s']:.2f} s | {row['index_s']:.2f} s | {row['raw_chunks_s']:.2f} s "
                f"| {row['raw_windows_s']:.2f} s | {row['ratio']:.2f} | {row['ratio_windows']:.2f} |"
            )
        lines += [
            "",
            f"PDF text extraction on its own (pypdf in the bounded child process, "
            f"`scanning.document_pages`): {pdf['extract_s']:.2f} s for {pdf['pages']:.0f} pages; "
            "the scan extracts once and the index job reuses the text.",
            "",
            "**Worker memory after a job.** A real Celery worker (`--pool prefork "
            "--concurrency 1`, default queue, the product's settings: "
            f"WORKER_MAX_MEMORY_MB={memory['limit_mb']:.0f}, so "
            "CELERY_WORKER_MAX_MEMORY_PER_CHILD) scans and indexes the PDF above into a new "
            f"model-backed collection ({memory['chunks']:.0f} chunks, {memory['job_s']:.1f} s "
            "from queueing the scan to the index job's end). RSS of the pool's child, "
            "sampled every 0.1 s:",
            "",
            "| | RSS |",
            "|---|---|",
            f"| child before the job (after a ping) | {memory['before_child_mb']:.0f} MB |",
            f"| child, peak during the job | {memory['peak_child_mb']:.0f} MB |",
            f"| child after the job (goal < {memory['limit_mb']:.0f} MB) "
            f"| {memory['after_child_mb']:.0f} MB |",
            f"| worker's main process (no job runs in it) | {memory['parent_mb']:.0f} MB |",
            "",
            "The child that ran the job "
            + (
                "exited after it (above the limit) and the pool started a fresh one: "
                if memory["replaced"]
                else "was **not** replaced within 60 s of the job's end: "
            )
            + f"goal {_goal(memory['after_child_mb'] < memory['limit_mb'])}.",
        ]
    body = "\n".join(lines) + "\n"
    write_section("ingest", body)
    return body


if __name__ == "__main__":
    import platform

    from django.core.management import call_command

    from benchmarks.results import write_section

    call_command("migrate", interactive=False, verbosity=0)
    try:
        from host.local_model import assemble_minilm

        assemble_minilm(Path(os.environ["EMBEDDING_MODEL_PATH"]))
    except FileNotFoundError as error:
        print(f"Local model packages not installed ({error}); using the folder as it is.")
    print(
        run(
            write_section,
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        )
    )
