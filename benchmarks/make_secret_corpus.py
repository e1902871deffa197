"""Write the secret guard's second labelled set: tests/host/core/data/secret_corpus.jsonl.

`python -m benchmarks.make_secret_corpus` rewrites it (fixed seed; the negatives depend on the
packages installed in the venv, so the committed file is the reference).

Unlike `make_secret_cases` (templates written next to the rules), the negatives here are
text nobody on this project wrote: lines and short passages harvested from the installed
packages' documentation (METADATA descriptions, .md/.rst/.txt files, docstrings) and the
German msgstrs of Django's locale files. The positives are random values from several
generators (human passwords, passphrases, random strings, provider-like tokens, PINs)
pasted into the shapes people use in notes: Markdown labels, tables, a label above its
value, lists, code fences, YAML/TOML/INI/.env/JSON and prose, in English and German.

A third kind of negative puts what the documentation says (phrases, inline code) into the
positives' shapes: `**Password**: see the settings`, `| Token | None |`.

Each row is `{"text", "label", "family", "source", "part"}`. `part` is "tune" or "held":
one third of the *sources* (a package, a locale file, a template) is held out, so a
held-out case never shares its source with a case the rules were tuned on.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
import string
import sysconfig
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks.make_secret_cases import PROVIDERS

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "host" / "core" / "data" / "secret_corpus.jsonl"
SITE = Path(sysconfig.get_paths()["purelib"])  # the venv the builder runs in

rng = random.Random(20261201)
ALNUM = string.ascii_letters + string.digits


def part_of(source: str) -> str:
    """A third of the sources, chosen by a hash of the source name, is held out."""
    return "held" if int(hashlib.sha256(source.encode()).hexdigest(), 16) % 3 == 2 else "tune"


# ---------------------------------------------------------------- negatives: harvested
# Lines that words people use for secrets appear in: the "secret-looking" negatives.
CUE = re.compile(
    r"(?i)pass|secret|token|key|pin\b|credential|auth|login|kennwort|zugang|schl\u00fcssel|"
    r"geheim|anmeld"
)
# Documentation examples that assign a literal credential (`password="hunter2"`): a memory
# guard should refuse those too, so they are neither positive nor negative here.
EXAMPLE_CREDENTIAL = re.compile(
    r"""(?i)(?:pass(?:word|wd)?|secret|token|api[_-]?key)["']?\s*[:=]\s*["'][^"'$<{%\s]{4,}["']"""
)
RST_RULE = re.compile(r"^[=\-~^*#+`'\".:_]{3,}$")
MAX_FILE = 300_000


def _usable(line: str) -> bool:
    if not 12 <= len(line) <= 240 or RST_RULE.match(line):
        return False
    letters = sum(c.isalpha() for c in line)
    return letters >= 0.35 * len(line) and not EXAMPLE_CREDENTIAL.search(line)


# The detectors compared with ours ship their own word lists and test strings.
SKIPPED = ("credsweeper", "detect_secrets")


def _doc_files() -> Iterator[tuple[str, Path]]:
    """(source, file) for every documentation text of every installed distribution."""
    for dist in sorted(SITE.glob("*.dist-info")):
        source = dist.name.split("-")[0].lower()
        if (dist / "METADATA").is_file() and source not in SKIPPED:
            yield source, dist / "METADATA"
    for path in sorted(SITE.rglob("*")):
        if path.suffix.lower() not in (".md", ".rst", ".txt") or not path.is_file():
            continue
        relative = path.relative_to(SITE)
        if relative.parts[0].endswith(".dist-info") or relative.parts[0] in SKIPPED:
            continue
        if path.name.lower() in (
            "top_level.txt",
            "entry_points.txt",
            "record.txt",
            "requires.txt",
            "sources.txt",
            "dependency_links.txt",
        ):
            continue
        if path.stat().st_size <= MAX_FILE:
            yield relative.parts[0].split(".")[0].lower(), path


def _metadata_body(text: str) -> str:
    head, _, body = text.partition("\n\n")
    return body if head.startswith("Metadata-Version") else text


def _po_messages(path: Path) -> list[str]:
    """The German msgstrs of a .po file, joined over their continuation lines."""
    messages: list[str] = []
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("msgstr"):
            current = [line.split(" ", 1)[1].strip().strip('"')] if " " in line else []
        elif current is not None and line.startswith('"'):
            current.append(line.strip().strip('"'))
        else:
            if current:
                messages.append("".join(current).replace("\\n", " ").replace('\\"', '"'))
            current = None
    if current:
        messages.append("".join(current))
    return [m for m in messages if m]


def _docstring_lines(path: Path) -> list[str]:
    """The lines of a module's docstrings (module, classes, functions)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return []
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                lines += [line.strip() for line in doc.splitlines()]
    return lines


def docstrings(files_per_package: int = 30) -> dict[str, list[str]]:
    """Per package, the usable docstring lines of a sample of its modules (no tests)."""
    by_package: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(SITE.glob("*/**/*.py")):
        top = path.relative_to(SITE).parts[0]
        if top in SKIPPED or top.endswith(".dist-info") or "test" in str(path.parent):
            continue
        by_package[top.split(".")[0].lower()].append(path)
    lines: dict[str, list[str]] = {}
    for package, paths in sorted(by_package.items()):
        chosen = rng.sample(paths, min(len(paths), files_per_package))
        lines[package] = [
            line for path in chosen for line in _docstring_lines(path) if _usable(line)
        ]
    return lines


def harvest() -> dict[str, list[list[str]]]:
    """Per source, the usable passages: single lines, and (for docs) a few 2-3 line windows."""
    by_source: dict[str, list[list[str]]] = defaultdict(list)
    for source, path in _doc_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.name == "METADATA":
            text = _metadata_body(text)
        lines = [line.rstrip() for line in text.splitlines()]
        for index, line in enumerate(lines):
            stripped = line.strip()
            if not _usable(stripped):
                continue
            by_source[source].append([stripped])
            # A cue line with what follows it: where a label-above-value rule could misfire.
            if CUE.search(stripped):
                window = [w for w in lines[index : index + 4] if w.strip()][:3]
                if len(window) >= 2 and all(not EXAMPLE_CREDENTIAL.search(w) for w in window):
                    by_source[source].append(window)
    for po in sorted(SITE.glob("django/**/locale/de/LC_MESSAGES/*.po")):
        app = po.parts[po.parts.index("locale") - 1]
        for message in _po_messages(po):
            if 6 <= len(message) <= 240:
                by_source[f"django-po-{app}"].append([message])
    return by_source


def negatives(per_source_cue: int = 20, per_source_plain: int = 8) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    for package, lines in docstrings().items():
        unique = sorted({line for line in lines if line not in seen})
        seen.update(unique)
        cue = [t for t in unique if CUE.search(t)]
        plain = [t for t in unique if not CUE.search(t)]
        for chosen, family in (
            (rng.sample(cue, min(len(cue), per_source_cue)), "secret_looking_docstring"),
            (rng.sample(plain, min(len(plain), per_source_plain // 2)), "plain_docstring"),
        ):
            rows += [_row(text, "benign", family, "docs:" + package) for text in chosen]
    for source, passages in sorted(harvest().items()):
        unique = []
        for passage in passages:
            text = "\n".join(passage)
            if text not in seen:
                seen.add(text)
                unique.append(text)
        cue = [t for t in unique if CUE.search(t)]
        plain = [t for t in unique if not CUE.search(t)]
        german = source.startswith("django-po")
        scale = 4 if german else 1  # few German sources: take more of each
        for chosen, family in (
            (rng.sample(cue, min(len(cue), scale * per_source_cue)), "secret_looking"),
            (rng.sample(plain, min(len(plain), scale * per_source_plain)), "plain"),
        ):
            for text in chosen:
                family_name = family + ("_de" if german else "")
                rows.append(_row(text, "benign", family_name, "docs:" + source))
    return rows


# ---------------------------------------------------------------- positives: generated
EN_WORDS = [
    "river",
    "candle",
    "orbit",
    "pepper",
    "walnut",
    "glacier",
    "meadow",
    "rocket",
    "velvet",
    "lantern",
    "harbor",
    "copper",
    "tundra",
    "maple",
    "falcon",
    "willow",
    "sparrow",
    "quartz",
    "ember",
    "cobalt",
    "thistle",
    "biscuit",
    "cactus",
    "nebula",
    "pirate",
    "violet",
    "summit",
    "raven",
    "tiger",
    "ocean",
    "lemon",
    "basil",
]
DE_WORDS = [
    "Sonne",
    "Regen",
    "Katze",
    "Hund",
    "Apfel",
    "Birne",
    "Wolke",
    "Berg",
    "Fluss",
    "Tanne",
    "Kaffee",
    "Brezel",
    "Fahrrad",
    "Tulpe",
    "Schnee",
    "Sommer",
    "Winter",
    "Garten",
    "Igel",
    "Eule",
    "Stern",
    "Mond",
    "Nebel",
    "Wiese",
    "Ahorn",
    "Schloss",
    "Hafen",
    "Kerze",
]
SYMBOLS = "!#$%&*?@+-_."


def human_password() -> str:
    word = rng.choice(EN_WORDS + DE_WORDS)
    word = word.capitalize() if rng.random() < 0.6 else word.lower()
    year = str(rng.choice([rng.randint(1960, 2026), rng.randint(1, 999)]))
    tail = rng.choice(["", rng.choice(SYMBOLS), rng.choice(SYMBOLS) + rand(2, ALNUM)])
    return word + year + tail


def passphrase() -> str:
    words = rng.sample(EN_WORDS + DE_WORDS, rng.randint(3, 5))
    sep = rng.choice(["-", ".", "_", "+"])
    words = [w.capitalize() if rng.random() < 0.5 else w.lower() for w in words]
    return sep.join(words) + (sep + str(rng.randint(1, 99)) if rng.random() < 0.6 else "")


def rand(n: int, alphabet: str = ALNUM) -> str:
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def random_string() -> str:
    alphabet = rng.choice([ALNUM, ALNUM + "!#%&*?@-_", string.ascii_lowercase + string.digits])
    return rand(rng.randint(8, 40), alphabet)


def provider_token() -> str:
    """Half from the known formats, half in shapes of providers no rule names."""
    if rng.random() < 0.5:
        return rng.choice(PROVIDERS)()
    prefix = rng.choice(["tok_", "live_", "pk_", "api-", "key_", "sess_", "atk-", "bot"])
    return prefix + rand(rng.randint(20, 44), ALNUM + rng.choice(["", "_-"]))


def pin() -> str:
    return "".join(rng.choice(string.digits) for _ in range(rng.choice([4, 4, 5, 6, 8])))


GENERATORS: dict[str, Callable[[], str]] = {
    "human": human_password,
    "passphrase": passphrase,
    "random": random_string,
    "provider": provider_token,
}

EN_LABELS = [
    "Password",
    "password",
    "Passwort",
    "PW",
    "pass",
    "Passcode",
    "API key",
    "API token",
    "Token",
    "Secret",
    "Access token",
    "WiFi password",
    "wifi password",
    "Master password",
    "Login password",
    "Admin password",
    "Router password",
]
DE_LABELS = [
    "Passwort",
    "Kennwort",
    "Zugangsdaten",
    "Geheimnis",
    "Schl\u00fcssel",
    "API-Schl\u00fcssel",
    "Token",
    "WLAN-Passwort",
    "WLAN-Schl\u00fcssel",
    "Passwort f\u00fcrs NAS",
    "Kennwort Router",
    "Zugangscode",
    "Netzwerkschl\u00fcssel",
]
PIN_LABELS = ["PIN", "Pin", "SIM-PIN", "Karten-PIN", "PIN code", "Geheimzahl", "Door code"]
SERVICES = ["NAS", "Router", "Gmail", "Netflix", "Bank", "Synology", "Fritz!Box", "Jira", "VPN"]
USERS = ["anna", "admin", "max.m", "root", "j.schmidt", "family"]

# Each template: (name, language, text with {label} {value} {service} {user}).
TEMPLATES: list[tuple[str, str, str]] = [
    ("md_bold_colon_out", "any", "**{label}**: {value}"),
    ("md_bold_colon_in", "any", "**{label}:** {value}"),
    ("md_italic_colon_in", "any", "*{label}:* {value}"),
    ("md_italic_out", "any", "_{label}_: {value}"),
    ("md_bold_list", "any", "- **{label}:** {value}"),
    ("md_bold_code", "any", "**{label}**: `{value}`"),
    ("md_list", "any", "- {label}: {value}"),
    ("md_list_star", "any", "* {label} = {value}"),
    ("md_list_numbered", "any", "3. {label}: {value}"),
    ("md_quote", "any", "> {label}: {value}"),
    ("md_dunder_key", "any", "__{key}__ = {value}"),
    ("md_service_bold", "any", "- {service}: **{label}** {value}"),
    ("table_row", "any", "| {label} | {value} |"),
    ("table_row_code", "any", "| {service} {label} | `{value}` |"),
    ("table_row_three", "any", "| {service} | {label} | {value} |"),
    (
        "table_header_en",
        "en",
        "| Service | User | Password |\n|---|---|---|\n| {service} | {user} | {value} |",
    ),
    (
        "table_header_de",
        "de",
        "| Dienst | Benutzer | Passwort |\n| --- | --- | --- |\n| {service} | {user} | {value} |",
    ),
    ("table_header_two", "any", "| Service | {label} |\n|:--|:--|\n| {service} | {value} |"),
    (
        "table_header_rows",
        "en",
        "| Account | Token |\n|---|---|\n| staging | {other} |\n| {service} | {value} |",
    ),
    ("adjacent_colon", "any", "{label}:\n{value}"),
    ("adjacent_plain", "any", "{label}\n{value}"),
    ("adjacent_bold", "any", "**{label}**\n\n{value}"),
    ("adjacent_heading", "any", "### {label}\n{value}"),
    ("adjacent_heading_blank", "any", "## {service} {label}\n\n`{value}`"),
    ("adjacent_fence", "any", "{label}:\n```\n{value}\n```"),
    ("fence_env", "en", "```env\n{KEY}={value}\n```"),
    ("fence_shell", "en", "```bash\nexport {KEY}='{value}'\n```"),
    ("yaml_nested", "en", "database:\n  host: db.local\n  {key}: {value}"),
    ("yaml_quoted", "en", '{key}: "{value}"'),
    ("toml", "en", '[service]\n{key} = "{value}"'),
    ("ini", "en", "[smtp]\n{key}={value}"),
    ("dotenv", "en", "{KEY}={value}"),
    ("json", "en", '{{"user": "{user}", "{key}": "{value}"}}'),
    ("json_line", "en", '  "{key}": "{value}",'),
    ("prose_en_is", "en", "The {label_low} for the {service} is {value}"),
    ("prose_en_my", "en", "my {label_low} is {value} (don't forget)"),
    ("prose_en_set", "en", "I set the {service} {label_low} to {value} yesterday"),
    ("prose_en_use", "en", "use {value} as the {label_low} for {service}"),
    ("prose_en_login", "en", "login for {service}: {user} / {value}"),
    ("prose_de_lautet", "de", "Das {label} f\u00fcr {service} lautet {value}"),
    ("prose_de_ist", "de", "Mein {label} ist {value}"),
    ("prose_de_neu", "de", "Neues {label} vom {service}: {value}"),
    ("prose_de_zugang", "de", "Zugang {service}: {user} / {value}"),
    ("prose_de_gesetzt", "de", "{label} f\u00fcr {service} auf {value} gesetzt"),
]
PIN_TEMPLATES: list[tuple[str, str]] = [
    ("pin_bold", "**{label}**: {value}"),
    ("pin_table", "| {service} | {label} | {value} |"),
    ("pin_adjacent", "{label}:\n{value}"),
    ("pin_list", "- {label} {service}: {value}"),
    ("pin_prose_en", "The {label} for the {service} is {value}"),
    ("pin_prose_de", "Die {label} f\u00fcr {service} ist {value}"),
]

KEYS = [
    "password",
    "db_password",
    "api_key",
    "token",
    "secret",
    "passwort",
    "smtp_pass",
    "auth_token",
]


def _fill(template: str, label: str, value: str) -> str:
    key = rng.choice(KEYS)
    return template.format(
        label=label,
        label_low=label.lower() if not label.isupper() else label,
        value=value,
        service=rng.choice(SERVICES),
        user=rng.choice(USERS),
        key=key,
        KEY=key.upper(),
        other=rand(24),
    )


def positives(per_template: int = 28) -> list[dict[str, str]]:
    rows = []
    for name, language, template in TEMPLATES:
        labels = {"en": EN_LABELS, "de": DE_LABELS, "any": EN_LABELS + DE_LABELS}[language]
        for _ in range(per_template):
            kind = rng.choice(list(GENERATORS))
            label = rng.choice(labels)
            text = _fill(template, label, GENERATORS[kind]())
            rows.append(_row(text, "secret", f"{name.split('_')[0]}_{kind}", "tpl:" + name))
    for name, template in PIN_TEMPLATES:
        for _ in range(per_template // 2):
            text = _fill(template, rng.choice(PIN_LABELS), pin())
            rows.append(_row(text, "secret", "pin", "tpl:" + name))
    return rows


# ---------------------------------------------------------------- negatives in secret shapes
INLINE_CODE = re.compile(r"``?([^`\n]{2,40})``?")
# An inline code span that could itself be a credential is left out.
RANDOMISH = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9+/=_\-!#$%&*?@]{6,}$")
WORD = re.compile(r"[^\s]+")


def _harvested_values(passages: list[list[str]]) -> tuple[list[str], list[str]]:
    """What follows a label in documentation that is not a secret: short phrases of its
    sentences, and its inline code (`settings.SECRET_KEY`, `None`, `~/.netrc`)."""
    phrases, code = [], []
    for passage in passages:
        line = passage[0]
        code += [
            span.strip()
            for span in INLINE_CODE.findall(line)
            if not RANDOMISH.match(span.strip())
            and not span.strip().isdigit()  # a number after a PIN label is one
            and not EXAMPLE_CREDENTIAL.search(span)
        ]
        words = WORD.findall(line)
        if len(words) >= 3:
            start = rng.randrange(len(words) - 1)
            phrase = " ".join(words[start : start + rng.randint(2, 6)]).strip(".,;:")
            if len(phrase.split()) >= 2:
                phrases.append(phrase)
    return phrases, code


# Shapes whose value is a quoted literal (a quoted phrase may well be a passphrase) or that
# carry a second value of their own take no harvested text.
SHAPED_SKIPPED = ("{other}", '"{value}"', "'{value}'")


def shaped_negatives(per_source: int = 4) -> list[dict[str, str]]:
    """The positives' shapes (labels, tables, label above value …) holding what the
    documentation of a package says there instead of a secret."""
    rows = []
    shapes = [t for t in TEMPLATES if not any(skip in t[2] for skip in SHAPED_SKIPPED)]
    for source, passages in sorted(harvest().items()):
        phrases, code = _harvested_values(passages)
        german = source.startswith("django-po")
        templates = [t for t in shapes if t[1] in (("de", "any") if german else ("en", "any"))]
        values = phrases + code
        for value in rng.sample(values, min(len(values), (3 if german else 1) * per_source)):
            # Text in backticks is a literal: only inline code goes there.
            fitting = [t for t in templates if value in code or "`{value}`" not in t[2]]
            _name, language, template = rng.choice(fitting)
            labels = {"en": EN_LABELS, "de": DE_LABELS, "any": EN_LABELS + DE_LABELS}[language]
            text = _fill(template, rng.choice(labels), value)
            rows.append(_row(text, "benign", "secret_looking_shaped", "docs:" + source))
    return rows


def _row(text: str, label: str, family: str, source: str) -> dict[str, str]:
    return {
        "text": text,
        "label": label,
        "family": family,
        "source": source,
        "part": part_of(source),
    }


def main() -> None:
    rows = positives() + negatives() + shaped_negatives()
    rng.shuffle(rows)
    OUT.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        counts[row["label"], row["part"]] += 1
    print(f"wrote {len(rows)} cases to {OUT.relative_to(ROOT)}: {dict(counts)}")


if __name__ == "__main__":
    main()
