from __future__ import annotations

from celery import shared_task
from celery.contrib.django.task import DjangoTask

from chat import questions, runner, schedules, search, services


@shared_task(
    name="chat.turn_run",
    base=DjangoTask,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def turn_run_task(message_id: int) -> None:
    runner.turn_run(message_id=message_id)


@shared_task(name="chat.reap_stalled", ignore_result=True)
def reap_stalled_task() -> int:
    return runner.messages_reap_stalled()


@shared_task(name="chat.schedules_due", ignore_result=True)
def schedules_due_task() -> int:
    return schedules.schedules_due()


@shared_task(name="chat.questions_expire", ignore_result=True)
def questions_expire_task() -> int:
    return questions.questions_expire()


@shared_task(name="chat.temporary_purge", ignore_result=True)
def temporary_purge_task() -> int:
    return services.temporary_conversations_purge()


# Idempotent: it embeds only messages whose text has no vector yet (B10).
@shared_task(name="chat.message_embeddings_refresh")
def message_embeddings_refresh_task(conversation_id: int) -> int:
    search.message_embeddings_started(conversation_id)
    return search.message_embeddings_refresh(conversation_id=conversation_id)
