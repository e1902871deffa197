from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

import pytest

from benchmarks import secret_guard_bench as bench
from host.core.secret_guard import (
    MASK,
    MASK_CACHE_MAX_CHARS,
    find_in_line,
    find_in_name,
    find_secret,
    mask_outbound,
)
from host.secret_text import secret_refusal
from memory_addon.core.entries import render_entry
from memory_addon.core.paths import PathRefused, normalize_path

CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "secret_cases.jsonl").read_text().splitlines()
]
# Written by hand after the rules, in words the generated templates do not use.
FRESH = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "secret_cases_fresh.jsonl")
    .read_text()
    .splitlines()
]
# The families grouped as the goals name them, shared with the benchmark.
KNOWN, ASSIGNMENTS_AND_PROSE, HARDENED = (
    frozenset(group) for group in (bench.KNOWN, bench.ASSIGNMENTS_AND_PROSE, bench.HARDENED)
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("key: AKIAQ3EGT7PLX2M4VNRD", "known token format"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "known token format"),
        ("use ghp_R8kq2LmZ0vX4tYp7Wn3bQe9Hc5Jd1Fs6Ga2K", "known token format"),
        ("db_password=hunter22", "password assignment"),
        ('API_KEY: "s3cr3t-value"', "password assignment"),
        ("the password is swordfish", "password in prose"),
        ("Das Passwort ist Geheim123", "password in prose"),
        ("aZ3k9Qx7Lm2Pq8Rt5Vw1Yb4Nc6Hd0Jf2Gs", "random-looking string"),
    ],
)
def test_each_kind_is_found_with_its_line(text, kind):
    finding = find_secret(f"first line\n{text}\nlast line")
    assert finding is not None
    assert (finding.line, finding.kind) == (2, kind)
    assert text.split()[-1] not in secret_refusal(finding)


