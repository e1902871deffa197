"""Collections whose vectors live in a Qdrant service (K1's Qdrant store type).

Chunk rows, their texts, keyword search and its statistics stay in PostgreSQL; Qdrant
holds one point per chunk, under the chunk's id, with its source in the payload. A
point counts only while its chunk row exists: an index job writes the new points
under chunk ids taken before its commit, and the commit that inserts those rows makes
them visible, in one step with the keyword side. Points of replaced or removed chunks
are deleted after the commit; until then no row leads to them.

Every call is bounded as a whole (connect, headers, answer) by
KNOWLEDGE_QDRANT_TIMEOUT_SECONDS and MAX_ANSWER_BYTES (host/bounded_http.py)
and made without holding a database connection.
"""

from __future__ import annotations

import ipaddress
import logging
import uuid
from collections.abc import Iterable
from contextlib import AbstractContextManager
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection

from host.bounded_http import CallBudget, bounded_call
from host.outbound import (
    OutboundRefused,
    check_outbound_url,
    guarded_transport,
    release_db_connection,
)
from knowledge.errors import KnowledgeRefusal
from knowledge.models import Chunk, StagedChunk, Store

if TYPE_CHECKING:
    # Imported where called: qdrant_client imports fastembed, onnxruntime and
    # tokenizers (about 150 MB) in every process that loads the app, used or not.
    from qdrant_client import QdrantClient

logger = logging.getLogger(__name__)
UPSERT_BATCH = 256
# Our calls are answered with ids, scores and counts (vectors are never asked back).
MAX_ANSWER_BYTES = 16 * 1024 * 1024


class QdrantUnavailable(KnowledgeRefusal):
    """The Qdrant service did not answer or refused; the message says which."""

    status = 503


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> str:
    """The Qdrant address, cleaned, or a refusal: HTTPS unless it is this machine."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise KnowledgeRefusal("Give the Qdrant address as https://host:port.")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise KnowledgeRefusal("Give the Qdrant address without a user, query or fragment.")
    host = parts.hostname.lower()
    trusted = {name.lower() for name in settings.KNOWLEDGE_QDRANT_PLAIN_HTTP_HOSTS}
    if parts.scheme == "http" and not (_loopback(host) or host in trusted):
        raise KnowledgeRefusal(
            f"Use https:// for the Qdrant service at {host}: plain http:// would send the API "
            "key and your documents' vectors unencrypted. Plain http:// is only accepted for "
            "this machine (localhost) or hosts an administrator named in "
            "KNOWLEDGE_QDRANT_PLAIN_HTTP_HOSTS."
        )
    if host not in trusted:
        try:
            check_outbound_url(url, unresolvable_ok=True)
        except OutboundRefused as error:
            raise KnowledgeRefusal(str(error)) from None
    return url


@cache
def _local_client(location: str) -> QdrantClient:
    from qdrant_client import QdrantClient

    # One per process: a local-mode client keeps its data in itself (":memory:") or
    # holds a lock on its folder.
    if location == ":memory:":
        return QdrantClient(location=":memory:")
    return QdrantClient(path=location)


def client(store: Store) -> QdrantClient:
    from qdrant_client import QdrantClient

    if settings.KNOWLEDGE_QDRANT_LOCAL:
        return _local_client(settings.KNOWLEDGE_QDRANT_LOCAL)
    return QdrantClient(
        url=store.qdrant_url,
        api_key=store.qdrant_api_key or None,
        timeout=settings.KNOWLEDGE_QDRANT_TIMEOUT_SECONDS,
        prefer_grpc=False,
        check_compatibility=False,  # no extra version request before every search
        # Every connection is checked against the outbound rules when it is made, not
        # only when the store was created (the name may resolve elsewhere by now), and
        # every call is bounded as a whole.
        transport=guarded_transport(trusted_hosts=settings.KNOWLEDGE_QDRANT_PLAIN_HTTP_HOSTS),
    )


def _bounded() -> AbstractContextManager[CallBudget]:
    """One Qdrant call (or the few of one action) bounded as a whole."""
    return bounded_call(
        total_seconds=float(settings.KNOWLEDGE_QDRANT_TIMEOUT_SECONDS), max_bytes=MAX_ANSWER_BYTES
    )


def _refusal(error: BaseException | None) -> OutboundRefused | None:
    """The outbound refusal inside qdrant-client's wrapping, if that is what failed."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, OutboundRefused):
            return error
        error = getattr(error, "source", None) or error.__cause__ or error.__context__
        seen += 1
    return None


def _call(what: str, store: Store, action: str, error: Exception) -> QdrantUnavailable:
    refusal = _refusal(error)
    if refusal is not None:
        logger.warning("Qdrant %s refused for store %s: %s", action, store.pk, refusal)
        return QdrantUnavailable(f"The Qdrant service at {store.qdrant_url}: {refusal}")
    logger.warning("Qdrant %s failed for store %s", action, store.pk, exc_info=True)
    return QdrantUnavailable(
        f"The Qdrant service at {store.qdrant_url} did not {what}. Check that it runs and "
        "that the address and API key are right, then try again."
    )


def new_collection_name() -> str:
    return f"memory_host_{uuid.uuid4().hex}"


