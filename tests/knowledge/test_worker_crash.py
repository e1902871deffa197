"""A worker killed mid-index: the previous index keeps serving, a re-run adds no duplicates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from host.tasks import ping
from knowledge import services
from knowledge.models import Chunk, Job, StagedChunk
from knowledge.retrieval import retrieve
from knowledge.tasks import index_source
from tests.conftest import ROOT, child_env
from tests.knowledge.conftest import barrier

pytestmark = pytest.mark.django_db(transaction=True)
QUEUE = "crash-test"


def _worker(**env: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            QUEUE,
            "--pool",
            "solo",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--hostname",
            f"crash-{os.getpid()}-{len(env)}@%h",
        ],
        cwd=ROOT,
        env=child_env(**env),
    )
    assert ping.apply_async(queue=QUEUE).get(timeout=60) == "pong"
    return process


def test_killing_the_worker_mid_index_and_rerunning_leaves_no_duplicate_chunks(
    celery_worker, store, sample_folder, allowed_root, fake_openai
):
    (sample_folder / "long.txt").write_text(" ".join(f"wombat{i}" for i in range(60000)))
    source, scan_job = services.source_add_folder(store=store, path=str(sample_folder))
    barrier()
    Job.objects.filter(pk=scan_job.pk).update(state=Job.State.SUCCEEDED)
    job = Job.objects.create(store=store, source=source, kind=Job.Kind.INDEX, scan_job=scan_job)
    fake_openai.hold_after = len(fake_openai.embedding_inputs) + 1

    first = _worker()
    index_source.apply_async(args=[job.pk], queue=QUEUE)
    assert fake_openai.reached_hold.wait(timeout=60)
    assert StagedChunk.objects.filter(job=job).exists()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    fake_openai.hold_after = None
    fake_openai.release.set()
    # Nothing half-done is visible: the dead run only ever wrote to the staging table.
    assert Chunk.objects.filter(source=source).count() == 0
    assert retrieve([store], "wombat1", context_window=8192).block == ""
    second = _worker(KNOWLEDGE_JOB_STALE_SECONDS="0")
    try:
        index_source.apply_async(args=[job.pk], queue=QUEUE).get(timeout=180)
    finally:
        second.terminate()
        second.wait(timeout=30)
    job.refresh_from_db()
    assert job.state == Job.State.SUCCEEDED, job.error
    chunks = list(Chunk.objects.filter(source=source).values_list("document__path", "ordinal"))
    assert len(chunks) == len(set(chunks))
    long_chunks = [ordinal for path, ordinal in chunks if path == "long.txt"]
    assert sorted(long_chunks) == list(range(len(long_chunks))) and len(long_chunks) > 32
    assert not StagedChunk.objects.exists()