@pytest.mark.parametrize(
    "text",
    [
        "lives in Rome -> home.md",
        "password: ${DB_PASSWORD}",
        "token: <your token>",
        "The password policy is strict",
        "see https://github.com/snap-research/locomo/blob/main/README.md",
        "deployment my-very-long-identifier-name-for-a-kubernetes-deployment-2024",
        # Documentation placeholders inside provider formats.
        "key: AKIAIOSFODNN7EXAMPLE",
        "use ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    ],
)
def test_ordinary_text_is_not_a_secret(text):
    assert find_secret(text) is None


# ------------------------------------------------------------------ fences (issue 9, item 7)
def _fence(**extra: str) -> str:
    block = render_entry(
        "- home: lives in Rome -> home.md",
        entry_id="3fa9c1d2",
        origin="assistant",
        created="2026-01-01",
        source="chat",
    )
    return block


def test_fence_hashes_are_not_flagged():
    fence = (
        "<!-- memory:entry id=ab origin=assistant sha256="
        + "a1" * 32
        + " created=2026-01-01 source=chat -->"
    )
    assert find_secret(fence) is None
    assert find_secret(_fence()) is None


@pytest.mark.parametrize(
    "line",
    [
        # A token hidden as an extra attribute: not one of ours, so it is scanned.
        "<!-- memory:entry id=3fa9c1d2 token=ghp_R8kq2LmZ0vX4tYp7Wn3bQe9Hc5Jd1Fs6Ga2K -->",
        # Text after a valid fence.
        "<!-- memory:entry id=3fa9c1d2 origin=assistant sha256="
        + "ab" * 32
        + " created=2026-01-01 source=chat --> db_password=hunter22",
        # Not a valid fence at all: the whole line is content.
        "<!-- memory:entry the password is swordfish",
        "<!-- memory:entry id=zz sha256=AKIAQ3EGT7PLX2M4VNRD -->",
        "  <!-- memory:entry origin=assistant note=sk-proj-Zq3x8Lp2Wm7Rt4Yv9Nb1Kc6Hd0Jf5Gs2A -->",
    ],
)
def test_fence_looking_lines_are_scanned_for_everything_but_our_attributes(line):
    finding = find_secret(f"intro\n{line}\n- home: Rome -> home.md\n<!-- /memory:entry -->")
    assert finding is not None and finding.line == 2


def test_masking_covers_fence_lines_but_keeps_our_attributes():
    fence = (
        "<!-- memory:entry id=3fa9c1d2 origin=assistant "
        "token=ghp_R8kq2LmZ0vX4tYp7Wn3bQe9Hc5Jd1Fs6Ga2K -->"
    )
    masked = mask_outbound(fence)
    assert "ghp_R8kq" not in masked
    assert masked.startswith("<!-- memory:entry id=3fa9c1d2 origin=assistant ")
    assert mask_outbound(_fence()) == _fence()


# ------------------------------------------------------------------ the labelled set
def _rates(members: list[dict[str, str]]) -> float:
    return sum(find_secret(case["text"]) is not None for case in members) / len(members)


def _group(part: str, families: set[str] | None, label: str) -> list[dict[str, str]]:
    chosen = [
        case
        for index, case in enumerate(CASES)
        if part == "all" or (index % 3 == 2) == (part == "held out")
    ]
    return [
        case
        for case in chosen
        if case["label"] == label and (families is None or case["family"] in families)
    ]


def test_labelled_set_is_large_enough_and_covers_every_family():
    secrets = [case for case in CASES if case["label"] == "secret"]
    benign = [case for case in CASES if case["label"] == "benign"]
    assert len(secrets) >= 300 and len(benign) >= 300
    families = {case["family"] for case in CASES}
    assert families >= KNOWN | ASSIGNMENTS_AND_PROSE | HARDENED
    assert {
        "placeholder",
        "git_commit",
        "digest",
        "docker_digest",
        "ssh_fingerprint",
        "public_key",
        "data_uri",
        "uuid",
        "prose_benign",
        "prose_benign_de",
    } <= families


@pytest.mark.parametrize("part", ["tuning", "held out"])
@pytest.mark.parametrize(
    ("families", "goal"),
    [(KNOWN, 0.97), (ASSIGNMENTS_AND_PROSE, 0.90), (HARDENED, 0.90)],
    ids=["known formats", "assignments and prose", "obfuscated and split"],
)
def test_recall_meets_the_goal(part, families, goal):
    assert _rates(_group(part, families, "secret")) >= goal


@pytest.mark.parametrize("part", ["tuning", "held out"])
def test_benign_look_alikes_are_rarely_refused(part):
    assert _rates(_group(part, None, "benign")) <= 0.02


@pytest.mark.parametrize(
    ("families", "goal"),
    [(KNOWN, 0.97), (ASSIGNMENTS_AND_PROSE | HARDENED, 0.90)],
    ids=["known formats", "assignments, prose, obfuscated and split"],
)
def test_hand_written_set_meets_the_recall_goal(families, goal):
    members = [case for case in FRESH if case["label"] == "secret" and case["family"] in families]
    assert _rates(members) >= goal


def test_hand_written_look_alikes_are_rarely_refused():
    assert _rates([case for case in FRESH if case["label"] == "benign"]) <= 0.02


def test_every_family_holds_its_own_bar():
    """No single family may collapse behind a good average."""
    by_family: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for case in CASES:
        by_family[case["label"], case["family"]].append(case)
    for (label, family), members in by_family.items():
        rate = _rates(members)
        if label == "secret":
            assert rate >= (0.97 if family in KNOWN else 0.90), family
        else:
            assert rate <= 0.05, family


def test_guard_scans_at_least_5000_lines_per_second():
    lines = [line for case in CASES for line in case["text"].split("\n")]
    text = "\n".join(lines)
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        for line in lines:
            find_in_line(line)
        find_secret(text)
        best = min(best, time.thread_time() - start)
    assert 2 * len(lines) / best >= 5000


# ------------------------------------------------------------------ targeted, per family
@pytest.mark.parametrize(
    "text",
    [
        "ASIAY7QK2N4PZR6T8WXL",
        "xoxb-2209817731-6674451201-Qm3Rt8ZkLp2Vx9Wn4Yb7Hc1D",
        "STRIPE=sk_live_51Hq8ZkLp2Vx9Wn4Yb7Hc1DfG3aT",
        "SG.Qm3Rt8ZkLp2Vx9Wn4Yb7Hc.1DfG3aTs6Ue0Jq5Ko8Mi2Nl4Pj7Rh9Sg1Tf3Ud5Ve7Wc9Xb",
        "glpat-Qm3Rt8ZkLp2Vx9Wn4Yb7",
        "sk-ant-api03-Qm3Rt8ZkLp2Vx9Wn4Yb7Hc1DfG3aTs6Ue0Jq5Ko8Mi2Nl4Pj7Rh9Sg1Tf3Ud5AA",
        "dop_v1_" + "3f9a2c1d4e5b6a7f" * 4,
        "581234907:AAHq8ZkLp2Vx9Wn4Yb7Hc1DfG3aTs6Ue0Jq",
        "-----BEGIN RSA PRIVATE KEY-----",
    ],
)
def test_provider_formats_are_known(text):
    assert find_in_line(text) == "known token format"


@pytest.mark.parametrize(
    "text",
    [
        '"password": "Velvet-Harbor-19"',
        "mysqlRootPassword: Granite#2231",
        "smtpPass = 'otter!Maple77'",
        "pw=Cobalt5512",
        "Passwort: Sonnenblume7",
        "Kennwort = Tulpe!2024",
        "Zugangsdaten: Apfelbaum99",
        "PIN: 4821",
        "DB_PASSWORD := Lantern88!",
        "API_TOKEN ?= a8Fk29dLq0Zx7Wm3Yt",
        'os.getenv("DB_PASSWORD", "Saffron-1234")',
        "postgres://app:Walrus-4411@db:5432/app",
        "CREATE USER app IDENTIFIED BY 'Pepper9931';",
        "ALTER ROLE app WITH PASSWORD 'Meadow#22';",
        "mysql -u root -pThunder77 shop",
        "./deploy --password Falcon!88",
        "curl --user admin:Biscuit51 https://example.org",
        "vault login --token a8Fk29dLq0Zx7Wm3Yt",
        "Authorization: Bearer a8Fk29dLq0Zx7Wm3Yt",
    ],
)
def test_assignments_in_every_shape_are_found(text):
    assert find_in_line(text) == "password assignment"


@pytest.mark.parametrize(
    "text",
    [
        "my password is hunter22",
        "Mein Passwort ist Sommer2024!",
        "Das Kennwort für den Server lautet Bergsee5",
        "use Cactus-7781 as the password",
        "login for the NAS: admin / Harbor#42",
        "the api token a8Fk29dLq0Zx7Wm3 is for staging",
        "Die PIN für die Karte ist 4711",
        "The door code is 4711#",
        "ich hab das Passwort jetzt auf Katze123 gesetzt",
        "The Netflix login is anna@example.org with password Popcorn#77",
    ],
)
def test_prose_cues_are_found(text):
    assert find_in_line(text) == "password in prose"


@pytest.mark.parametrize(
    "text",
    [
        "pass\u200bword=Velvet-Harbor-19",
        "\uff47\uff48\uff50\uff3f" + "R8kq2LmZ0vX4tYp7Wn3bQe9Hc5Jd1Fs6Ga2K",
        "\u0440\u0430ssword: Granite#2231",  # Cyrillic er and a
        "ghp_R8kq2LmZ0vX4tYp7\nWn3bQe9Hc5Jd1Fs6Ga2K",
        '"sk-proj-Zq3x8Lp2Wm7Rt4" +\n"Yv9Nb1Kc6Hd0Jf5Gs2Ae8Qw"',
    ],
)
def test_obfuscated_and_split_secrets_are_found(text):
    assert find_secret(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "the password is incorrect",
        "the token was rotated yesterday",
        "reset your password via the link",
        "Das Passwort ist abgelaufen",
        "Das Token wurde gestern rotiert",
        "commit 3f9a2c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
        "sha256:" + "3f9a2c1d4e5b6a7f" * 4,
        "FROM python@sha256:" + "3f9a2c1d4e5b6a7f" * 4,
        "ED25519 key fingerprint is SHA256:Qm3Rt8ZkLp2Vx9Wn4Yb7Hc1DfG3aTs6Ue0Jq5Ko8Mi2.",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIQm3Rt8ZkLp2Vx9Wn4Yb7Hc1DfG3aTs6Ue0Jq5Ko8Mi2 a@b",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAQm3Rt8ZkL\n"
        "-----END PUBLIC KEY-----",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAQm3Rt8ZkLp2Vx9Wn4Yb7Hc1DfG3aTs6Ue0",
        "request 9b2f4c1e-7a3d-4e5f-a1b2-c3d4e5f60718",
        "STRIPE_KEY=sk_live_" + "1" * 24,
        "OPENAI_API_KEY=sk-proj-<your-key>",
        "password = os.environ['DB_PASSWORD']",
        "docker login --password-stdin < token.txt",
    ],
)
def test_benign_look_alikes_are_not_refused(text):
    assert find_secret(text) is None


