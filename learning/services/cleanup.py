"""Clean-up of a scope (M12): merge (AI), archive and restore, shorten (AI); each a change set."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import AIProfile, User
from host import model_client as client
from host.core.secret_guard import mask_outbound
from host.errors import ChangeRefused, NotAllowed
from host.outbound import OutboundRefused
from host.queue import queue_job_on_commit
from learning.core import cleanup
from learning.models import CleanupJob
from learning.services.model_call import model_call_once
from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope, content_hash
from memory_addon.services.changes import ABSENT, FileWrite, change_set_apply
from memory_addon.services.scopes import INDEX_PATH

logger = logging.getLogger(__name__)


def _file(scope: MemoryScope, path: str) -> MemoryFile | None:
    return MemoryFile.objects.filter(scope=scope, path=path).first()


def _text(scope: MemoryScope, path: str) -> str:
    row = _file(scope, path)
    return row.content if row else ""


def _profile(user: User) -> AIProfile:
    profile = (
        AIProfile.objects.filter(owner=user)
        .exclude(role=AIProfile.Role.EMBEDDING)
        .order_by("-is_default", "name")
        .first()
    )
    if profile is None:
        raise NotAllowed(gettext("Clean-up needs an AI profile; add one under Settings first."))
    return profile


def cleanup_start(*, user: User, scope: MemoryScope, kind: str) -> CleanupJob:
    """Queue one AI call for this scope's index (merge its machine entries or shorten)."""
    content = _text(scope, INDEX_PATH)
    if kind == CleanupJob.Kind.MERGE and len(entries.machine_entries(content)) < 2:
        raise ChangeRefused(gettext("There are fewer than two machine entries; nothing to merge."))
    if kind == CleanupJob.Kind.SHORTEN and not entries.person_items(content):
        raise ChangeRefused(gettext("There are no paragraphs of yours to shorten."))
    _profile(user)
    with transaction.atomic(durable=True):
        job = CleanupJob.objects.create(
            user=user, scope=scope, kind=kind, base_sha256=content_hash(content)
        )
        queue_job_on_commit("learning.cleanup_run", job.pk)
    return job


def _finish(job_id: int, state: str, *, proposed: str = "", error: str = "") -> None:
    CleanupJob.objects.filter(pk=job_id).update(
        state=state, proposed=proposed, error=error[:500], finished_at=timezone.now()
    )


def cleanup_run(*, job_id: int) -> str:
    claimed = CleanupJob.objects.filter(pk=job_id, state=CleanupJob.State.QUEUED).update(
        state=CleanupJob.State.RUNNING
    )
    if not claimed:
        return "skipped"
    job = CleanupJob.objects.select_related("scope", "user").get(pk=job_id)
    content = _text(job.scope, INDEX_PATH)
    if content_hash(content) != job.base_sha256:
        _finish(job_id, CleanupJob.State.REFUSED, error="The notes changed; start again.")
        return CleanupJob.State.REFUSED
    if job.kind == CleanupJob.Kind.MERGE:
        sent = [item.text for item in entries.machine_entries(content)]
        messages = cleanup.merge_messages([mask_outbound(t) for t in sent])
    else:
        sent = [item.text for item in entries.person_items(content)]
        messages = cleanup.shorten_messages([mask_outbound(t) for t in sent])
    profile = _profile(job.user)
    limit = float(settings.CLEANUP_TIMEOUT_SECONDS)
    try:
        result, _took = model_call_once(profile=profile, messages=messages, limit=limit)
    except (client.ModelError, OutboundRefused) as error:
        _finish(job_id, CleanupJob.State.REFUSED, error=f"The AI call failed: {error}")
        return CleanupJob.State.REFUSED
    if result.stopped:
        _finish(job_id, CleanupJob.State.REFUSED, error=f"The AI took longer than {int(limit)} s.")
        return CleanupJob.State.REFUSED
    if job.kind == CleanupJob.Kind.MERGE:
        checked = cleanup.check_merge(sent, result.content)
        if isinstance(checked, list):
            proposed = cleanup.merged_index(content, checked, today=timezone.localdate())
    else:
        checked = cleanup.check_shorten(sent, result.content)
        if isinstance(checked, list):
            proposed = cleanup.replace_paragraphs(content, entries.person_items(content), checked)
    if isinstance(checked, str):
        _finish(job_id, CleanupJob.State.REFUSED, error=checked + " Nothing was changed.")
        return CleanupJob.State.REFUSED
    _finish(job_id, CleanupJob.State.READY, proposed=proposed)
    return CleanupJob.State.READY


