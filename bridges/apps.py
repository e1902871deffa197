from __future__ import annotations

from django.apps import AppConfig


class BridgesConfig(AppConfig):
    name = "bridges"
    verbose_name = "Messaging bridges and outgoing events"

    def ready(self) -> None:
        # The jobs register with the Celery app in every process: the services queue them
        # by name (host/queue.py), with the task's own options.
        from bridges import tasks  # noqa: F401
        from bridges.selectors import endpoint_secrets_of
        from host.stored_secrets import register_stored_secrets

        register_stored_secrets(endpoint_secrets_of)
