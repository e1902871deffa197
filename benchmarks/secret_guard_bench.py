"""Secret guard (M11) quality and speed against the labelled set, ours next to PyPI detectors.

`python -m benchmarks.secret_guard_bench` prints the table; `make bench` writes it into
docs/benchmarks.md. The PyPI detectors (detect-secrets, CredSweeper) are optional: install
them with `pip install -e '.[bench]'`; a missing one is reported and skipped.
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from host.core.secret_guard import find_secret

DATA = Path(__file__).resolve().parent.parent / "tests" / "host" / "core" / "data"
CASES = DATA / "secret_cases.jsonl"
# Written by hand after the rules, in other words than the templates; see docs/benchmarks.md.
FRESH = DATA / "secret_cases_fresh.jsonl"
# Negatives harvested from installed packages' docs, positives pasted into note shapes:
# written by `python -m benchmarks.make_secret_corpus`, held out by source.
CORPUS = DATA / "secret_corpus.jsonl"

KNOWN = ("known_format",)
ASSIGNMENTS_AND_PROSE = (
    "assignment",
    "url_credentials",
    "sql",
    "cli_flag",
    "makefile",
    "env_fallback",
    "auth_header",
    "labelled_token",
    "prose",
    "prose_de",
)
HARDENED = ("obfuscated", "split")
GOALS = {"known formats": 0.97, "assignments and prose": 0.90, "obfuscated and split": 0.90}
MAX_FALSE_REFUSALS = 0.02
MIN_LINES_PER_SECOND = 5000


@dataclass(frozen=True)
class Case:
    index: int
    text: str
    label: str
    family: str
    part: str = ""  # "tune" or "held" in the second set, split by source

    @property
    def held_out(self) -> bool:
        return self.part == "held" if self.part else self.index % 3 == 2

    @property
    def fresh(self) -> bool:
        return FRESH_OFFSET <= self.index < CORPUS_OFFSET

    @property
    def corpus(self) -> bool:
        return self.index >= CORPUS_OFFSET


def load_cases(path: Path = CASES, *, offset: int = 0) -> list[Case]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [
        Case(offset + i, row["text"], row["label"], row["family"], row.get("part", ""))
        for i, row in enumerate(rows)
    ]


FRESH_OFFSET = 100_000
CORPUS_OFFSET = 200_000
# The second set's groups: a family's first word is its shape (md_human → md).
CORPUS_GROUPS = {
    "Markdown: labels, lists, tables, label above value": ("md", "table", "adjacent", "pin"),
    "config: fences, YAML, TOML, INI, .env, JSON": (
        "fence",
        "yaml",
        "toml",
        "ini",
        "dotenv",
        "json",
    ),
    "prose, English and German": ("prose",),
}
CORPUS_GOALS = {"recall": 0.93, "false refusals": 0.05, "plain lines": 0.01}
Detector = Callable[[list[str]], list[bool]]


@dataclass
class Result:
    name: str
    flagged: dict[int, bool] = field(default_factory=dict)
    lines_per_second: float = 0.0
    notes_lines_per_second: float = 0.0
    note: str = ""


def ordinary_notes(count: int = 2000) -> list[str]:
    """What memory files mostly hold: index lines, short facts, prose, the odd fence."""
    shapes = [
        "- tea {i}: prefers green tea in the morning -> tea.md",
        "Anna likes hiking in the Alps; last trip was in 2024 (note {i}).",
        "<!-- memory:entry id={i:08x} origin=assistant sha256="
        + "ab" * 32
        + " created=2026-01-01 source=chat -->",
        "Der Termin beim Zahnarzt ist am Dienstag um 9 Uhr, Raum {i}.",
        "- project {i}: the deploy runs on Fridays, see https://example.org/runbook -> deploy.md",
        "Reset the router if the wifi drops again; the password is on the fridge.",
        "<!-- /memory:entry -->",
        "Uses Python 3.12, Django 6 and PostgreSQL 16 for project {i}.",
    ]
    return [shapes[i % len(shapes)].format(i=i) for i in range(count)]


def ours(texts: list[str]) -> list[bool]:
    return [find_secret(text) is not None for text in texts]


def _detect_secrets() -> Detector:
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings

    def run(texts: list[str]) -> list[bool]:
        with default_settings():
            return [
                any(
                    True
                    for _ in _process_line_based_plugins(
                        lines=list(enumerate(text.split("\n"), start=1)), filename="memory.md"
                    )
                )
                for text in texts
            ]

    return run


def _credsweeper(ml: bool) -> Detector:
    logging.getLogger("credsweeper").setLevel(logging.ERROR)
    from credsweeper.app import CredSweeper
    from credsweeper.common.constants import ThresholdPreset
    from credsweeper.file_handler.string_content_provider import StringContentProvider

    def run(texts: list[str]) -> list[bool]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # A threshold of 0 switches the ML filter off.
            sweeper = CredSweeper(ml_threshold=ThresholdPreset.medium if ml else 0)
            candidates = []
            for i, text in enumerate(texts):
                provider = StringContentProvider(lines=text.split("\n"), file_path=f"case{i}.md")
                candidates.extend(sweeper.file_scan(provider))
            sweeper.credential_manager.set_credentials(candidates)
            sweeper.post_processing(None)
            found = {c.line_data_list[0].path for c in sweeper.credential_manager.get_credentials()}
        return [f"case{i}.md" in found for i in range(len(texts))]

    return run


def detectors() -> list[tuple[str, Callable[[], Detector]]]:
    return [
        ("ours (host.core.secret_guard)", lambda: ours),
        ("detect-secrets 1.5.0, all plugins, default filters", _detect_secrets),
        ("CredSweeper, rules only (ML off)", lambda: _credsweeper(ml=False)),
        ("CredSweeper, rules + ML (medium)", lambda: _credsweeper(ml=True)),
    ]


def measure(name: str, make: Callable[[], Detector], cases: list[Case]) -> Result:
    try:
        detector = make()
    except ImportError as error:
        return Result(name, note=f"not installed ({error.name})")
    texts = [case.text for case in cases]
    lines = sum(text.count("\n") + 1 for text in texts)
    flags = detector(texts)
    result = Result(name, dict(zip((c.index for c in cases), flags, strict=True)))
    # The machine is shared: the best of a few rounds is the figure least disturbed by others.
    result.lines_per_second = lines / best_time(lambda: detector(texts))
    notes = ordinary_notes()
    blocks = ["\n".join(notes[i : i + 40]) for i in range(0, len(notes), 40)]
    result.notes_lines_per_second = len(notes) / best_time(lambda: detector(blocks))
    return result


def best_time(work: Callable[[], object], rounds: int = 5, budget: float = 20.0) -> float:
    best = float("inf")
    spent = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        elapsed = time.perf_counter() - start
        best, spent = min(best, elapsed), spent + elapsed
        if spent > budget:
            break
    return best


def rate(result: Result, cases: Iterable[Case]) -> tuple[float, int]:
    chosen = list(cases)
    if not chosen:
        return float("nan"), 0
    return sum(result.flagged[c.index] for c in chosen) / len(chosen), len(chosen)


def groups(cases: list[Case]) -> dict[str, list[Case]]:
    secret = [c for c in cases if c.label == "secret"]
    return {
        "known formats": [c for c in secret if c.family in KNOWN],
        "assignments and prose": [c for c in secret if c.family in ASSIGNMENTS_AND_PROSE],
        "obfuscated and split": [c for c in secret if c.family in HARDENED],
        "benign look-alikes": [c for c in cases if c.label == "benign"],
    }


def pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value * 100:.1f}%"


def corpus_groups(cases: list[Case]) -> dict[str, list[Case]]:
    secret = [c for c in cases if c.label == "secret"]
    benign = [c for c in cases if c.label == "benign"]
    out = {
        name: [c for c in secret if c.family.split("_")[0] in shapes]
        for name, shapes in CORPUS_GROUPS.items()
    }
    out["all secrets (recall)"] = secret
    out["non-secrets that mention a secret word"] = [
        c for c in benign if c.family.startswith("secret_looking")
    ]
    out["… of them in the secrets' shapes"] = [
        c for c in benign if c.family == "secret_looking_shaped"
    ]
    out["plain lines"] = [c for c in benign if c.family.startswith("plain")]
    out["all non-secrets (false refusals)"] = benign
    return out


def corpus_report(results: list[Result], every: list[Case]) -> list[str]:
    cases = [c for c in every if c.corpus]
    if not cases:
        return []
    measured = [r for r in results if r.flagged]
    names = " | ".join(r.name for r in measured)
    bar = "|".join("---" for _ in measured)
    families = len({c.family for c in cases})
    out = [
        "",
        "### Second labelled set: harvested non-secrets, secrets in note shapes",
        "",
        f"`tests/host/core/data/secret_corpus.jsonl`, {len(cases)} cases from "
        "`python -m benchmarks.make_secret_corpus` (fixed seed). Non-secrets are text this "
        "project did not write: lines and 2-3 line passages from the installed packages' "
        "READMEs, METADATA, .md/.rst/.txt docs and docstrings, the German msgstrs of "
        "Django's locale files, and the positives' shapes holding phrases and inline code "
        "of those docs instead of a secret (`**Password**: see the settings`, "
        "`| Token | None |`). Secrets are random values from five generators (human passwords, "
        "passphrases, random strings, provider-like tokens, PINs) in Markdown, config and "
        f"prose shapes, English and German ({families} families). A third of the sources "
        "(a package, a locale file, a template) is held out; the rules were tuned on the "
        "other two thirds only. Goals on the held-out part: recall "
        f"≥ {CORPUS_GOALS['recall']:.0%}, false refusals ≤ {CORPUS_GOALS['false refusals']:.0%}, "
        f"plain lines ≤ {CORPUS_GOALS['plain lines']:.0%}.",
        "",
        f"| group | part | {names} |",
        f"|---|---|{bar}|",
    ]
    for part, chosen in (
        ("held out", [c for c in cases if c.held_out]),
        ("tuning", [c for c in cases if not c.held_out]),
    ):
        for group, members in corpus_groups(chosen).items():
            if members:
                cells = " | ".join(
                    f"{pct(rate(r, members)[0])} of {len(members)}" for r in measured
                )
                out.append(f"| {group} | {part} | {cells} |")
    out += ["", "Recall per value generator, both parts:", ""]
    out += [f"| generator | n | {names} |", f"|---|---|{bar}|"]
    secret = [c for c in cases if c.label == "secret"]
    for generator in ("human", "passphrase", "random", "provider", "pin"):
        members = [c for c in secret if c.family.split("_")[-1] == generator]
        cells = " | ".join(pct(rate(r, members)[0]) for r in measured)
        out.append(f"| {generator} | {len(members)} | {cells} |")
    return out


def report(results: list[Result], every: list[Case], machine: str) -> str:
    cases = [c for c in every if not c.fresh and not c.corpus]
    fresh = [c for c in every if c.fresh]
    tune = [c for c in cases if not c.held_out]
    held = [c for c in cases if c.held_out]
    measured = [r for r in results if r.flagged]
    names = " | ".join(r.name for r in measured)
    bar = "|".join("---" for _ in measured)
    n_secret = sum(c.label == "secret" for c in cases)
    out = [
        "## Secret guard (M11): recall and false refusals",
        "",
        "Command: `python -m benchmarks.secret_guard_bench --write` (also run by `make bench`; without `--write` it only prints). "
        f"Machine: {machine}. Measured {time.strftime('%Y-%m-%d')}, load average "
        f"{os.getloadavg()[0]:.1f} (a shared machine: speeds are the best of five rounds).",
        "",
        f"Labelled set: `tests/host/core/data/secret_cases.jsonl`, {len(cases)} cases "
        f"({n_secret} secrets, {len(cases) - n_secret} benign look-alikes), written for this "
        "project by `python -m benchmarks.make_secret_cases`. The rules were tuned on the "
        "lines with index % 3 != 2; every third line (index % 3 == 2) is held out. "
        "Secrets: share caught (recall); benign: share refused (false refusals). "
        f"The hand-written set (`secret_cases_fresh.jsonl`, {len(fresh)} cases) was written "
        "after the rules, in words the templates do not use, as a check on over-fitting.",
        "",
        f"| group (goal) | part | {names} |",
        f"|---|---|{bar}|",
    ]
    goals = {**{k: f"≥ {v:.0%}" for k, v in GOALS.items()}, "benign look-alikes": "≤ 2%"}
    for part, chosen in (
        ("held out", held),
        ("tuning", tune),
        ("all", cases),
        ("hand-written set", fresh),
    ):
        for group, members in groups(chosen).items():
            if not members:
                continue
            cells = " | ".join(f"{pct(rate(r, members)[0])} of {len(members)}" for r in measured)
            out.append(f"| {group} ({goals[group]}) | {part} | {cells} |")
    speed = " | ".join(f"{r.lines_per_second:,.0f}" for r in measured)
    out.append(f"| lines per second (≥ {MIN_LINES_PER_SECOND:,}) | all three sets | {speed} |")
    notes_speed = " | ".join(f"{r.notes_lines_per_second:,.0f}" for r in measured)
    out.append(
        f"| lines per second (≥ {MIN_LINES_PER_SECOND:,}) | 2,000 ordinary note lines "
        f"| {notes_speed} |"
    )
    out += ["", "Per family, all cases (held-out share in brackets):", ""]
    out += [f"| family | label | n | {names} |", f"|---|---|---|{bar}|"]
    families = sorted({(c.label, c.family) for c in cases}, key=lambda k: (k[0] != "secret", k))
    for label, family in families:
        members = [c for c in cases if c.family == family and c.label == label]
        held_members = [c for c in members if c.held_out]
        cells = " | ".join(
            f"{pct(rate(r, members)[0])} ({pct(rate(r, held_members)[0])})" for r in measured
        )
        out.append(f"| {family} | {label} | {len(members)} | {cells} |")
    out += corpus_report(results, every)
    skipped = [r for r in results if not r.flagged]
    if skipped:
        out += ["", *(f"- {r.name}: {r.note}" for r in skipped)]
    return "\n".join(out) + "\n"


def machine_line() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def run_all(only_ours: bool = False) -> tuple[list[Result], list[Case]]:
    cases = (
        load_cases()
        + load_cases(FRESH, offset=FRESH_OFFSET)
        + load_cases(CORPUS, offset=CORPUS_OFFSET)
    )
    chosen = detectors()[:1] if only_ours else detectors()
    return [measure(name, make, cases) for name, make in chosen], cases


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    results, cases = run_all()
    body = report(results, cases, machine) + DECISION
    write_section("secret-guard", body)
    return body


DECISION = """
**Decision (issue 9, item 10): extend our own rules; no PyPI detector as a dependency.**
Measured above on the same cases: detect-secrets 1.5.0 finds about a third of the
known-format tokens and almost none of the assignments, flags or prose in note shapes;
CredSweeper 1.19's rules find about 70% of known formats and about half of the assignments,
almost no prose (English or German), and refuse about 12% of look-alikes (nearly every
UUID); its ML pass brings false refusals down to about 6% but costs recall and runs at
300 to 1,400 lines/s on these sets (load-dependent), far below the goal. On the second
set neither comes near on Markdown or prose shapes; CredSweeper's rules match ours only
on config files (YAML, TOML, INI, .env, JSON), and its ML pass beats no rule of ours on
recall in any family there. It and detect-secrets do refuse fewer of the non-secrets in
the secrets' shapes (about 2% and 1% held out, ours 8%), but only because they find
almost none of the secrets in those shapes either. Both pull in large dependency trees (CredSweeper: pandas, lxml,
openpyxl, ONNX models), and neither normalises look-alike letters or handles German
labels. So the guard stays one pure module (`host/core/secret_guard.py`,
word lists in `secret_words.py`) with its own rules; the two detectors are only in the
optional `bench` extra, to re-run this comparison.

