from __future__ import annotations

from config.celery import app
from host.tasks import ping


def test_ping_task_round_trips_through_a_real_worker(celery_worker):
    result = ping.delay()
    assert result.get(timeout=30) == "pong"
    assert result.successful()


def test_celery_is_configured_for_json_and_late_acks():
    conf = app.conf
    assert conf.task_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
