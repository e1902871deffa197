"""Fusing ranked lists (keyword and meaning) into one order: collections and notes share it."""

from __future__ import annotations


def fuse_weighted(
    scored: list[tuple[list[tuple[int, float]], float]], *, method: str = "rrf", k: int = 60
) -> list[int]:
    """Fuse (ranked (id, score) list, weight) pairs; ties keep first-seen order.

    "rrf": weight / (k + rank) summed over the lists. "score": each list's scores are
    min-max normalised to 0..1 and summed times the weight. An item missing from a
    list gets nothing from it. A weight of 0 silences a list (its items still count
    from the others).
    """
    if method not in ("rrf", "score"):
        raise ValueError(f"unknown fusion method {method!r}")
    totals: dict[int, float] = {}
    order: dict[int, int] = {}
    for ranking, weight in scored:
        if not ranking:
            continue
        low = min(score for _, score in ranking)
        high = max(score for _, score in ranking)
        for rank, (item, score) in enumerate(ranking, start=1):
            if method == "rrf":
                part = 1.0 / (k + rank)
            else:
                part = (score - low) / (high - low) if high > low else 1.0
            totals[item] = totals.get(item, 0.0) + weight * part
            order.setdefault(item, len(order))
    return sorted(totals, key=lambda item: (-totals[item], order[item]))


def fuse(rankings: list[list[int]], *, k: int = 60) -> list[int]:
    """Reciprocal rank fusion of ranked id lists; ties keep first-seen order."""
    scores: dict[int, float] = {}
    order: dict[int, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            order.setdefault(item, len(order))
    return sorted(scores, key=lambda item: (-scores[item], order[item]))
