"""What the web server's fork server loads before it forks the first web worker.

Each worker used to be a fresh interpreter importing Django and the whole app on its
own: on two cores, two workers and the Celery worker importing at once made a start
slow, and each worker held its own copy of the same modules. The fork server imports
the app (its URLs and API schemas too) once and every worker is forked from it,
sharing those pages until one writes them.

Nothing here may leave a thread running or a database connection open: a forked
worker would inherit the connection's socket, or a lock held by a thread that does
not exist in the child.
"""

from __future__ import annotations

import threading

from django.db import connections
from django.urls import get_resolver

import config.asgi  # noqa: F401 - the point: loaded once, here

# The URLs and the API's schemas too (most of a first request's time otherwise).
get_resolver().url_patterns  # noqa: B018 - loading them is the point
connections.close_all()
if threading.active_count() != 1:  # pragma: no cover - a regression the test catches
    raise RuntimeError(
        "Loading the web app started a thread; the web workers cannot be forked from it: "
        + ", ".join(thread.name for thread in threading.enumerate())
    )
