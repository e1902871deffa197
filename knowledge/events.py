"""Live job progress for the collection page, pushed to everyone who may read it."""

from __future__ import annotations

from django.conf import settings
from django.template.loader import render_to_string

from host.push import push_fragment_to_many_on_commit
from knowledge.models import Job
from knowledge.selectors import store_audience

SETTLED = (Job.State.REVIEW, Job.State.SUCCEEDED, Job.State.FAILED, Job.State.CANCELLED)


def job_changed_on_commit(job: Job) -> None:
    # Rendered once per role, not once per person: a collection shared with a large
    # organization costs two renders and one Redis send per reader.
    audience = store_audience(job.store)
    push_fragment_to_many_on_commit(audience.managers, lambda: job_fragments(job))
    push_fragment_to_many_on_commit(audience.readers, lambda: job_fragments(job, read_only=True))


def job_fragments(job: Job, *, read_only: bool = False) -> str:
    html = render_to_string(
        "knowledge/_job_status.html", {"job": job, "live": True, "read_only": read_only}
    )
    if job.state in SETTLED:
        # The review and the source counts change only when a job settles.
        store = job.store
        review_job = job if job.kind == Job.Kind.SCAN and job.state == Job.State.REVIEW else None
        html += render_to_string(
            "knowledge/_review.html",
            {"review_job": review_job, "store": store, "live": True, "read_only": read_only},
        )
        html += render_to_string(
            "knowledge/_sources.html",
            {
                "store": store,
                "sources": list(store.sources.all()),
                "live": True,
                "read_only": read_only,
                "watch_interval_minutes": settings.KNOWLEDGE_WATCH_INTERVAL_SECONDS // 60,
            },
        )
    return html
