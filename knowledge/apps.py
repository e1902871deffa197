from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_delete
from django.utils.translation import gettext_lazy as _


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = _("Knowledge collections")

    def ready(self) -> None:
        # The tasks register with the Celery app here: the services queue them by name.
        from host.leftovers import register_leftover_remover
        from host.storage import register_storage_counter
        from knowledge import qdrant, tasks  # noqa: F401
        from knowledge.models import Store
        from knowledge.services import upload_bytes
        from knowledge.services.uploads import QDRANT_COLLECTION, store_leftovers_forget

        # Uploaded documents count toward the person's storage quota.
        register_storage_counter(upload_bytes)
        post_delete.connect(
            store_leftovers_forget, sender=Store, dispatch_uid="knowledge-store-leftovers"
        )
        register_leftover_remover(QDRANT_COLLECTION, qdrant.leftover_remove)
