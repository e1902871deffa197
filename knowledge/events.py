"""Live job progress for the collection page (pushed to the owner's socket)."""

from __future__ import annotations

from django.conf import settings
from django.template.loader import render_to_string

from host.push import push_fragment_on_commit
from knowledge.models import Job

SETTLED = (Job.State.REVIEW, Job.State.SUCCEEDED, Job.State.FAILED, Job.State.CANCELLED)


def job_changed_on_commit(job: Job) -> None:
    push_fragment_on_commit(job.store.owner_id, lambda: job_fragments(job))


def job_fragments(job: Job) -> str:
    html = render_to_string("knowledge/_job_status.html", {"job": job, "live": True})
    if job.state in SETTLED:
        # The review and the source counts change only when a job settles.
        store = job.store
        review_job = job if job.kind == Job.Kind.SCAN and job.state == Job.State.REVIEW else None
        html += render_to_string(
            "knowledge/_review.html", {"review_job": review_job, "store": store, "live": True}
        )
        html += render_to_string(
            "knowledge/_sources.html",
            {
                "store": store,
                "sources": list(store.sources.all()),
                "live": True,
                "watch_interval_minutes": settings.KNOWLEDGE_WATCH_INTERVAL_SECONDS // 60,
            },
        )
    return html
