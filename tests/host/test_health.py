from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_readyz_reports_database_pgvector_redis_and_worker_up_without_versions(
    client, celery_worker
):
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 200
    assert body["database"] == {"ok": True}  # pgvector checked; no versions for strangers
    assert body["redis"] == {"ok": True}
    assert body["worker"] == {"ok": True}


def test_healthz_is_cheap_liveness_without_a_worker_round_trip(client, django_assert_num_queries):
    with django_assert_num_queries(1):
        response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200
    assert set(body) == {"status", "database", "redis"}


def test_healthz_reuses_one_redis_connection(client):
    from host import health

    client.get("/healthz")
    first = health._redis_clients.copy()
    client.get("/healthz")
    assert health._redis_clients == first and len(first) == 1


@pytest.mark.parametrize("url", ["/healthz", "/readyz"])
def test_health_is_503_when_redis_is_down(client, settings, tmp_path, url):
    settings.REDIS_URL = f"unix://{tmp_path}/no-such.socket"
    response = client.get(url)
    body = response.json()
    assert response.status_code == 503
    assert body["redis"]["ok"] is False
    assert body["database"]["ok"] is True
    if url == "/readyz":
        assert body["worker"]["ok"] is False
