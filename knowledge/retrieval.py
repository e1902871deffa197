"""Bounded, cited retrieval (K7, K8): vector and BM25 keyword search, fused by weight."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, TypedDict

from django.conf import settings
from django.db import connection

from host.core import fusion
from host.core.fulltext import or_query, query_words
from host.embeddings import EmbeddingUnavailable
from host.outbound import release_db_connection
from knowledge import qdrant
from knowledge.core import blocks, bm25
from knowledge.models import Chunk, Store
from knowledge.services import store_embedder

logger = logging.getLogger(__name__)
CANDIDATES = 50


class SentExcerpt(TypedDict):
    marker: str
    source_id: int
    path: str
    page: int | None
    tokens: int


@dataclass
class Retrieval:
    block: str
    excerpts: list[blocks.Excerpt] = field(default_factory=list)
    semantic: bool = True

    def sent_along(self) -> list[SentExcerpt]:
        return [
            {
                "marker": excerpt.marker,
                "source_id": excerpt.candidate.source_id,
                "path": excerpt.candidate.path,
                "page": excerpt.candidate.page,
                "tokens": excerpt.tokens,
            }
            for excerpt in self.excerpts
        ]


def _enabled_sources(store: Store) -> tuple[list[int], tuple[int, int]]:
    """The enabled source ids and (their chunks, all chunks): one small query, without
    the sources' file lists."""
    rows = list(store.sources.values_list("pk", "enabled", "chunk_count"))
    enabled = [(pk, chunks) for pk, on, chunks in rows if on]
    return [pk for pk, _ in enabled], (
        sum(chunks for _, chunks in enabled),
        sum(chunks for _, _, chunks in rows),
    )


def vector_ranking(
    store: Store, vector: list[float], source_ids: list[int], limit: int = CANDIDATES
) -> list[int]:
    """Chunk ids nearest to the vector among the given sources, always up to `limit` of them."""
    return [chunk_id for chunk_id, _ in vector_scored(store, vector, source_ids, limit)]


