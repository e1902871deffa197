from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class HostConfig(AppConfig):
    """The floor every app builds on: its template tags, its jobs and the kept answers of
    keyed writes."""

    name = "host"
    verbose_name = _("Host")

    def ready(self) -> None:
        # Every process knows the ping job by name (host/queue.py queues by name).
        # Django's deploy checks, told which middleware extend its own.
        from django.conf import settings
        from django.db.models.signals import post_delete

        from host import (
            checks,  # noqa: F401
            tasks,  # noqa: F401
        )
        from host.leftovers import user_exports_forget

        post_delete.connect(
            user_exports_forget, sender=settings.AUTH_USER_MODEL, dispatch_uid="host-exports"
        )