# ------------------------------------------------------------------ outbound masking
def test_outbound_masking_hides_password_values_in_prose():
    masked = mask_outbound("Note: the password is swordfish, and db_password=hunter22")
    assert "swordfish" not in masked and "hunter22" not in masked
    assert "the password is [masked]," in masked


def test_masking_the_same_block_twice_and_a_block_too_big_to_keep_both_hide_the_value():
    block = "- db: the password is swordfish -> db.md\n"
    assert mask_outbound(block) == mask_outbound(block)
    assert "swordfish" not in mask_outbound(block)
    big = block + "- filler line\n" * (MASK_CACHE_MAX_CHARS // 10)
    assert len(big) > MASK_CACHE_MAX_CHARS
    assert "swordfish" not in mask_outbound(big)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("token ghp_R8kq2LmZ0vX4tYp7Wn3bQe9Hc5Jd1Fs6Ga2K works", "R8kq2LmZ0vX4"),
        ('"password": "Velvet-Harbor-19"', "Velvet-Harbor-19"),
        ("postgres://app:Walrus-4411@db:5432/app", "Walrus-4411"),
        ("CREATE USER app IDENTIFIED BY 'Pepper9931';", "Pepper9931"),
        ("mysql -u root -pThunder77 shop", "Thunder77"),
        ("Authorization: Bearer a8Fk29dLq0Zx7Wm3Yt", "a8Fk29dLq0Zx7Wm3Yt"),
        ('os.getenv("DB_PASSWORD", "Saffron-1234")', "Saffron-1234"),
        ("Mein Passwort ist Sommer2024!", "Sommer2024"),
        ("the api token a8Fk29dLq0Zx7Wm3 is for staging", "a8Fk29dLq0Zx7Wm3"),
        ("aZ3k9Qx7Lm2Pq8Rt5Vw1Yb4Nc6Hd0Jf2Gs", "aZ3k9Qx7Lm2Pq8Rt5Vw1Yb4Nc6Hd0Jf2Gs"),
        ("pass\u200bword=Velvet-Harbor-19", "Velvet-Harbor-19"),
        ("ghp_R8kq2LmZ0vX4tYp7\nWn3bQe9Hc5Jd1Fs6Ga2K", "Wn3bQe9Hc5Jd1Fs6Ga2K"),
    ],
)
def test_outbound_masking_hides_every_kind_it_can_locate(text, secret):
    masked = mask_outbound(text)
    assert secret not in masked
    assert MASK in masked


