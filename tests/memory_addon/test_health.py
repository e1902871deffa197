from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_healthz_reports_database_pgvector_redis_and_worker_up(client, celery_worker):
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200
    assert body["database"]["ok"] is True
    assert body["database"]["pgvector"]
    assert body["redis"] == {"ok": True}
    assert body["worker"] == {"ok": True}


def test_healthz_is_503_when_redis_is_down(client, settings, tmp_path):
    settings.REDIS_URL = f"unix://{tmp_path}/no-such.socket"
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert body["redis"]["ok"] is False
    assert body["worker"]["ok"] is False
    assert body["database"]["ok"] is True
