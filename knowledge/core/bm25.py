"""Which chunks BM25 must score: candidates from the rarest query terms, with a proof.

A term found in most chunks adds almost nothing to a BM25 score (its idf is near
zero), yet an OR query on it makes every chunk a candidate. So the candidates come
from the query's rarest terms, as many of them as fit in a budget of chunks (by the
store's document frequencies), and every candidate is scored with all the query's
terms. A chunk outside the candidates holds only the common terms, so its score is at
most the sum of their largest possible contributions, idf * (k1 + 1) (MaxScore's
bound): the ranked candidates whose score reaches that bound are exactly the store's
best, whatever the other chunks hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    lexeme: str
    df: int  # chunks of the store holding it
    idf: float


@dataclass(frozen=True)
class Plan:
    essential: list[Term]  # candidates are the chunks holding any of these
    rest: list[Term]  # scored, but never a reason to look at a chunk
    capped: bool  # even the rarest term is over the budget: only `budget` of its chunks

    def bound(self, k1: float) -> float:
        """The highest score a chunk holding none of the essential terms can have."""
        return sum(term.idf for term in self.rest) * (k1 + 1)


def idf(chunks: int, df: int) -> float:
    """Lucene's BM25 idf, never negative."""
    return math.log(1 + (chunks - df + 0.5) / (df + 0.5))


def plan(terms: list[Term], budget: int) -> Plan:
    """Rarest terms first while their chunks fit in `budget`; at least the rarest one."""
    ordered = sorted(terms, key=lambda term: (term.df, term.lexeme))
    taken, total = 0, 0
    while taken < len(ordered) and total + ordered[taken].df <= budget:
        total += ordered[taken].df
        taken += 1
    if taken == 0 and ordered:
        return Plan(ordered[:1], ordered[1:], capped=True)
    return Plan(ordered[:taken], ordered[taken:], capped=False)


def proven(scores: list[float], plan: Plan, k1: float) -> int:
    """How many of the best-first candidate scores are certainly the store's best."""
    if plan.capped:
        return 0
    bound = plan.bound(k1)
    return sum(1 for score in scores if score >= bound) if plan.rest else len(scores)


def tsquery(terms: list[Term]) -> str:
    """An OR tsquery of already-normalised lexemes (quoted: no text can change its syntax)."""
    quoted = ("'" + term.lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for term in terms)
    return " | ".join(quoted)


__all__ = ["Plan", "Term", "idf", "plan", "proven", "tsquery"]
