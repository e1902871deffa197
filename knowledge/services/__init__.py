"""Every write of the knowledge app, one module per concern.

`embedders` (a collection's embedding model), `stores` (collections and their vector
index), `folders` (server folders a person may index), `uploads` (our copies of
uploaded files), `sources` (a collection's folders and uploads), `jobs` (starting,
claiming, settling and reaping jobs), `scans` and `indexing` (the two kinds of job),
`extracted` (PDF text a scan keeps for the index job).

The public functions are re-exported here: callers write `from knowledge.services
import store_create`.
"""

from __future__ import annotations

from knowledge.services.embedders import (
    embedder_build,
    local_models,
    semantic_status,
    store_embedder,
)
from knowledge.services.folders import allowed_roots, granted_folders
from knowledge.services.indexing import index_run
from knowledge.services.jobs import job_cancel, stale_jobs_reap
from knowledge.services.scans import scan_confirm, scan_dismiss, scan_run
from knowledge.services.sharing import ShareRefused, store_share_set
from knowledge.services.sources import (
    document_remove,
    source_add_folder,
    source_add_upload,
    source_remove,
    source_set_enabled,
    source_update_now,
    watch_sources,
)
from knowledge.services.stores import store_create, store_delete, store_rebuild
from knowledge.services.uploads import upload_bytes, upload_formats, upload_label, upload_safe_name

__all__ = [
    "ShareRefused",
    "allowed_roots",
    "document_remove",
    "embedder_build",
    "granted_folders",
    "index_run",
    "job_cancel",
    "local_models",
    "scan_confirm",
    "scan_dismiss",
    "scan_run",
    "semantic_status",
    "source_add_folder",
    "source_add_upload",
    "source_remove",
    "source_set_enabled",
    "source_update_now",
    "stale_jobs_reap",
    "store_create",
    "store_delete",
    "store_embedder",
    "store_rebuild",
    "store_share_set",
    "upload_bytes",
    "upload_formats",
    "upload_label",
    "upload_safe_name",
    "watch_sources",
]