def test_outbound_masking_hides_private_key_bodies_and_keeps_ordinary_text():
    text = (
        "- home: lives in Rome -> home.md\n-----BEGIN PRIVATE KEY-----\n"
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nQm3Rt8ZkLp2Vx9Wn4Yb7Hc1DfG3aTs6U\n"
        "-----END PRIVATE KEY-----\nthe password is incorrect"
    )
    masked = mask_outbound(text).split("\n")
    assert masked[0] == "- home: lives in Rome -> home.md"
    assert masked[2] == masked[3] == MASK
    assert masked[-1] == "the password is incorrect"


def _cpu_seconds(work) -> float:
    """This thread's CPU time per call of `work`, best of two: other processes on a busy
    machine do not count, and a fast call is repeated until the time is well above the
    clock's noise (a scan of a few milliseconds alone measured 9x its quarter under load)."""
    best = float("inf")
    for _ in range(2):
        calls = 1
        while True:
            start = time.thread_time()
            for _ in range(calls):
                work()
            elapsed = time.thread_time() - start
            if elapsed >= 0.05:
                break
            calls *= 2
        best = min(best, elapsed / calls)
    return best


# A sixteenth, not a quarter: linear is then about 16 and quadratic about 256, so the
# bound between them (64) leaves room for a busy machine's 2x noise either way (a
# quarter's 4 against 16 measured 9.9 for a linear scan on a loaded CI machine).
LINEAR_BOUND = 64


