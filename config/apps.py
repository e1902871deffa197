from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ConfigConfig(AppConfig):
    """The project package as an app, so its commands (serve, backup, restore) are found."""

    name = "config"
    verbose_name = _("Project")