Limits of these figures. The first set and the rules were written by the same person:
on a large labelled corpus this team has not seen (issue 23) the same guard found 82% of
secrets and refused 19.5% of non-secrets, while this set says 100% and 0%. It shows that
the rules hold on new values, not on new phrasings. The second set is the better check:
its non-secrets were written by others, and its held-out third shares no package, locale
file or template with the part the rules were tuned on. Before the issue 23 work the guard
caught 69.7% of the held-out secrets and refused 2.4% of the held-out
non-secrets (14.3% of the label-shaped ones). Its last kind of negative (the positives'
shapes holding harvested doc text) was added after the Markdown rules and measured on the
held-out part once before any rule was tuned on it: 17.8% of those were refused (2.9% of
all held-out non-secrets); tuning on the other two thirds brought the held-out part to
the figures above. Still, the positives come from our own generators and templates, and
the harvested documentation holds fewer hard look-alikes than notes people write
(detect-secrets and CredSweeper also refuse far less here than on the issue's corpus), so
expect more false refusals on real notes than the second set shows, most of them a single
word or name right after a password label ("Passwort: Bitwarden"), which the guard reads as
the password.
"""


def main() -> None:
    """`--ours`: our guard only (quick); `--write`: also update docs/benchmarks.md."""
    import sys

    if "--write" in sys.argv:
        from benchmarks.results import write_section

        print(run(write_section, machine_line()))
        return
    results, cases = run_all(only_ours="--ours" in sys.argv)
    print(report(results, cases, machine_line()))


if __name__ == "__main__":
    main()
