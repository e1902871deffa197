from __future__ import annotations

from django.apps import AppConfig


class AddonsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "addons"
    verbose_name = "Add-ons"