def collection_create(store: Store) -> None:
    from qdrant_client import models as qm

    """Make the store's Qdrant collection (cosine distance, the store's dimension)."""
    release_db_connection()
    try:
        with _bounded():
            qdrant = client(store)
            qdrant.create_collection(
                collection_name=store.qdrant_collection,
                vectors_config=qm.VectorParams(
                    size=int(store.dimension or 0), distance=qm.Distance.COSINE
                ),
            )
            if not settings.KNOWLEDGE_QDRANT_LOCAL:  # local mode has no payload indexes
                qdrant.create_payload_index(
                    collection_name=store.qdrant_collection,
                    field_name="source_id",
                    field_schema=qm.PayloadSchemaType.INTEGER,
                )
    except Exception as error:
        raise _call("accept a new collection", store, "create", error) from error


def collection_delete(store: Store) -> None:
    release_db_connection()
    try:
        with _bounded():
            qdrant = client(store)
            if qdrant.collection_exists(store.qdrant_collection):
                qdrant.delete_collection(store.qdrant_collection)
    except Exception as error:
        raise _call("delete the collection", store, "delete", error) from error


def leftover_target(store: Store) -> dict[str, str]:
    """What removing a deleted collection's vectors needs once its row is gone (the key
    stays encrypted)."""
    return {
        "url": store.qdrant_url,
        "collection": store.qdrant_collection,
        "api_key_encrypted": store.qdrant_api_key_encrypted,
    }


def leftover_remove(target: dict[str, Any]) -> None:
    """Delete a deleted collection's Qdrant collection (host/leftovers.py retries a failure)."""
    collection_delete(
        Store(
            backend=Store.Backend.QDRANT,
            qdrant_url=str(target["url"]),
            qdrant_collection=str(target["collection"]),
            qdrant_api_key_encrypted=str(target.get("api_key_encrypted") or ""),
        )
    )


def stage_points(store: Store, job_id: int, source_id: int) -> None:
    from qdrant_client import models as qm

    """Give the job's staged chunks their chunk ids and write their vectors under them.

    Before the commit: the points are not found until the commit inserts the rows.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """UPDATE knowledge_stagedchunk
               SET chunk_id = nextval(pg_get_serial_sequence('knowledge_chunk', 'id'))
               WHERE job_id = %s AND chunk_id IS NULL""",
            [job_id],
        )
    last = 0
    while True:
        batch = list(
            StagedChunk.objects.filter(job_id=job_id, pk__gt=last)
            .order_by("pk")
            .values_list("pk", "chunk_id", "embedding")[:UPSERT_BATCH]
        )
        if not batch:
            return
        last = batch[-1][0]
        points = [
            qm.PointStruct(
                id=int(chunk_id),
                vector=[float(x) for x in vector],
                payload={"source_id": source_id},
            )
            for _, chunk_id, vector in batch
            if vector is not None and chunk_id is not None
        ]
        release_db_connection()
        try:
            with _bounded():
                client(store).upsert(store.qdrant_collection, points=points, wait=True)
        except Exception as error:
            raise _call("store the new vectors", store, "upsert", error) from error


def points_delete(store: Store, chunk_ids: Iterable[int]) -> None:
    from qdrant_client import models as qm

    """Best effort after a commit: the rows are gone, so the points are never found."""
    ids: list[int | str | uuid.UUID] = [int(i) for i in chunk_ids]
    if not ids:
        return
    release_db_connection()
    try:
        with _bounded():
            client(store).delete(
                store.qdrant_collection, points_selector=qm.PointIdsList(points=ids), wait=True
            )
    except Exception:
        logger.warning("Deleting %s old Qdrant points of store %s failed", len(ids), store.pk)


def source_points_delete(store: Store, source_id: int) -> None:
    from qdrant_client import models as qm

    release_db_connection()
    selector = qm.FilterSelector(
        filter=qm.Filter(
            must=[qm.FieldCondition(key="source_id", match=qm.MatchValue(value=source_id))]
        )
    )
    try:
        with _bounded():
            client(store).delete(store.qdrant_collection, points_selector=selector, wait=True)
    except Exception:
        logger.warning("Deleting the Qdrant points of source %s failed", source_id)


def vector_scored(
    store: Store, vector: list[float], source_ids: list[int], limit: int
) -> list[tuple[int, float]]:
    from qdrant_client import models as qm

    """(chunk id, cosine similarity) nearest first, among chunks that exist and are enabled."""
    if not source_ids:
        return []
    query_filter = qm.Filter(
        must=[qm.FieldCondition(key="source_id", match=qm.MatchAny(any=list(source_ids)))]
    )
    release_db_connection()
    try:
        with _bounded():
            hits = client(store).query_points(
                store.qdrant_collection,
                query=vector,
                query_filter=query_filter,
                limit=2 * limit + 10,  # room for points of a job not committed yet
                with_payload=False,
            )
    except Exception as error:
        raise _call("answer a search", store, "search", error) from error
    scored = [(int(point.id), float(point.score)) for point in hits.points]
    visible = set(
        Chunk.objects.filter(
            store=store, source_id__in=source_ids, pk__in=[i for i, _ in scored]
        ).values_list("pk", flat=True)
    )
    return [(chunk_id, score) for chunk_id, score in scored if chunk_id in visible][:limit]


__all__ = [
    "QdrantUnavailable",
    "check_url",
    "collection_create",
    "collection_delete",
    "points_delete",
    "source_points_delete",
    "stage_points",
    "vector_scored",
]
