"""Semantic + keyword search over notes (M4 list_memory, B3).

Note files are embedded with the owner's embedding model (an AI profile with the
embedding role) or else the site's local model, by a Celery job after each change
set commits; only files whose text changed are embedded again. A search fuses the
keyword list and the vector list with the same weighted fusion as collections.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction

from accounts.models import AIProfile, User
from host.core.fulltext import or_query
from host.core.fusion import fuse_weighted
from host.embeddings import Embedder, EmbeddingUnavailable, FastembedEmbedder, OpenAIEmbedder
from host.outbound import release_db_connection
from host.queue import queue_once_on_commit, queued_run_started
from memory_addon.models import MemoryFile, MemoryScope, NoteEmbedding

logger = logging.getLogger(__name__)
CANDIDATES = 20


def note_embedder(owner_id: int | None, *, for_query: bool = False) -> Embedder | None:
    """The owner's embedding profile, else the site's local model, else None (keywords only)."""
    profile = (
        AIProfile.objects.filter(owner_id=owner_id, role=AIProfile.Role.EMBEDDING)
        .order_by("pk")
        .first()
        if owner_id
        else None
    )
    try:
        if profile is not None:
            return OpenAIEmbedder(
                base_url=profile.base_url,
                model_name=profile.model,
                api_key=profile.api_key,
                timeout=settings.EMBEDDING_QUERY_TIMEOUT_SECONDS if for_query else 30.0,
                attempts=1 if for_query else 3,
            )
        return FastembedEmbedder(settings.EMBEDDING_MODEL)
    except EmbeddingUnavailable as error:
        logger.info("Notes are searched by keyword only: %s", error)
        return None


def note_embeddings_refresh(*, scope_id: int) -> int:
    """Embed the scope's files whose text changed since their vector; safe to run twice."""
    scope = MemoryScope.objects.filter(pk=scope_id).first()
    if scope is None:
        logger.info("Scope %s is gone; no notes to embed", scope_id)
        return 0
    stale = [
        (file.pk, file.sha256, file.content)
        for file in MemoryFile.objects.filter(scope=scope).select_related("embedding")
        if not hasattr(file, "embedding") or file.embedding.sha256 != file.sha256
    ]
    if not stale:
        return 0
    embedder = note_embedder(scope.owner_id)
    if embedder is None:
        return 0
    release_db_connection()  # embedding may wait on an outside server
    vectors = embedder.embed([content or " " for _, _, content in stale])
    with transaction.atomic(durable=True):
        existing = set(
            MemoryFile.objects.filter(pk__in=[pk for pk, _, _ in stale]).values_list(
                "pk", flat=True
            )
        )
        for (file_id, sha256, _), vector in zip(stale, vectors, strict=True):
            if file_id not in existing:  # deleted meanwhile
                continue
            NoteEmbedding.objects.update_or_create(
                file_id=file_id,
                defaults={
                    "model_name": embedder.model_name,
                    "dimension": embedder.dimension,
                    "sha256": sha256,
                    "vector": vector,
                },
            )
    return len(stale)


# A mark older than this is stale (a lost job): the next change queues a new one.


def note_embeddings_refresh_on_commit(scope_id: int) -> None:
    """One refresh waiting per scope: a burst of writes (a bank filled file by file) used
    to queue a job each, and the default worker spent minutes on them while collection
    scans waited behind. The refresh reads the scope as it is when it runs."""
    if settings.MEMORY_NOTE_EMBEDDINGS_ON_WRITE:
        queue_once_on_commit(
            "memory_addon.note_embeddings_refresh", f"note-embeddings:{scope_id}", scope_id
        )


def note_embeddings_refresh_started(scope_id: int) -> None:
    """A change after this point queues the next refresh."""
    queued_run_started(f"note-embeddings:{scope_id}")


@dataclass(frozen=True)
class NoteHit:
    scope: MemoryScope
    path: str
    content: str


# search_vector is stored (and indexed): no file is parsed again at query time.
KEYWORD_SQL = """
    SELECT id, ts_rank(search_vector, to_tsquery('simple', %s))
    FROM memory_addon_memoryfile
    WHERE scope_id = ANY(%s)
      AND search_vector @@ to_tsquery('simple', %s)
    ORDER BY 2 DESC, path LIMIT %s
"""


def _keyword(scope_ids: list[int], query: str, limit: int) -> list[tuple[int, float]]:
    ts_query = or_query(query)
    if not ts_query:
        return []
    with connection.cursor() as cursor:
        cursor.execute(KEYWORD_SQL, [ts_query, scope_ids, ts_query, limit])
        return [(file_id, float(score)) for file_id, score in cursor.fetchall()]


def _vector(
    scope_ids: list[int], embedder: Embedder, vector: list[float], limit: int
) -> list[tuple[int, float]]:
    literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT f.id, 1 - (e.vector <=> %s::vector) AS similarity
            FROM memory_addon_noteembedding e JOIN memory_addon_memoryfile f ON f.id = e.file_id
            WHERE f.scope_id = ANY(%s) AND e.model_name = %s AND e.dimension = %s
              AND e.sha256 = f.sha256
            ORDER BY e.vector <=> %s::vector LIMIT %s
            """,
            [literal, scope_ids, embedder.model_name, embedder.dimension, literal, limit],
        )
        rows = [(file_id, float(similarity)) for file_id, similarity in cursor.fetchall()]
    if not rows:
        return []
    # The collections' relevance floor: unrelated nearest notes are not hits.
    best = max(similarity for _, similarity in rows)
    floor = max(settings.KNOWLEDGE_MIN_SIMILARITY, best * settings.KNOWLEDGE_RELATIVE_SIMILARITY)
    return [(file_id, similarity) for file_id, similarity in rows if similarity >= floor]


def note_search(
    *, user: User, scopes: list[MemoryScope], query: str, limit: int = 10
) -> list[NoteHit]:
    """Files of `scopes` best first: keyword and meaning, fused by the fusion settings."""
    if not scopes or not query.strip():
        return []
    scope_ids = [scope.pk for scope in scopes]
    lists = [(_keyword(scope_ids, query, CANDIDATES), settings.KNOWLEDGE_FUSION_KEYWORD_WEIGHT)]
    embedded = NoteEmbedding.objects.filter(file__scope__in=scope_ids).exists()
    embedder = note_embedder(user.pk, for_query=True) if embedded else None
    if embedder is not None:
        try:
            release_db_connection()
            vector = embedder.embed([query])[0]
        except EmbeddingUnavailable as error:
            logger.warning("Embedding a notes query failed; keyword search only: %s", error)
        else:
            lists.append(
                (
                    _vector(scope_ids, embedder, vector, CANDIDATES),
                    settings.KNOWLEDGE_FUSION_VECTOR_WEIGHT,
                )
            )
    ordered = fuse_weighted(lists, method=settings.KNOWLEDGE_FUSION, k=settings.KNOWLEDGE_RRF_K)
    ordered = ordered[:limit]
    by_scope = {scope.pk: scope for scope in scopes}
    files = {f.pk: f for f in MemoryFile.objects.filter(pk__in=ordered)}
    return [
        NoteHit(by_scope[files[i].scope_id], files[i].path, files[i].content)
        for i in ordered
        if i in files
    ]