def _growth(scan, line: str, parts: int = 16) -> float:
    """How much longer a scan of `line` takes than a scan of its first sixteenth: about
    16 when the scan is linear, about 256 when it backtracks quadratically."""
    part = line[: len(line) // parts]
    return _cpu_seconds(lambda: scan(line)) / max(_cpu_seconds(lambda: scan(part)), 1e-6)


def test_masking_ordinary_text_grows_linearly_with_its_lines():
    text = "\n".join(f"- topic {i}: an ordinary note about tea -> t{i}.md" for i in range(4000))
    assert mask_outbound(text) == text
    # A quarter: a smaller text would come from the mask cache.
    assert _growth(mask_outbound, text, parts=4) < 9


@pytest.mark.parametrize(
    "line",
    [
        "key=" * 16000,
        " ".join(["password", "token", "is", "key", "the", "pin"] * 1800),
        "the password for the " * 3000,
        "Qm3Rt8Zk+Lp2Vx9Wn4/Yb7Hc1DfG3aTs6Ue0" * 1800,
        "a" * 64000 + " x",
        "mysql -x " * 7000,
        "https://a:b@" * 5000,
        "| password | x1 " * 4000,
        "**Passwort**: *x " * 4000,
    ],
    ids=[
        "assignments",
        "labels",
        "prose",
        "base64",
        "one-word",
        "commands",
        "urls",
        "table",
        "emphasis",
    ],
)
def test_a_64_kib_line_is_scanned_in_linear_time(line):
    """A topic file may hold one 64 KiB line; no pattern may backtrack quadratically on it."""

    def scan(text: str) -> None:
        find_secret(text)
        mask_outbound(text)

    assert _growth(scan, line) < LINEAR_BOUND


ORDINARY_NOTES = """
- coffee: takes it black, no sugar -> coffee.md
Keynote at 10am, pinned in Slack
Token budget for the model: 8000
He passed the exam with 92%
The secret to good bread: 72% hydration
key: Eb minor
auth: oauth2
tokenizer: cl100k_base
git push --force-with-lease
docker run --env-file .env app
ssh -i ~/.ssh/id_ed25519 anna@host
psql -h localhost -U postgres -d app
Passwort-Manager: Bitwarden
Password: at least 12 chars
docker run -p 5432:5432 postgres
password_reset_url: https://example.org/reset
Kennwort: siehe Zettel
login: anna
The API token is stored in 1Password under "Stripe"
Use the --token flag to pass a token
api_key: str = Field(...)
password: Optional[str] = None
credentials: ~/.aws/credentials
auth_token: "{{ vault_token }}"
- wifi: guest network is open, no password -> home.md
pwd: /home/anna/projects
the zip code is 80331
token = TOKEN_PREFIX + secrets.token_urlsafe(32)
def api_token_revoke(*, token: ApiToken) -> None:
<form method="post">{% csrf_token %}<button type="submit">Sign out</button></form>
credentials: "same-origin",
"detect-secrets==1.5.0",
DATABASE_URL: postgres://memory:${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}@db:5432/memory
credentials = data_dir / "admin-credentials.txt"
secret_banners=banners,
error code is 4041
""".strip().split("\n")


@pytest.mark.parametrize("text", ORDINARY_NOTES)
def test_ordinary_notes_that_mention_secrets_are_not_refused(text):
    assert find_secret(text) is None


def test_a_known_token_inside_a_public_key_block_is_still_found():
    text = "-----BEGIN PUBLIC KEY-----\nAKIAQ3EGT7PLX2M4VNRD\n-----END PUBLIC KEY-----"
    finding = find_secret(text)
    assert finding is not None and finding.line == 2
    assert "AKIAQ3EGT7PLX2M4VNRD" not in mask_outbound(text)


def test_masking_a_json_tool_output_keeps_it_valid_json():
    payload = json.dumps(
        {
            "path": "db.md",
            "sha256": "ab" * 32,
            "content": 'db "password=\\"Lantern88!\\"" and token: a8Fk29dLq0Zx7Wm3Yt\n'
            "the password is swordfish\nok",
        }
    )
    masked = json.loads(mask_outbound(payload))
    assert masked["sha256"] == "ab" * 32
    for secret in ("Lantern88", "a8Fk29dLq0Zx7Wm3Yt", "swordfish"):
        assert secret not in masked["content"]
    assert masked["content"].endswith("the password is [masked]\nok")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("WLAN-Passwort:\nSommer2024!", "Sommer2024"),
        ("my bank PIN is\n4711", "4711"),
        ("api key =\n  a8Fk29dLq0Zx7Wm3Yt", "a8Fk29dLq0Zx7Wm3Yt"),
    ],
)
def test_a_value_on_the_line_below_its_label_is_found_and_masked(text, secret):
    finding = find_secret(text)
    assert finding is not None and finding.line == 2
    assert secret not in mask_outbound(text)


