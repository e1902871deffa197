"""BM25 keyword ranking inside PostgreSQL (B3): whole-store statistics, idf, length, stemming."""

from __future__ import annotations

import math

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from knowledge import services
from knowledge.models import Chunk, Document, KeywordStats, KeywordTerm, Source
from knowledge.retrieval import keyword_ranking, keyword_scored, rank

pytestmark = pytest.mark.django_db
FILLER = [
    "the",
    "meeting",
    "notes",
    "mention",
    "lunch",
    "plans",
    "weather",
    "travel",
    "budget",
    "colours",
    "music",
    "garden",
    "coffee",
    "holiday",
    "schedule",
    "printer",
    "kitchen",
    "parking",
    "window",
]


def _store(user, name="kw", language="english"):
    return services.store_create(owner=user, name=name, provider="none", language=language)


def _add(store, texts, *, path="/data/a"):
    source = Source.objects.create(store=store, kind=Source.Kind.FOLDER, path=path)
    document = Document.objects.create(
        source=source, path="doc.txt", sha256="x", format="text", size=1
    )
    chunks = Chunk.objects.bulk_create(
        Chunk(document=document, store=store, source=source, ordinal=i, text=t, token_count=1)
        for i, t in enumerate(texts)
    )
    return source, [chunk.pk for chunk in chunks]


def _filler(count: int, offset: int = 0) -> str:
    return " ".join(FILLER[(offset + i) % len(FILLER)] for i in range(count))


def test_a_rare_term_outranks_a_common_one(user):
    store = _store(user)
    texts = [f"server {_filler(8, i)}" for i in range(20)]
    texts += ["server server server " + _filler(8), "kerberos " + _filler(8, 3)]
    source, ids = _add(store, texts)
    found = keyword_ranking(store, "server kerberos", [source.pk])
    assert found[0] == ids[-1]  # the only kerberos chunk, though it says server not once
    assert found[1] == ids[-2]  # then the chunk that repeats the common word


def test_a_long_document_does_not_win_by_length_alone(user):
    store = _store(user)
    short = "postgres backup steps"
    long = "postgres " + _filler(300) + " backup " + _filler(300, 5)
    source, (short_id, long_id) = _add(store, [short, long])
    assert keyword_ranking(store, "postgres backup", [source.pk]) == [short_id, long_id]


def test_stemming_matches_word_forms(user):
    store = _store(user)
    source, (hit, _) = _add(store, ["The workers were running the indexes nightly", "unrelated"])
    assert keyword_ranking(store, "run index", [source.pk]) == [hit]


def test_a_german_collection_stems_german_words(user):
    german = _store(user, "de", language="german")
    english = _store(user, "en")
    text = "Die Häuser am See wurden im Sommer gebaut"
    de_source, (de_hit,) = _add(german, [text], path="/de")
    en_source, _ = _add(english, [text], path="/en")
    assert keyword_ranking(german, "Haus", [de_source.pk]) == [de_hit]
    assert keyword_ranking(english, "Haus", [en_source.pk]) == []  # no German stemming there
    assert Chunk.objects.get(pk=de_hit).language == "german"


def test_a_natural_question_matches_any_of_its_words(user):
    store = _store(user)
    source, (hit, _) = _add(store, ["Nightly backup runs at two", "Lunch is at noon"])
    assert keyword_ranking(store, "How can I restore my backup from yesterday?", [source.pk]) == [
        hit
    ]


def test_word_beginnings_are_the_fallback_when_no_whole_word_matches(user):
    store = _store(user)
    source, (hit, _) = _add(store, ["Read the configuration before starting", "Lunch at noon"])
    assert keyword_ranking(store, "config", [source.pk]) == [hit]


