"""The candidate plan of BM25 keyword search: rarest terms within a budget, with a bound."""

from __future__ import annotations

import pytest

from knowledge.core import bm25


def _terms(**dfs: int) -> list[bm25.Term]:
    return [bm25.Term(name, df, bm25.idf(1000, df)) for name, df in dfs.items()]


def test_candidates_come_from_the_rarest_terms_within_the_budget():
    plan = bm25.plan(_terms(common=990, rare=5, middle=300, scarce=40), budget=400)
    assert [t.lexeme for t in plan.essential] == ["rare", "scarce", "middle"]
    assert sum(t.df for t in plan.essential) <= 400
    assert [t.lexeme for t in plan.rest] == ["common"]
    assert not plan.capped


def test_when_every_term_is_over_the_budget_the_rarest_is_taken_capped():
    plan = bm25.plan(_terms(speaker=980, said=700), budget=100)
    assert [t.lexeme for t in plan.essential] == ["said"]
    assert plan.capped
    assert bm25.proven([9.0, 8.0], plan, k1=1.2) == 0  # a capped scan proves nothing


def test_only_scores_above_the_rest_terms_bound_are_proven():
    plan = bm25.plan(_terms(rare=5, common=990), budget=100)
    bound = plan.bound(k1=1.2)
    assert bound == pytest.approx(bm25.idf(1000, 990) * 2.2)
    assert bm25.proven([bound + 1, bound, bound - 0.01], plan, k1=1.2) == 2
    everything = bm25.plan(_terms(rare=5, other=20), budget=100)
    assert bm25.proven([0.1, 0.05], everything, k1=1.2) == 2  # every match was scored


def test_idf_is_never_negative_and_falls_with_frequency():
    assert bm25.idf(100, 100) > 0
    assert bm25.idf(100, 1) > bm25.idf(100, 50) > bm25.idf(100, 99)


def test_the_tsquery_quotes_each_lexeme():
    terms = [bm25.Term("it's", 1, 1.0), bm25.Term("a\\b", 1, 1.0)]
    assert bm25.tsquery(terms) == "'it''s' | 'a\\\\b'"
