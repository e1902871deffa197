"""Conflicts by meaning (M23): the similarity threshold, tuned on labelled note pairs.

The pairs come from LoCoMo's observations (short third-person facts its authors wrote
about each speaker, each citing the turn it came from), not from us:
- same subject: two facts about one speaker, from different turns, that are evidence
  for the same question (LoCoMo's own judgement that they are about one thing);
- different subject: two facts about one speaker whose turns are never evidence for a
  common question.
Conversations are split: two thirds tune MEMORY_CONFLICT_SIMILARITY, the held-out third
checks it. The embedder is the host's local one (the default for a person without an
embedding profile).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from itertools import combinations
from typing import Any

from benchmarks.knowledge_bench import _locomo
from memory_addon.core.conflicts import cosine

Pair = tuple[str, str, bool]


def _facts(conversation: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """dia_id → (speaker, fact) of every observation citing that turn."""
    facts: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key, value in conversation.items():
        if not key.endswith("_observation") or not isinstance(value, dict):
            continue
        for speaker, rows in value.items():
            for row in rows:
                if len(row) < 2:
                    continue
                text, cited = row[0], row[1]
                for dia_id in cited if isinstance(cited, list) else [cited]:
                    facts[str(dia_id).strip()].append((speaker, str(text)))
    return facts


def pairs_of(conversation: dict[str, Any], rng: random.Random) -> list[Pair]:
    facts = _facts(conversation)
    together: set[frozenset[str]] = set()
    positives: list[Pair] = []
    for question in conversation.get("qa", []):
        if question.get("category") not in (1, 2, 3, 4):
            continue
        cited = [d for d in question.get("evidence", []) if d in facts]
        together.update(frozenset(pair) for pair in combinations(cited, 2))
        candidates = [
            (a_text, b_text)
            for a, b in combinations(cited, 2)
            for a_speaker, a_text in facts[a]
            for b_speaker, b_text in facts[b]
            if a_speaker == b_speaker and a_text != b_text
        ]
        if candidates:
            left, right = rng.choice(candidates)
            positives.append((left, right, True))
    by_speaker: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for dia_id, rows in facts.items():
        for speaker, text in rows:
            by_speaker[speaker].append((dia_id, text))
    negatives: list[Pair] = []
    speakers = sorted(by_speaker)
    while speakers and len(negatives) < len(positives):
        pool = by_speaker[rng.choice(speakers)]
        (a, a_text), (b, b_text) = rng.sample(pool, 2)
        if a != b and frozenset((a, b)) not in together:
            negatives.append((a_text, b_text, False))
    return positives + negatives


def _scores(embedder: Any, pairs: list[Pair]) -> list[tuple[float, bool]]:
    texts = sorted({text for left, right, _ in pairs for text in (left, right)})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    return [(cosine(vectors[left], vectors[right]), label) for left, right, label in pairs]


def _figures(scored: list[tuple[float, bool]], threshold: float) -> tuple[float, float, float]:
    """Precision, recall and F0.5: a flag holds back an automatic save and asks the
    person, and a note is compared with every saved one (up to the index's 40), so a
    false flag costs more than a missed one."""
    flagged = [label for score, label in scored if score >= threshold]
    true_positives = sum(flagged)
    positives = sum(label for _, label in scored)
    precision = true_positives / len(flagged) if flagged else 0.0
    recall = true_positives / positives if positives else 0.0
    beta2 = 0.25
    denominator = beta2 * precision + recall
    f_half = (1 + beta2) * precision * recall / denominator if denominator else 0.0
    return precision, recall, f_half


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    import time

    from django.conf import settings

    from host.embeddings import FastembedEmbedder

    rng = random.Random(23)  # a reproducible sample
    tune: list[Pair] = []
    held_out: list[Pair] = []
    for number, conversation in enumerate(_locomo()):
        (held_out if number % 3 == 2 else tune).extend(pairs_of(conversation, rng))
    embedder = FastembedEmbedder(settings.EMBEDDING_MODEL)
    tune_scored, held_scored = _scores(embedder, tune), _scores(embedder, held_out)
    grid = [round(0.30 + 0.025 * step, 3) for step in range(21)]
    best = max(grid, key=lambda t: (_figures(tune_scored, t)[2], t))
    rows = "\n".join(
        f"| {t:.3f} | "
        + " | ".join(f"{value:.3f}" for value in _figures(tune_scored, t))
        + " | "
        + " | ".join(f"{value:.3f}" for value in _figures(held_scored, t))
        + " |"
        for t in grid
        if abs(t - best) <= 0.1 or t == settings.MEMORY_CONFLICT_SIMILARITY
    )
    tp, tr, tf = _figures(tune_scored, best)
    hp, hr, hf = _figures(held_scored, best)
    sp, sr, sf = _figures(held_scored, settings.MEMORY_CONFLICT_SIMILARITY)
    body = f"""## Conflicts by meaning (M23): the similarity threshold

Command: `python -m benchmarks.run conflicts`. Machine: {machine}. Measured {time.strftime("%Y-%m-%d")}. Embeddings: {settings.EMBEDDING_MODEL} (the packaged local model).

Labelled pairs from LoCoMo's observations (facts its authors wrote about each speaker, each citing its turn): *same subject* = two facts about one speaker from different turns that are evidence for one question; *different subject* = two facts about one speaker whose turns share no question. One pair per question, as many different-subject pairs, seed 23. Conversations 3, 6 and 9 (of 10) are held out; the rest tune the threshold: best F0.5 on the grid 0.300 … 0.800, precision weighted over recall because a flag holds back an automatic save and every new note is compared with each saved one.

| set | pairs (same / different subject) |
|---|---|
| tuning | {sum(p[2] for p in tune)} / {sum(not p[2] for p in tune)} |
| held out | {sum(p[2] for p in held_out)} / {sum(not p[2] for p in held_out)} |

| threshold | tuning precision | recall | F0.5 | held-out precision | recall | F0.5 |
|---|---|---|---|---|---|---|
{rows}

Best on the tuning set: **{best:.3f}** (precision {tp:.3f}, recall {tr:.3f}, F0.5 {tf:.3f}); on the held-out third {hp:.3f} / {hr:.3f} / {hf:.3f}. Setting in force for this run: MEMORY_CONFLICT_SIMILARITY={settings.MEMORY_CONFLICT_SIMILARITY} (held out: {sp:.3f} / {sr:.3f} / {sf:.3f}).

What this measures: whether two notes are about the same thing. A flagged pair only asks the person (Replace / Keep both / Discard); a missed one is saved next to the old note, as before M23. Notes with the same topic key ("home: …") are flagged without embeddings.
"""
    write_section("conflicts", body)
    return body
