"""Issue 29: a finished indexing job said "Done · 1 of 3 documents" while it had indexed
all three files: the count came from the last (throttled) progress beat."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge import services
from knowledge.models import Job, Source
from tests.knowledge.conftest import barrier

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_finished_index_job_counts_every_file_it_handled(client, user, store, celery_worker):
    client.force_login(user)
    files = [
        SimpleUploadedFile(f"{name}.md", f"{name} live high up.\n".encode())
        for name in ("alpacas", "llamas", "vicunas")
    ]
    client.post(f"/knowledge/{store.pk}/uploads/", {"documents": files})
    source = Source.objects.get(store=store)
    barrier()
    services.scan_confirm(scan_job=Job.objects.get(source=source))
    barrier()
    job = Job.objects.get(source=source, kind=Job.Kind.INDEX)
    assert job.state == Job.State.SUCCEEDED
    assert (job.counts["documents"], job.counts["of"], job.counts["new"]) == (3, 3, 3)
    page = client.get(f"/knowledge/{store.pk}/").content.decode()
    assert "3 of 3 documents" in page
