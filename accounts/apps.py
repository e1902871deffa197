from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts and organizations"

    def ready(self) -> None:
        from accounts.selectors import stored_secrets_of
        from host.stored_secrets import register_stored_secrets

        register_stored_secrets(stored_secrets_of)
