from __future__ import annotations

from celery import shared_task
from celery.contrib.django.task import DjangoTask
from django.conf import settings

from learning.services import cleanup, rules, triage

# The detection call is bounded by its own deadline; the task limits are the backstop.
_SOFT = settings.LEARNING_DETECT_TIMEOUT_SECONDS + 5
_HARD = settings.LEARNING_DETECT_TIMEOUT_SECONDS + 15


@shared_task(
    name="learning.rule_detect",
    base=DjangoTask,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    soft_time_limit=_SOFT,
    time_limit=_HARD,
)
def rule_detect_task(suggestion_id: int) -> str:
    return rules.rule_detect(suggestion_id=suggestion_id)


@shared_task(
    name="learning.cleanup_run",
    base=DjangoTask,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    soft_time_limit=settings.CLEANUP_TIMEOUT_SECONDS + 5,
    time_limit=settings.CLEANUP_TIMEOUT_SECONDS + 15,
)
def cleanup_run_task(job_id: int) -> str:
    return cleanup.cleanup_run(job_id=job_id)


@shared_task(name="learning.triage_sweep", ignore_result=True)
def triage_sweep_task() -> int:
    return triage.triage_sweep()
