from __future__ import annotations

from django.apps import AppConfig


class MemoryAddonConfig(AppConfig):
    name = "memory_addon"
    verbose_name = "Short memory"