@pytest.mark.parametrize(
    "text", ["Password:\n- at least 12 characters", "token:\n  ${TOKEN}", "PIN:\nsee the letter"]
)
def test_a_label_line_followed_by_prose_is_not_a_secret(text):
    assert find_secret(text) is None


# ------------------------------------------------------------------ Markdown and note shapes
@pytest.mark.parametrize(
    ("text", "line", "secret"),
    [
        # Emphasised labels.
        ("**Password**: Sommer2024!xQ", 1, "Sommer2024!xQ"),
        ("**Passwort:** Sommer2024!xQ", 1, "Sommer2024!xQ"),
        ("*Passwort:* Sommer2024!xQ", 1, "Sommer2024!xQ"),
        ("_Kennwort_: Tulpe!2024x", 1, "Tulpe!2024x"),
        ("__token__ = a8Fk29dLq0Zx7Wm3Yt", 1, "a8Fk29dLq0Zx7Wm3Yt"),
        ("- **API-Schlüssel:** Qm3Rt8ZkLp2Vx9Wn", 1, "Qm3Rt8ZkLp2Vx9Wn"),
        ("**Zugangsdaten**: `Bergsee-77!`", 1, "Bergsee-77!"),
        ("**Geheimnis:** Ahorn.Velvet.Quartz", 1, "Ahorn.Velvet.Quartz"),
        ("**Schlüssel**: `Tulpe917x`", 1, "Tulpe917x"),
        ("**PIN**: 4711", 1, "4711"),
        # Lists and quotes.
        ("- password: Sommer2024!xQ", 1, "Sommer2024!xQ"),
        ("* Passwort = Sommer2024!xQ", 1, "Sommer2024!xQ"),
        ("3. Token: sess_npbgYPPrRV66hfDx4Oqw", 1, "sess_npbgYPPrRV66hfDx4Oqw"),
        ("> Kennwort: Sommer2024!xQ", 1, "Sommer2024!xQ"),
        ("- PIN Sparkasse: 4711", 1, "4711"),
        ("- Passwort fürs NAS: Sommer2024!xQ", 1, "Sommer2024!xQ"),
        # Tables: a cell naming the secret and the value next to it, or a header above.
        ("| wifi password | Sommer2024!xQ |", 1, "Sommer2024!xQ"),
        ("| WLAN-Passwort | `Sommer2024!xQ` |", 1, "Sommer2024!xQ"),
        ("| NAS | PIN | 118625 |", 1, "118625"),
        ("| Service | Password |\n|---|---|\n| Netflix | Sommer2024!xQ |", 3, "Sommer2024!xQ"),
        (
            "| Dienst | Benutzer | Passwort |\n| --- | --- | --- |\n| Bank | anna | Tulpe!2024x |",
            3,
            "Tulpe!2024x",
        ),
        (
            "| Account | Token |\n|:--|:--|\n| staging | see vault |\n| prod | a8Fk29dLq0Zx7Wm3 |",
            4,
            "a8Fk29dLq0Zx7Wm3",
        ),
        # A label alone on its line, the value on the next line with text.
        ("Passwort\nSommer2024!xQ", 2, "Sommer2024!xQ"),
        ("Topic: router\nPasswort\n\nSommer2024!xQ", 4, "Sommer2024!xQ"),
        ("**WLAN-Passwort**\n\nSommer2024!xQ", 3, "Sommer2024!xQ"),
        ("### API key\npepper2016+9l", 2, "pepper2016+9l"),
        ("## NAS Zugangsdaten\n\n`violet267!`", 3, "violet267!"),
        ("Kennwort:\n```\nSommer2024!xQ\n```", 3, "Sommer2024!xQ"),
        ("Door code\n4711", 2, "4711"),
        # Code fences and config files.
        ("```env\nDB_PASSWORD=Sommer2024!xQ\n```", 2, "Sommer2024!xQ"),
        ("```bash\nexport API_TOKEN='a8Fk29dLq0Zx7Wm3'\n```", 2, "a8Fk29dLq0Zx7Wm3"),
        ("database:\n  host: db.local\n  password: Sommer2024!xQ", 3, "Sommer2024!xQ"),
        ('[service]\napi_key = "a8Fk29dLq0Zx7Wm3"', 2, "a8Fk29dLq0Zx7Wm3"),
        ("[smtp]\nsmtp_pass=Sommer2024!xQ", 2, "Sommer2024!xQ"),
        ('{"user": "anna", "api_key": "a8Fk29dLq0Zx7Wm3"}', 1, "a8Fk29dLq0Zx7Wm3"),
        # Prose, English and German.
        ("The password for the Fritz!Box is walnut1986", 1, "walnut1986"),
        ("Mein Netzwerkschlüssel ist Ahorn1966x", 1, "Ahorn1966x"),
        ("Die PIN code für Jira ist 87252", 1, "87252"),
        ("Passwort für Gmail auf Tulpe!2024x gesetzt", 1, "Tulpe!2024x"),
        ("use wcd23kv1jf66ru2l34hr2b8q as the api key for Synology", 1, "wcd23kv1jf66ru2l34hr2b8q"),
    ],
)
def test_secrets_in_markdown_config_and_prose_shapes_are_found_on_the_values_line(
    text, line, secret
):
    finding = find_secret(text)
    assert finding is not None and finding.line == line, finding
    assert secret not in mask_outbound(text)


