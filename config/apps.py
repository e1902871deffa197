from __future__ import annotations

from django.apps import AppConfig


class ConfigConfig(AppConfig):
    """The project package as an app, so its commands (serve, backup, restore) are found."""

    name = "config"
    verbose_name = "Project"
