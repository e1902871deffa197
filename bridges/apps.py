from __future__ import annotations

from django.apps import AppConfig


class BridgesConfig(AppConfig):
    name = "bridges"
    verbose_name = "Messaging bridges and outgoing events"