@pytest.mark.parametrize(
    "text",
    [
        "| Password policy | at least 12 characters |",
        "| Passwort | siehe Passwort-Manager |",
        "| Token | Description |\n|---|---|\n| `access_token` | The token the API returns |",
        "| Name | Type | Default |\n|---|---|---|\n| password | `str` | `None` |",
        "| Service | Password |\n|---|---|\n| Netflix | in Bitwarden |",
        "Passwort vergessen? Link auf der Anmeldeseite",
        "**Password**: see the vault",
        "**Passwort:** steht im Passwort-Manager",
        "**Token**\n\nThe token expires after an hour.",
        "### API key\nRotate it every 90 days.",
        "Passwort\n\n- mindestens 12 Zeichen",
        "Kennwort:\n```\n${ROUTER_PASSWORD}\n```",
        "## Tokens\nmy-project-tokens",
        "- password: `os.environ['DB_PASSWORD']`",
        "The API token is stored in 1Password; ask Anna for access.",
        "Tokens are rotated monthly and never written down.",
        "Set a password on this sheet.",
        "Returns True if this token is within the group.",
        "password: Flag to say if the field should obfuscate its content.",
        "- Door code: ask the caretaker",
        "| Key | Value |\n|---|---|\n| timeout | 30 |",
        "Der Schlüssel liegt beim Nachbarn.",
        "PIN-Brief kam heute an, Karte folgt",
    ],
)
def test_markdown_and_prose_look_alikes_are_not_refused(text):
    assert find_secret(text) is None


