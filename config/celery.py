"""The Celery app: configured from Django settings (CELERY_* names)."""

from __future__ import annotations

import logging.config
import os
import sys
from pathlib import Path
from typing import Any

from celery import Celery, signals

# Their signal handlers: job metrics, and the request id carried into jobs.
from host import metrics, request_id  # noqa: F401

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def _is_celery_command(argv: list[str]) -> bool:
    """`celery -A config worker|beat` (the script or `python -m celery`)."""
    program = Path(argv[0]) if argv else Path()
    return program.name == "celery" or program.parts[-2:] == ("celery", "__main__.py")


if _is_celery_command(sys.argv):
    # A worker or beat started on its own: the embedded servers, before the settings load.
    from host import embedded

    embedded.start()

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def _django_logging(**kwargs: Any) -> None:
    """Workers log like the web processes: same format, with the request id."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
