"""Thin Celery tasks of the bridges app; each takes an id and is safe to run twice."""

from __future__ import annotations

from celery import shared_task
from celery.contrib.django.task import DjangoTask

from bridges import outbox, services


@shared_task(
    name="bridges.inbound_process",
    base=DjangoTask,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def inbound_process_task(inbound_id: int) -> None:
    services.inbound_process(inbound_id=inbound_id)


@shared_task(
    name="bridges.callback_send",
    base=DjangoTask,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def callback_send_task(inbound_id: int) -> None:
    services.callback_send(inbound_id=inbound_id)


@shared_task(
    name="bridges.endpoint_deliver",
    base=DjangoTask,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def endpoint_deliver_task(endpoint_id: int) -> None:
    outbox.endpoint_deliver(endpoint_id=endpoint_id)


@shared_task(name="bridges.sweep", ignore_result=True)
def sweep_task() -> dict[str, int]:
    return services.bridges_sweep()
