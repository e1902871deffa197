"""Live job progress for the collection page (pushed to the owner's socket)."""

from __future__ import annotations

from django.template.loader import render_to_string

from knowledge.models import Job
from memory_addon.events import push_fragment_on_commit


def job_changed_on_commit(job: Job) -> None:
    html = render_to_string("knowledge/_job_status.html", {"job": job, "live": True})
    push_fragment_on_commit(job.store.owner_id, html)
