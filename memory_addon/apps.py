from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate, post_save
from django.utils.translation import gettext_lazy as _


class MemoryAddonConfig(AppConfig):
    name = "memory_addon"
    verbose_name = _("Short memory")

    def ready(self) -> None:
        from accounts.models import Agent, User
        from addons.builtins import BuiltinAddon, builtin_addon_register
        from addons.skill_writer import rules_writer_register
        from host.storage import register_storage_counter

        # events: the live-page listeners; tasks: the jobs register with Celery in every
        # process, since the services queue them by name (host/queue.py).
        from memory_addon import events, receivers, tasks  # noqa: F401
        from memory_addon.addons import MEMORY_MANIFEST
        from memory_addon.selectors import memory_bytes
        from memory_addon.services.skill_rules import skill_rules_replace

        post_save.connect(receivers.user_created, sender=User, dispatch_uid="memory-user-scope")
        post_save.connect(receivers.agent_created, sender=Agent, dispatch_uid="memory-agent-scope")
        post_migrate.connect(
            receivers.scopes_after_migrate, sender=self, dispatch_uid="memory-missing-scopes"
        )
        register_storage_counter(memory_bytes)
        rules_writer_register(skill_rules_replace)
        builtin_addon_register(
            BuiltinAddon(MEMORY_MANIFEST, page="memory_addon_page", needs_memory=True)
        )