# ------------------------------------------------------------------ file and folder names
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ghp_R8kq2LmZ0vX4tYp7Wn3bQe9Hc5Jd1Fs6Ga2K.md", "known token format"),
        ("sk-proj-Zq3x8Lp2Wm7Rt4Yv9Nb1Kc6Hd0Jf5Gs2Ae8Qw.md", "known token format"),
        ("password-Sommer2024xQ.md", "password assignment"),
        ("passwort_Tulpe2024x.md", "password assignment"),
        ("wlan-passwort Sommer2024xQ.md", "password assignment"),
        ("token-abc123def456", "password assignment"),
        ("pin-4711.md", "password assignment"),
        ("aZ3k9Qx7Lm2Pq8Rt5Vw1Yb4Nc6Hd0Jf2Gs", "random-looking string"),
    ],
)
def test_names_holding_a_secret_are_found(name, kind):
    assert find_in_name(name) == kind


@pytest.mark.parametrize(
    "name",
    [
        "wifi-password.md",
        "password-policy.md",
        "password-reset-2024.md",
        "passwords.md",
        "token-budget-2024.md",
        "api-key-rotation-v2.md",
        "pin-2024.md",
        "secret-santa-2025.md",
        "my-secret-recipe-2.md",
        "Passwort-Manager.md",
        "notes-2024-10-01.md",
    ],
)
def test_names_that_only_mention_a_secret_pass(name):
    assert find_in_name(name) is None


def test_a_secret_path_is_refused_naming_the_kind_but_not_the_value():
    with pytest.raises(PathRefused) as refused:
        normalize_path("notes/password-Sommer2024xQ.md")
    assert "Sommer2024xQ" not in str(refused.value)
    assert refused.value.values == {"kind": "password assignment"}
    with pytest.raises(PathRefused) as refused:
        normalize_path("ghp_R8kq2LmZ0vX4tYp7Wn3bQe9Hc5Jd1Fs6Ga2K/notes.md")
    assert "R8kq2LmZ0vX4" not in str(refused.value)


# ------------------------------------------------------------------ the second set
CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "secret_corpus.jsonl").read_text().splitlines()
]


def _corpus(part: str, label: str, family_start: str = "") -> list[dict[str, str]]:
    return [
        case
        for case in CORPUS
        if case["part"] == part
        and case["label"] == label
        and case["family"].startswith(family_start)
    ]


def test_second_set_holds_out_whole_sources():
    parts: dict[str, set[str]] = defaultdict(set)
    for case in CORPUS:
        parts[case["source"]].add(case["part"])
    assert all(len(found) == 1 for found in parts.values())
    held = {source for source, found in parts.items() if found == {"held"}}
    assert len(held) >= 50 and len(_corpus("held", "secret")) >= 300


# The figures reached on the held-out part (docs/benchmarks.md), with a little room: a
# change that loses recall or refuses more ordinary text fails here.
@pytest.mark.parametrize(
    ("part", "recall", "refused", "refused_secret_looking", "refused_plain"),
    [("held", 0.975, 0.02, 0.03, 0.005), ("tune", 0.99, 0.015, 0.02, 0.002)],
)
def test_second_set_meets_the_floor(part, recall, refused, refused_secret_looking, refused_plain):
    assert _rates(_corpus(part, "secret")) >= recall
    assert _rates(_corpus(part, "benign")) <= refused
    assert _rates(_corpus(part, "benign", "secret_looking")) <= refused_secret_looking
    assert _rates(_corpus(part, "benign", "plain")) <= refused_plain