def cleanup_apply(*, user: User, job: CleanupJob) -> ChangeSet:
    """Apply a reviewed merge or shortening as one change set (the person pressed Apply)."""
    with transaction.atomic(durable=True):
        locked = CleanupJob.objects.select_for_update().get(pk=job.pk, user=user)
        if locked.state != CleanupJob.State.READY:
            raise ChangeRefused(f"This clean-up is {locked.get_state_display().lower()}.")
        merge = locked.kind == CleanupJob.Kind.MERGE
        change_set = change_set_apply(
            user=user,
            scope=locked.scope,
            writes=[FileWrite(INDEX_PATH, locked.proposed)],
            # A merge may touch machine entries only; shortening is the person's own choice.
            origin=ChangeSet.Origin.ASSISTANT if merge else ChangeSet.Origin.PERSON,
            source=ChangeSet.Source.CLEANUP,
            machine=merge,
            base_hashes={INDEX_PATH: locked.base_sha256},
            summary="Clean-up: merged machine entries" if merge else "Clean-up: shortened text",
        )
        locked.state, locked.change_set = CleanupJob.State.APPLIED, change_set
        locked.save(update_fields=["state", "change_set"])
    return change_set


def cleanup_dismiss(*, user: User, job: CleanupJob) -> None:
    CleanupJob.objects.filter(
        pk=job.pk, user=user, state__in=[CleanupJob.State.READY, CleanupJob.State.REFUSED]
    ).update(state=CleanupJob.State.DISMISSED)


def _bases(scope: MemoryScope, *paths: str) -> dict[str, str]:
    rows = {f.path: f.sha256 for f in MemoryFile.objects.filter(scope=scope, path__in=paths)}
    return {path: rows.get(path, ABSENT) for path in paths}


def archive_entries(*, user: User, scope: MemoryScope, ids: list[str]) -> ChangeSet:
    """Move the chosen old machine entries into archive.md, byte for byte, in one change set."""
    index, archive = _text(scope, INDEX_PATH), _text(scope, cleanup.ARCHIVE_PATH)
    old = {
        i.entry_id
        for i in cleanup.old_entries(
            index, today=timezone.localdate(), days=settings.CLEANUP_ARCHIVE_AFTER_DAYS
        )
    }
    if not ids:
        raise ChangeRefused(gettext("Choose the entries to archive first."))
    if any(entry_id not in old for entry_id in ids):
        raise ChangeRefused(
            f"Only machine entries older than {settings.CLEANUP_ARCHIVE_AFTER_DAYS} days "
            "can be archived."
        )
    new_index, new_archive = cleanup.move_entries(index, archive, ids)
    with transaction.atomic(durable=True):
        return change_set_apply(
            user=user,
            scope=scope,
            writes=[FileWrite(INDEX_PATH, new_index), FileWrite(cleanup.ARCHIVE_PATH, new_archive)],
            origin=ChangeSet.Origin.PERSON,
            source=ChangeSet.Source.CLEANUP,
            machine=False,
            base_hashes=_bases(scope, INDEX_PATH, cleanup.ARCHIVE_PATH),
            summary=f"Clean-up: archived {len(ids)} entr{'y' if len(ids) == 1 else 'ies'}",
        )


def archive_restore(*, user: User, scope: MemoryScope, ids: list[str]) -> ChangeSet:
    """Put archived entries back at the end of the index, checked like any change."""
    if not ids:
        raise ChangeRefused(gettext("Choose the archived entries to restore first."))
    index, archive = _text(scope, INDEX_PATH), _text(scope, cleanup.ARCHIVE_PATH)
    try:
        new_archive, new_index = cleanup.move_entries(archive, index, ids)
    except entries.EntryRefused as error:
        raise ChangeRefused(str(error)) from error
    with transaction.atomic(durable=True):
        return change_set_apply(
            user=user,
            scope=scope,
            writes=[FileWrite(INDEX_PATH, new_index), FileWrite(cleanup.ARCHIVE_PATH, new_archive)],
            origin=ChangeSet.Origin.RESTORE,
            source=ChangeSet.Source.CLEANUP,
            machine=True,
            base_hashes=_bases(scope, INDEX_PATH, cleanup.ARCHIVE_PATH),
            summary=f"Clean-up: restored {len(ids)} archived entr{'y' if len(ids) == 1 else 'ies'}",
        )


def archive_delete(*, user: User, scope: MemoryScope, ids: list[str]) -> ChangeSet:
    """Remove archived entries; the text stays only in the history (kept up to 365 days)."""
    if not ids:
        raise ChangeRefused(gettext("Choose the archived entries to delete first."))
    archive = _text(scope, cleanup.ARCHIVE_PATH)
    try:
        new_archive = cleanup.remove_entries(archive, ids)
    except entries.EntryRefused as error:
        raise ChangeRefused(str(error)) from error
    with transaction.atomic(durable=True):
        return change_set_apply(
            user=user,
            scope=scope,
            writes=[FileWrite(cleanup.ARCHIVE_PATH, new_archive)],
            origin=ChangeSet.Origin.PERSON,
            source=ChangeSet.Source.CLEANUP,
            machine=False,
            base_hashes=_bases(scope, cleanup.ARCHIVE_PATH),
            summary=f"Clean-up: deleted {len(ids)} archived entr{'y' if len(ids) == 1 else 'ies'}",
        )
