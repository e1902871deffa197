from __future__ import annotations

from django.apps import AppConfig


class LearningConfig(AppConfig):
    name = "learning"
    verbose_name = "Learning and upkeep"

    def ready(self) -> None:
        # The jobs register with the Celery app in every process: the services queue them
        # by name (host/queue.py), with the task's own options.
        from learning import tasks  # noqa: F401