def vector_scored(
    store: Store,
    vector: list[float],
    source_ids: list[int],
    limit: int = CANDIDATES,
    *,
    chunk_counts: tuple[int, int] | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) nearest first, always up to `limit` of them.

    pgvector applies WHERE filters after the HNSW scan, so a filtered index query can
    return fewer rows than asked; small or mostly-disabled sets use an exact scan, and
    an index query that comes back short falls back to one. `chunk_counts` is
    (chunks in `source_ids`, chunks in the store) when the caller already has the
    sources; without it they are read first.

    One round trip: `SET LOCAL hnsw.ef_search` and the query go as one statement
    string, which PostgreSQL runs as one (implicit) transaction.
    """
    if not source_ids or not store.dimension:
        return []
    if chunk_counts is None:
        counts = dict(store.sources.values_list("pk", "chunk_count"))
        chunk_counts = (sum(counts.get(pk, 0) for pk in source_ids), sum(counts.values()))
    enabled_chunks, total_chunks = chunk_counts
    literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
    dim = int(store.dimension)
    exact = (
        enabled_chunks <= settings.KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS
        or enabled_chunks < total_chunks / 2
    )
    with connection.cursor() as cursor:
        if not exact:
            ef_search = int(max(settings.KNOWLEDGE_HNSW_EF_SEARCH, 2 * limit))
            # Every source on: the store's own (partial) index needs no further filter.
            every = enabled_chunks >= total_chunks
            cursor.execute(
                f"""SET LOCAL hnsw.ef_search = {ef_search};
                    SELECT id, (embedding::vector({dim})) <=> %s::vector({dim}) AS distance
                    FROM knowledge_chunk
                    WHERE store_id = %s {"" if every else "AND source_id = ANY(%s)"}
                    ORDER BY distance LIMIT %s""",  # noqa: S608
                [literal, store.pk, limit] if every else [literal, store.pk, source_ids, limit],
            )
            cursor.nextset()
            rows = cursor.fetchall()
            if len(rows) >= min(limit, enabled_chunks):
                return [(chunk_id, 1.0 - float(distance)) for chunk_id, distance in rows]
        cursor.execute(
            """SELECT id, embedding <=> %s::vector AS distance FROM knowledge_chunk
               WHERE store_id = %s AND source_id = ANY(%s) AND embedding IS NOT NULL
               ORDER BY distance LIMIT %s""",
            [literal, store.pk, source_ids, limit],
        )
        return [(chunk_id, 1.0 - float(distance)) for chunk_id, distance in cursor.fetchall()]


def above_floor(scored: list[tuple[int, float]], model_name: str = "") -> list[tuple[int, float]]:
    """Drop neighbours too far from the query to be related (K7's relevance floor).

    A nearest-neighbour search always returns something: without a floor, one
    unrelated (or poisoned) file reached every query of its collection. A hit must be
    similar enough on its own (absolute) and next to the best hit (relative).
    """
    if not scored:
        return []
    best = max(similarity for _, similarity in scored)
    # Floors are on a model's own scale (e5's cosines sit far higher than MiniLM's).
    minimum, relative = settings.LOCAL_MODEL_SIMILARITY_FLOORS.get(
        model_name, (settings.KNOWLEDGE_MIN_SIMILARITY, settings.KNOWLEDGE_RELATIVE_SIMILARITY)
    )
    floor = max(minimum, best * relative)
    return [(chunk_id, similarity) for chunk_id, similarity in scored if similarity >= floor]


# BM25 with the store's statistics (knowledge_keywordterm / knowledge_keywordstats, kept
# by triggers), so a chunk's score is the one it has in the whole store, not among the
# candidates. Which chunks are scored is knowledge.core.bm25's plan: those holding the
# query's rarer terms, found through the GIN index, so a term in every chunk does not
# make every chunk a candidate.
# The lexemes as one array (an init plan), so the (store, term) index finds each term;
# as a semi-join the planner walked every term of the store.
_TERMS = """
SELECT t.term, t.df, s.chunks, s.tokens
FROM knowledge_keywordterm t JOIN knowledge_keywordstats s ON s.store_id = t.store_id
WHERE t.store_id = %(store)s
  AND t.term = ANY(ARRAY(
    SELECT lexeme FROM unnest(to_tsvector(%(config)s::regconfig, %(words)s))))
"""

# tf is the number of positions of a lexeme; setweight + ts_filter cut each candidate's
# tsvector down to the query's lexemes before it is unnested. {cap} bounds the candidates
# when even the rarest term is in more chunks than the budget.
_SCORE = """
SELECT c.id,
       (SELECT sum((%(idfs)s::float8[])[array_position(%(terms)s::text[], u.lexeme)]
                   * x.tf * (%(k1)s + 1)
                   / (x.tf + %(k1)s * (1 - %(b)s + %(b)s * c.search_length / %(avgdl)s)))
        FROM unnest(ts_filter(setweight(c.search, 'A', %(terms)s::text[]), '{a}')) u,
             LATERAL (SELECT coalesce(array_length(u.positions, 1), 1)::float8 AS tf) x
       ) AS score
FROM (SELECT id, search, search_length FROM knowledge_chunk
      WHERE store_id = %(store)s AND source_id = ANY(%(sources)s)
        AND search @@ %(candidates)s::tsquery
      {cap}) c
ORDER BY score DESC, c.id
LIMIT %(limit)s
"""

# The fallback when no whole word matches: word beginnings ("authentic" finds
# "authentication"), ranked by ts_rank, so a question with an answer gets one.
_PREFIX = """
SELECT id, ts_rank(search, q) FROM knowledge_chunk, to_tsquery(%(config)s::regconfig, %(query)s) q
WHERE store_id = %(store)s AND source_id = ANY(%(sources)s) AND search @@ q
ORDER BY 2 DESC, id LIMIT %(limit)s
"""


def keyword_scored(
    store: Store, query: str, source_ids: list[int], limit: int = CANDIDATES
) -> list[tuple[int, float]]:
    """(chunk id, BM25 score) best first; OR semantics, then word beginnings as a fallback.

    Natural questions rarely match every word, so any query word finds a chunk, and
    BM25's idf makes the rare words of the question count more than the common ones.
    At most KNOWLEDGE_BM25_MAX_CANDIDATES chunks are scored (see knowledge.core.bm25);
    when the rarer terms' chunks cannot fill `limit`, chunks holding only the common
    terms are added, again within the budget.
    """
    if not or_query(query) or not source_ids:
        return []
    params: dict[str, Any] = {
        "config": store.language,
        "words": " ".join(query_words(query)),
        "store": store.pk,
        "sources": source_ids,
        "limit": limit,
        "k1": float(settings.KNOWLEDGE_BM25_K1),
        "b": float(settings.KNOWLEDGE_BM25_B),
    }
    with connection.cursor() as cursor:
        cursor.execute(_TERMS, params)
        stats = cursor.fetchall()
        if stats:
            rows = _bm25(cursor, params, stats)
        else:
            rows = []
            prefixes = or_query(query, prefix=True, min_length=4)
            if prefixes:
                cursor.execute(_PREFIX, {**params, "query": prefixes})
                rows = [(chunk_id, float(score)) for chunk_id, score in cursor.fetchall()]
    return rows


def _bm25(
    cursor: Any, params: dict[str, Any], stats: list[tuple[str, int, int, int]]
) -> list[tuple[int, float]]:
    chunks = max(int(stats[0][2]), 1)
    terms = [bm25.Term(term, int(df), bm25.idf(chunks, int(df))) for term, df, _, _ in stats]
    budget = int(settings.KNOWLEDGE_BM25_MAX_CANDIDATES)
    plan = bm25.plan(terms, budget)
    params = {
        **params,
        "terms": [term.lexeme for term in terms],
        "idfs": [term.idf for term in terms],
        "avgdl": max(int(stats[0][3]), 1) / chunks,
        "budget": budget,
    }

    def score(candidates: list[bm25.Term], cap: bool) -> list[tuple[int, float]]:
        sql = _SCORE.replace("{cap}", "LIMIT %(budget)s" if cap else "")
        cursor.execute(sql, {**params, "candidates": bm25.tsquery(candidates)})
        return [(chunk_id, float(value)) for chunk_id, value in cursor.fetchall()]

    rows = score(plan.essential, plan.capped)
    if len(rows) < params["limit"] and plan.rest and not plan.capped:
        # Too few chunks hold a rarer term: fill from the chunks of the common ones.
        found = dict(rows)
        found.update(score(plan.rest, True))
        rows = sorted(found.items(), key=lambda row: (-row[1], row[0]))[: params["limit"]]
    return rows


def keyword_ranking(
    store: Store, query: str, source_ids: list[int], limit: int = CANDIDATES
) -> list[int]:
    return [chunk_id for chunk_id, _ in keyword_scored(store, query, source_ids, limit)]


@dataclass(frozen=True)
class Ranking:
    ids: list[int]
    semantic: bool  # False when no vectors were searched (keyword-only or embedder down)
    similarity: dict[int, float] = field(default_factory=dict)  # for vector hits
    keyword: dict[int, float] = field(default_factory=dict)  # BM25 scores of keyword hits


def rank(
    store: Store,
    query: str,
    *,
    mode: str = "hybrid",
    limit: int = CANDIDATES,
    weights: tuple[float, float] | None = None,
    method: str | None = None,
) -> Ranking:
    """Chunk ids best first: hybrid, vector-only or keyword-only.

    Hybrid fuses the two lists with the fusion settings (or `weights` = (keyword,
    vector) and `method` given by the caller, e.g. the benchmark choosing them).
    """
    source_ids, chunk_counts = _enabled_sources(store)
    lists: list[tuple[list[tuple[int, float]], float]] = []
    keyword_weight, vector_weight = weights or (
        settings.KNOWLEDGE_FUSION_KEYWORD_WEIGHT,
        settings.KNOWLEDGE_FUSION_VECTOR_WEIGHT,
    )
    similarity: dict[int, float] = {}
    try:
        embedder = store_embedder(store, for_query=True) if mode in ("hybrid", "vector") else None
    except EmbeddingUnavailable:
        embedder = None
    if embedder is not None:
        try:
            release_db_connection()
            vector = embedder.embed_query(query)
        except EmbeddingUnavailable:
            # The embeddings server is down: answer from keywords rather than not at all.
            logger.warning("Embedding the query failed for store %s; keyword search only", store.pk)
            embedder = None
        else:
            try:
                nearest = (
                    qdrant.vector_scored(store, vector, source_ids, limit)
                    if store.in_qdrant
                    else vector_scored(store, vector, source_ids, limit, chunk_counts=chunk_counts)
                )
            except qdrant.QdrantUnavailable:
                logger.warning("Qdrant did not answer for store %s; keyword search only", store.pk)
                embedder = None
            else:
                scored = above_floor(nearest, embedder.model_name)
                similarity = dict(scored)
                lists.append((scored, vector_weight))
    keyword: dict[int, float] = {}
    if mode in ("hybrid", "keyword") or embedder is None:
        keyword_hits = keyword_scored(store, query, source_ids, limit)
        keyword = dict(keyword_hits)
        lists.append((keyword_hits, keyword_weight))
    if len(lists) == 1:  # one list keeps its own order, whatever its weight
        ids = [chunk_id for chunk_id, _ in lists[0][0]]
    else:
        ids = fusion.fuse_weighted(
            lists, method=method or settings.KNOWLEDGE_FUSION, k=settings.KNOWLEDGE_RRF_K
        )
    return Ranking(
        ids[:limit], semantic=embedder is not None, similarity=similarity, keyword=keyword
    )


def bounds() -> blocks.Bounds:
    return blocks.Bounds(
        max_excerpts=settings.KNOWLEDGE_MAX_EXCERPTS,
        max_per_source=settings.KNOWLEDGE_MAX_EXCERPTS_PER_SOURCE,
        max_tokens=settings.KNOWLEDGE_MAX_RETRIEVED_TOKENS,
        max_context_share=settings.KNOWLEDGE_MAX_CONTEXT_SHARE_PERCENT / 100,
    )


def retrieve(
    stores: list[Store],
    query: str,
    *,
    context_window: int,
    autonomous: bool = False,
    mask: bool = True,
) -> Retrieval:
    """The bounded block for a prompt; autonomous runs only see stores that opted in.

    mask=False only for a model that runs on this machine (its excerpts go verbatim)."""
    usable = [store for store in stores if store.autonomous_opt_in or not autonomous]
    results = [rank(store, query) for store in usable]
    rankings = [result.ids for result in results]
    similarity = {k: v for result in results for k, v in result.similarity.items()}
    keyword = {k: v for result in results for k, v in result.keyword.items()}
    ordered = fusion.fuse(rankings) if len(rankings) > 1 else (rankings[0] if rankings else [])
    # Only what an excerpt shows: the embedding and the tsvector are the bulk of a row.
    rows = Chunk.objects.filter(pk__in=ordered).values_list(
        "pk", "source_id", "store_id", "document__path", "page", "text"
    )
    by_id = {row[0]: row for row in rows}
    candidates = [
        blocks.Candidate(
            source_id=by_id[i][1],
            store_id=by_id[i][2],
            path=by_id[i][3],
            page=by_id[i][4],
            text=by_id[i][5],
            score=round(similarity.get(i, 0.0), 3),
            chunk_id=i,
            keyword_score=round(keyword.get(i, 0.0), 2),
        )
        for i in ordered
        if i in by_id
    ]
    excerpts = blocks.select(candidates, context_window=context_window, bounds=bounds(), mask=mask)
    return Retrieval(
        block=blocks.render(excerpts, mask=mask),
        excerpts=excerpts,
        semantic=bool(results) and all(result.semantic for result in results),
    )


__all__ = ["Ranking", "Retrieval", "rank", "retrieve"]
