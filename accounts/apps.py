from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = _("Accounts and organizations")

    def ready(self) -> None:
        from accounts.selectors import stored_secrets_of
        from host.stored_secrets import register_stored_secrets

        register_stored_secrets(stored_secrets_of)
