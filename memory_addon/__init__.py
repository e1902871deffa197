from __future__ import annotations

from memory_addon.celery import app as celery_app

__all__ = ["celery_app"]