def _reference_bm25(store, query_terms, k1=1.2, b=0.75):
    """BM25 computed here from the chunks' lexemes, over every chunk of the store."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, u.lexeme, coalesce(array_length(u.positions, 1), 1) "
            "FROM knowledge_chunk c, unnest(c.search) u WHERE c.store_id = %s",
            [store.pk],
        )
        rows = cursor.fetchall()
    tf: dict[int, dict[str, int]] = {}
    for chunk_id, lexeme, count in rows:
        tf.setdefault(chunk_id, {})[lexeme] = count
    n = len(tf)
    avgdl = sum(sum(terms.values()) for terms in tf.values()) / n
    scores = {}
    for chunk_id, terms in tf.items():
        length = sum(terms.values())
        score = 0.0
        for term in query_terms:
            if term not in terms:
                continue
            df = sum(1 for other in tf.values() if term in other)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            f = terms[term]
            score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * length / avgdl))
        if score:
            scores[chunk_id] = score
    return scores


def test_scores_use_whole_store_statistics_even_when_a_source_is_filtered(user):
    store = _store(user)
    _first, _ = _add(
        store, [f"alpaca wool {_filler(5, i)}" for i in range(6)] + ["llama"], path="/a"
    )
    second, second_ids = _add(
        store, ["alpaca " + _filler(20), "wool wool llama " + _filler(4)], path="/b"
    )
    expected = _reference_bm25(store, ["alpaca", "wool", "llama"])
    scored = dict(keyword_scored(store, "alpaca wool llama", [second.pk]))
    assert set(scored) == set(second_ids)
    for chunk_id, score in scored.items():
        assert score == pytest.approx(expected[chunk_id], rel=1e-9)


def _recomputed(store):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT u.lexeme, count(*) FROM knowledge_chunk c, unnest(c.search) u "
            "WHERE c.store_id = %s GROUP BY 1",
            [store.pk],
        )
        return dict(cursor.fetchall())


def test_statistics_follow_every_insert_and_delete_in_the_same_transaction(user):
    store = _store(user)
    first, _ = _add(store, ["alpaca wool", "alpaca fleece shearing"], path="/a")
    _second, _ = _add(store, ["llama wool " + _filler(10)], path="/b")
    terms = dict(KeywordTerm.objects.filter(store=store).values_list("term", "df"))
    assert terms == _recomputed(store)
    assert terms["alpaca"] == 2 and terms["wool"] == 2
    stats = KeywordStats.objects.get(store=store)
    assert stats.chunks == 3
    assert stats.tokens == sum(
        Chunk.objects.filter(store=store).values_list("search_length", flat=True)
    )
    services.source_remove(source=first)
    terms = dict(KeywordTerm.objects.filter(store=store).values_list("term", "df"))
    assert terms == _recomputed(store)
    assert "alpaca" not in terms and terms["wool"] == 1
    assert KeywordStats.objects.get(store=store).chunks == 1


def test_deleting_a_collection_deletes_its_statistics(user):
    store = _store(user)
    _add(store, ["alpaca wool"])
    services.store_delete(store=store)
    assert not KeywordTerm.objects.exists()
    assert not KeywordStats.objects.exists()


def test_keyword_only_collections_rank_by_bm25_through_rank(user):
    store = _store(user)
    _source, ids = _add(store, ["kerberos ticket", "server " + _filler(3)])
    assert rank(store, "kerberos server").ids == ids


def _reference_top(store, terms, count):
    expected = _reference_bm25(store, terms)
    return sorted(expected, key=lambda chunk_id: (-expected[chunk_id], chunk_id))[:count], expected


@override_settings(KNOWLEDGE_BM25_MAX_CANDIDATES=40)
def test_a_term_in_every_chunk_leaves_the_top_hits_right_within_the_candidate_budget(user):
    store = _store(user)
    texts = [f"server {_filler(6 + i % 5, i)}" for i in range(300)]
    texts[7] = "server kerberos ticket renewal " + _filler(4)
    texts[150] = "kerberos " + _filler(30, 2)
    texts[299] = "server server kerberos kerberos " + _filler(3, 1)
    source, ids = _add(store, texts)
    top, expected = _reference_top(store, ["server", "kerbero"], 10)  # lexemes
    with CaptureQueriesContext(connection) as queries:
        scored = keyword_scored(store, "server kerberos", [source.pk], limit=10)
    # The three kerberos chunks first, in BM25 order, then server-only chunks to fill ten.
    assert [chunk_id for chunk_id, _ in scored[:3]] == top[:3]
    assert {ids[7], ids[150], ids[299]} == set(top[:3])
    assert len(scored) == 10
    for chunk_id, score in scored:
        assert score == pytest.approx(expected[chunk_id], rel=1e-9)
    # Candidates were the kerberos chunks, then at most the budget of server ones.
    assert "LIMIT 40" in queries.captured_queries[-1]["sql"]


@override_settings(KNOWLEDGE_BM25_MAX_CANDIDATES=60)
def test_when_rare_terms_fill_the_list_the_top_hits_are_the_whole_stores(user):
    store = _store(user)
    texts = [f"server {_filler(6 + i % 7, i)}" for i in range(400)]
    for i in range(0, 400, 10):  # 40 chunks also hold the rare word, some twice
        texts[i] = f"kerberos {'kerberos ' * (i % 3)}{texts[i]}"
    source, _ = _add(store, texts)
    top, _ = _reference_top(store, ["server", "kerbero"], 10)  # lexemes
    found = keyword_ranking(store, "server kerberos", [source.pk], limit=10)
    assert found == top  # the ranked kerberos chunks outscore any chunk with only "server"
