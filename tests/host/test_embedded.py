from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.db import connection

from host.env import database_from_url

pytestmark = pytest.mark.django_db


def test_tests_use_their_own_data_dir_not_the_dev_one():
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    assert settings.DATA_DIR.name == (f"test-{worker}" if worker else "test")
    assert settings.DATA_DIR.parent.name == ".data"
    assert connection.settings_dict["NAME"].startswith("test_")


def test_pgvector_extension_is_installed():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    assert row is not None
    assert tuple(int(part) for part in row[0].split(".")[:2]) >= (0, 6)


def test_hnsw_index_answers_nearest_neighbour_queries():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE probe (id int PRIMARY KEY, embedding vector(3))")
        cursor.execute(
            "INSERT INTO probe SELECT i, ARRAY[cos(i), sin(i), i % 7]::vector "
            "FROM generate_series(1, 500) AS i"
        )
        cursor.execute("CREATE INDEX probe_hnsw ON probe USING hnsw (embedding vector_cosine_ops)")
        cursor.execute("ANALYZE probe")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN SELECT id FROM probe ORDER BY embedding <=> '[1, 0, 0]' LIMIT 5")
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("SELECT id FROM probe ORDER BY embedding <=> '[1, 0, 0]' LIMIT 5")
        ids = [row[0] for row in cursor.fetchall()]
    assert "probe_hnsw" in plan
    assert len(ids) == 5


def test_embedded_postgres_is_tuned_for_index_builds():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
        )
        (maintenance_kb,) = cursor.fetchone()
    assert maintenance_kb >= 1024 * 1024


def test_database_url_with_socket_folder_becomes_django_settings():
    entry = database_from_url("postgresql://postgres:@/memory?host=/tmp/pg")
    assert entry["NAME"] == "memory"
    assert entry["HOST"] == "/tmp/pg"
    assert entry["CONN_MAX_AGE"] == 0
    assert "pool" in entry["OPTIONS"]


def test_database_url_with_host_and_password():
    entry = database_from_url("postgres://app:s%40cret@db.internal:5433/memory?sslmode=require")
    assert (entry["USER"], entry["PASSWORD"], entry["HOST"], entry["PORT"]) == (
        "app",
        "s@cret",
        "db.internal",
        "5433",
    )
    assert entry["OPTIONS"]["sslmode"] == "require"
