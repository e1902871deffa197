"""Files attached in the chat: they go into the conversation's own collection, through
the collection page's upload service, so its size caps, formats and review apply."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.core.files.uploadedfile import UploadedFile
from django.db import connection, transaction
from django.utils import translation
from django.utils.translation import gettext

from accounts.models import User
from chat.models import Conversation
from chat.services import ChatRefused
from knowledge import services as knowledge
from knowledge.models import Job, Source, Store

STORE_NAME_CHARS = 120


def _store_name(conversation: Conversation) -> str:
    # Store names are one printable line and unique per owner: the id keeps them apart.
    title = "".join(c for c in str(conversation) if c.isprintable())
    name = gettext("Chat %(id)s: %(title)s") % {"id": conversation.pk, "title": title}
    return name[:STORE_NAME_CHARS].strip()


# Namespace of the per-conversation advisory lock (first key of pg_advisory_lock).
_OWN_STORE_LOCK_NAMESPACE = 7301


@contextmanager
def _own_store_lock(conversation_id: int) -> Iterator[None]:
    """Parallel first attachments of one chat make its collection one at a time.

    A session lock, not a transaction's: the collection is made in transactions of its
    own. It is held for two short writes and no outside call."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_lock(%s, %s)", [_OWN_STORE_LOCK_NAMESPACE, conversation_id]
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_unlock(%s, %s)", [_OWN_STORE_LOCK_NAMESPACE, conversation_id]
            )


def _own_store(user: User, conversation: Conversation) -> tuple[Store, bool]:
    """The conversation's own collection, made on first use; True when made now."""
    if conversation.own_store_id is not None:
        store = Store.objects.filter(pk=conversation.own_store_id, owner=user).first()
        if store is not None:
            return store, False
    with _own_store_lock(conversation.pk):
        # A parallel attach may have made it while this one waited for the lock.
        own_store_id = (
            Conversation.objects.filter(pk=conversation.pk)
            .values_list("own_store_id", flat=True)
            .first()
        )
        store = Store.objects.filter(pk=own_store_id, owner=user).first() if own_store_id else None
        if store is not None:
            conversation.own_store = store
            return store, False
        # Keyword-only: it works without any embedding model and indexes at once. Its
        # words are stemmed in the language the person uses the site in.
        german = (translation.get_language() or "").startswith("de")
        store = knowledge.store_create(
            owner=user,
            name=_store_name(conversation),
            provider="none",
            language=Store.Language.GERMAN if german else Store.Language.ENGLISH,
        )
        with transaction.atomic(durable=True):
            Conversation.objects.filter(pk=conversation.pk).update(own_store=store)
    conversation.own_store = store
    return store, True


def conversation_attach(
    *, user: User, conversation: Conversation, files: list[UploadedFile[bytes]]
) -> Source:
    """Upload files into the conversation's own collection and attach it; the files are
    scanned and wait for the person's review before they are indexed, as on the
    collection page. A refused upload leaves no new collection behind."""
    if conversation.temporary:
        raise ChatRefused(
            gettext(
                "A temporary chat keeps no files; attach them in a normal conversation "
                "or in a collection."
            )
        )
    if conversation.owner_id != user.pk:
        raise ChatRefused(gettext("Only the conversation's owner can attach files."))
    store, made = _own_store(user, conversation)
    try:
        source, _job = knowledge.source_add_upload(store=store, files=files)
    except BaseException:
        if made:
            knowledge.store_delete(store=store)
        raise
    conversation.stores.add(store)
    conversation.save(update_fields=["updated_at"])
    return source


@dataclass
class Attachment:
    """One upload of the conversation's own collection and where its files are now."""

    source: Source
    job: Job | None
    skipped: list[dict[str, object]] = field(default_factory=list)
    # Files its check found readable (new or changed): none means nothing can be indexed.
    to_index: int | None = None

    @property
    def busy(self) -> bool:
        return self.job is not None and self.job.state in Job.PENDING_STATES

    @property
    def waiting(self) -> bool:
        return self.job is not None and self.job.state == Job.State.REVIEW

    @property
    def nothing_to_index(self) -> bool:
        return self.to_index == 0


def attachments_of(conversation: Conversation) -> list[Attachment]:
    """The conversation's attached files, oldest first, each with its newest job and what
    its newest check found."""
    if conversation.own_store_id is None:
        return []
    sources = list(
        Source.objects.filter(store_id=conversation.own_store_id, kind=Source.Kind.UPLOAD).order_by(
            "pk"
        )
    )
    newest: dict[int, Job] = {}
    checked: dict[int, Job] = {}
    for row in Job.objects.filter(source__in=sources).order_by("created_at", "id"):
        newest[row.source_id] = row
        if row.kind == Job.Kind.SCAN and row.state != Job.State.FAILED:
            checked[row.source_id] = row
    rows = []
    for source in sources:
        scan = checked.get(source.pk)
        review = scan.review if scan is not None and isinstance(scan.review, list) else []
        rows.append(
            Attachment(
                source=source,
                job=newest.get(source.pk),
                skipped=[row for row in review if row.get("status") == "skipped"],
                to_index=(
                    sum(1 for row in review if row.get("status") in ("new", "changed"))
                    if scan is not None and scan.state not in Job.PENDING_STATES
                    else None
                ),
            )
        )
    return rows


def attachment_index(*, conversation: Conversation, job_id: int) -> Job:
    """The person confirmed an attached file's review: index it (knowledge's confirm)."""
    store_id = conversation.own_store_id
    job = None
    if store_id is not None:
        job = Job.objects.filter(pk=job_id, kind=Job.Kind.SCAN, store_id=store_id).first()
    if job is None:
        raise ChatRefused(gettext("No such attached file."))
    return knowledge.scan_confirm(scan_job=job)


def own_store_forget(sender: type[Conversation], instance: Conversation, **kwargs: object) -> None:
    """A deleted conversation's own collection goes with it, after the commit (every
    path: delete, a temporary chat ended or purged). One that another chat has attached
    (an edited copy, say) becomes that chat's own, and goes when it goes."""
    store_id = instance.own_store_id
    if store_id is not None:
        transaction.on_commit(lambda: _own_store_delete(store_id))


def _own_store_delete(store_id: int) -> None:
    store = Store.objects.filter(pk=store_id).first()
    if store is None or Conversation.objects.filter(own_store=store).exists():
        return
    heir = Conversation.objects.filter(stores=store, own_store__isnull=True).order_by("pk").first()
    if heir is not None:
        Conversation.objects.filter(pk=heir.pk, own_store__isnull=True).update(own_store=store)
        return
    if Conversation.objects.filter(stores=store).exists():
        return  # attached to chats with files of their own: it stays, like any collection
    knowledge.store_delete(store=store)
