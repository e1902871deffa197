"""Write the secret guard's labelled set: tests/host/core/data/secret_cases.jsonl.

`python -m benchmarks.make_secret_cases` rewrites the file; the output is stable (fixed seed).
Every case is written for this project: the templates are the kinds of lines people paste
into memory notes, and every value is drawn at random here, so no real credential and no
other project's test data is in the set. Each line is `{"text", "label", "family"}` with
label `secret` or `benign`; the guard tunes on the lines whose index % 3 != 2 and reports
the held-out third (index % 3 == 2) separately.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from pathlib import Path

OUT = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "host"
    / "core"
    / "data"
    / "secret_cases.jsonl"
)

rng = random.Random(20261129)
ALNUM = string.ascii_letters + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def rand(n: int, alphabet: str = ALNUM) -> str:
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        # Real tokens of this length nearly always mix letters and digits.
        mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
        if alphabet == HEX or n < 8 or mixed or alphabet.isdigit() or alphabet.isalpha():
            return value


WORDS = [
    "sunflower",
    "harbor",
    "velvet",
    "granite",
    "otter",
    "maple",
    "cobalt",
    "lantern",
    "saffron",
    "walrus",
    "pepper",
    "thunder",
    "meadow",
    "falcon",
    "biscuit",
    "cactus",
    "Sommer",
    "Winter",
    "Schnecke",
    "Kaffee",
    "Bergsee",
    "Fahrrad",
    "Tulpe",
    "Apfelbaum",
]
SYMBOLS = "!#$%&*?@-_+."


def password() -> str:
    """A human-made password: word, digits, sometimes a symbol, sometimes random."""
    kind = rng.random()
    if kind < 0.45:
        word = rng.choice(WORDS)
        word = word.capitalize() if rng.random() < 0.5 else word
        return (
            word + str(rng.randint(1, 9999)) + (rng.choice(SYMBOLS) if rng.random() < 0.5 else "")
        )
    if kind < 0.75:
        return rand(rng.randint(10, 18), ALNUM + "!#%&*?@-_")
    if kind < 0.9:
        word = rng.choice(WORDS)
        return (
            "".join(
                {"a": "4", "e": "3", "o": "0", "i": "1", "s": "5"}.get(c, c)
                if rng.random() < 0.5
                else c
                for c in word
            )
            + rng.choice(SYMBOLS)
            + str(rng.randint(10, 99))
        )
    return rng.choice(WORDS).lower() + rng.choice(WORDS).capitalize() + str(rng.randint(1, 99))


def token(lo: int = 16, hi: int = 31) -> str:
    return rand(rng.randint(lo, hi))


def b64url(n: int) -> str:
    return rand(n, ALNUM + "-_")


# ---------------------------------------------------------------- provider formats
PROVIDERS: list[Callable[[], str]] = [
    lambda: "AKIA" + rand(16, string.ascii_uppercase + string.digits),
    lambda: "ASIA" + rand(16, string.ascii_uppercase + string.digits),
    lambda: "ghp_" + rand(36),
    lambda: "gho_" + rand(36),
    lambda: "ghs_" + rand(36),
    lambda: "ghu_" + rand(36),
    lambda: "ghr_" + rand(36),
    lambda: "github_pat_11" + rand(20, string.ascii_uppercase + string.digits) + "_" + rand(59),
    lambda: "glpat-" + b64url(20),
    lambda: "gldt-" + b64url(20),
    lambda: "glrt-" + b64url(20),
    lambda: "sk-proj-" + b64url(rng.choice([48, 64, 100])),
    lambda: "sk-" + rand(48),
    lambda: "sk-svcacct-" + b64url(60),
    lambda: "sk-ant-api03-" + b64url(93) + "AA",
    lambda: "sk-ant-admin01-" + b64url(93) + "AA",
    lambda: "sk-or-v1-" + rand(64, HEX),
    lambda: "xoxb-" + rand(11, string.digits) + "-" + rand(12, string.digits) + "-" + rand(24),
    lambda: (
        "xoxp-"
        + rand(11, string.digits)
        + "-"
        + rand(11, string.digits)
        + "-"
        + rand(12, string.digits)
        + "-"
        + rand(32, HEX)
    ),
    lambda: (
        "xapp-1-A"
        + rand(10, string.ascii_uppercase + string.digits)
        + "-"
        + rand(13, string.digits)
        + "-"
        + rand(64, HEX)
    ),
    lambda: (
        "https://hooks.slack.com/services/T"
        + rand(8, string.ascii_uppercase + string.digits)
        + "/B"
        + rand(10, string.ascii_uppercase + string.digits)
        + "/"
        + rand(24)
    ),
    lambda: "sk_live_" + rand(rng.choice([24, 99])),
    lambda: "rk_live_" + rand(rng.choice([24, 99])),
    lambda: "sk_test_" + rand(rng.choice([24, 99])),
    lambda: "whsec_" + rand(32),
    lambda: "AIza" + b64url(35),
    lambda: "GOCSPX-" + b64url(28),
    lambda: "ya29." + b64url(rng.randint(80, 140)),
    lambda: "hf_" + rand(34, string.ascii_letters),
    lambda: "npm_" + rand(36),
    lambda: "pypi-AgEIcHlwaS5vcmc" + b64url(rng.randint(60, 150)),
    lambda: "SK" + rand(32, HEX),
    lambda: "SG." + b64url(22) + "." + b64url(43),
    lambda: "key-" + rand(32, HEX),
    lambda: rand(32, HEX) + "-us" + str(rng.randint(1, 21)),
    lambda: "shpat_" + rand(32, HEX),
    lambda: "shpss_" + rand(32, HEX),
    lambda: "shpca_" + rand(32, HEX),
    lambda: "https://discord.com/api/webhooks/" + rand(18, string.digits) + "/" + b64url(68),
    lambda: str(rng.randint(100000000, 9999999999)) + ":AA" + b64url(33),
    lambda: "dop_v1_" + rand(64, HEX),
    lambda: "dp.st." + rand(4, string.ascii_lowercase) + "." + rand(43),
    lambda: "lin_api_" + rand(40),
    lambda: "secret_" + rand(43),
    lambda: "ntn_" + rand(11, string.digits) + rand(35),
    lambda: "ATATT3xFfGF0" + b64url(rng.randint(160, 190)) + "=" + rand(8, HEX.upper()),
    lambda: "PMAK-" + rand(24, HEX) + "-" + rand(34, HEX),
    lambda: "dapi" + rand(32, HEX),
    lambda: "sq0atp-" + b64url(22),
    lambda: "sq0csp-" + b64url(43),
    lambda: "EAAA" + b64url(60),
    lambda: "pscale_tkn_" + b64url(43),
    lambda: "pscale_pw_" + b64url(43),
    lambda: "nfp_" + rand(36),
    lambda: "fo1_" + b64url(43),
    lambda: "sbp_" + rand(40, HEX),
    lambda: "sntrys_eyJpYXQiOjE3" + b64url(rng.randint(90, 140)),
    lambda: "sntryu_" + rand(64, HEX),
    lambda: "glsa_" + rand(32) + "_" + rand(8, HEX),
    lambda: "glc_eyJvIjoi" + b64url(rng.randint(60, 100)) + "=",
    lambda: "NRAK-" + rand(27, string.ascii_uppercase + string.digits),
    lambda: (
        "dt0c01."
        + rand(24, string.ascii_uppercase + string.digits)
        + "."
        + rand(64, string.ascii_uppercase + string.digits)
    ),
    lambda: "AGE-SECRET-KEY-1" + rand(58, string.ascii_uppercase + string.digits),
    lambda: "gsk_" + rand(52),
    lambda: "r8_" + rand(37),
    lambda: "pplx-" + rand(48),
    lambda: "xai-" + rand(80),
    lambda: "dckr_pat_" + b64url(27),
    lambda: rand(14) + ".atlasv1." + b64url(67),
    lambda: "pul-" + rand(40, HEX),
    lambda: "figd_" + b64url(40),
    lambda: "pat" + rand(14) + "." + rand(64, HEX),
    lambda: "CFPAT-" + b64url(43),
    lambda: "sl." + b64url(rng.randint(130, 140)),
    lambda: "sk.eyJ1Ijoi" + b64url(60) + "." + b64url(22),
    lambda: "tfp_" + rand(44) + "_" + rand(14),
    lambda: "shippo_live_" + rand(40, HEX),
    lambda: "aio_" + rand(28),
    lambda: "LTAI" + rand(20),
    lambda: "hvs." + b64url(rng.choice([24, 90])),
    lambda: "hvb." + b64url(rng.choice([24, 120])),
    lambda: "AccountKey=" + rand(86, B64) + "==",
    lambda: (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ" + b64url(rng.randint(40, 80)) + "." + b64url(43)
    ),
    lambda: "rnd_" + rand(32),
    lambda: "op_" + rand(26, LOWER_DIGITS),
    lambda: "ops_eyJ" + b64url(rng.randint(120, 160)),
    lambda: "vercel_" + rand(24),  # not a real prefix: kept out of the known set below
]
# The last generator above invents a prefix; drop it so the family holds only real formats.
PROVIDERS = PROVIDERS[:-1]

PEM_HEADERS = [
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN EC PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "-----BEGIN ENCRYPTED PRIVATE KEY-----",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----",
    "-----BEGIN DSA PRIVATE KEY-----",
]

KNOWN_TEMPLATES = [
    "{t}",
    "my key: {t}",
    "Use {t} for the staging deploys",
    "OPENAI_API_KEY={t}",
    "export TOKEN={t}",
    "- ci: token {t} -> ci.md",
    "curl -H 'Authorization: Bearer {t}' https://api.example.org/v1/me",
    '"credentials": "{t}"',
    "Der Schlüssel für das Projekt: {t}",
    "paste this into the settings page: {t}",
    "webhook = {t}",
    "`{t}`",
    "(old one was {t}, replaced)",
    "Note to self {t} still works on the old laptop",
]

# ---------------------------------------------------------------- assignments
SECRET_NAMES = [
    "password",
    "PASSWORD",
    "db_password",
    "DB_PASSWORD",
    "POSTGRES_PASSWORD",
    "mysqlRootPassword",
    "smtpPass",
    "smtp_pass",
    "adminPwd",
    "REDIS_PWD",
    "pw",
    "pass",
    "pwd",
    "api_key",
    "apiKey",
    "API_KEY",
    "stripeSecretKey",
    "client_secret",
    "clientSecret",
    "OAUTH_CLIENT_SECRET",
    "auth_token",
    "authToken",
    "ACCESS_TOKEN",
    "GITHUB_TOKEN",
    "slack_bot_token",
    "secret_key",
    "SECRET_KEY",
    "DJANGO_SECRET_KEY",
    "private_key",
    "encryption_key",
    "jwtSecret",
    "JWT_SECRET",
    "app.secret",
    "spring.datasource.password",
    "mail.smtp.password",
    "ldap_bind_password",
    "service_account_pass",
    "rootPassword",
    "keystorePassword",
    "passphrase",
    "passcode",
    "Passwort",
    "Kennwort",
    "WLAN-Passwort",
    "db-passwort",
    "Zugangsdaten",
    "PIN",
    "wifi_password",
    "vault_token",
    "refresh_token",
    "aws_secret_access_key",
    "AWS_SECRET_ACCESS_KEY",
    "x-api-key",
    "X-Auth-Token",
    "sessionSecret",
    "cookie_secret",
    "masterKey",
    "signingKey",
    "webhookSecret",
    "bot_token",
    "BASIC_AUTH_PASSWORD",
]
ASSIGN_TEMPLATES = [
    "{k}={v}",
    "{k} = {v}",
    "{k}: {v}",
    '{k}="{v}"',
    "{k} = '{v}'",
    '"{k}": "{v}"',
    "'{k}': '{v}',",
    '    "{k}": "{v}",',
    "{k}: '{v}'",
    "export {k}='{v}'",
    "set {k}={v}",
    '$env:{k} = "{v}"',
    "ENV {k}={v}",
    "{k} => '{v}',",
    "<{k}>{v}</{k}>",
    '{k} := "{v}"',
    "- {k}: {v}",
    "{k}   {v}",
    'config.{k} = "{v}";',
    'const {k} = "{v}";',
    "{k}: {v}  # prod",
    'if {k} == "{v}":',
    "{k}={v} ./run.sh",
    '{{"user": "admin", "{k}": "{v}"}}',
]

URL_TEMPLATES = [
    "postgres://{u}:{p}@db.internal:5432/app",
    "postgresql://{u}:{p}@localhost/{u}",
    "mysql://{u}:{p}@10.0.0.{n}:3306/shop",
    "mongodb+srv://{u}:{p}@cluster0.ab1cd.mongodb.net/test",
    "redis://:{p}@cache:6379/0",
    "amqp://{u}:{p}@rabbit:5672/",
    "https://{u}:{p}@git.example.org/team/repo.git",
    "git clone https://{u}:{p}@github.com/acme/infra.git",
    "ftp://{u}:{p}@files.example.net/upload",
    "DATABASE_URL=postgres://{u}:{p}@db:5432/prod",
    "smtp://{u}%40example.com:{p}@mail.example.com:587",
    "the proxy is http://{u}:{p}@proxy.corp:3128",
]
USERS = ["admin", "root", "deploy", "app", "max", "svc_backup", "jenkins", "anna.k", "postgres"]

SQL_TEMPLATES = [
    "CREATE USER {u} IDENTIFIED BY '{p}';",
    'ALTER USER {u} IDENTIFIED BY "{p}";',
    "GRANT ALL ON app.* TO '{u}'@'%' IDENTIFIED BY '{p}';",
    "ALTER USER {u} WITH PASSWORD '{p}';",
    "CREATE ROLE {u} LOGIN PASSWORD '{p}';",
    "ALTER ROLE {u} WITH ENCRYPTED PASSWORD '{p}';",
    "SET PASSWORD FOR '{u}'@'localhost' = PASSWORD('{p}');",
    "create user {u} with password '{p}'",
    "CREATE LOGIN {u} WITH PASSWORD = '{p}';",
    "alter user {u} identified by {p};",
]

CLI_TEMPLATES = [
    "mysql -u {u} -p{p} shop",
    "mysqldump -u{u} -p'{p}' --all-databases > dump.sql",
    "mysql --user={u} --password={p}",
    "psql --password {p}",
    "./deploy.sh --password {p} --host prod",
    "vault login --token {t}",
    "gh auth login --with-token {t}",
    "cli --api-key={t} sync",
    "curl --user {u}:{p} https://example.org/api",
    "curl -u {u}:{p} https://ci.example.org/job/build",
    "docker login -u {u} -p {p} registry.example.com",
    "sshpass -p '{p}' ssh {u}@10.1.2.3",
    "PGPASSWORD={p} psql -h db -U {u}",
    "wget --user={u} --password={p} https://example.org/f.zip",
    "tool --client-secret {t} --client-id 1234",
    "npm config set //registry.npmjs.org/:_authToken={t}",
    "htpasswd -b .htpasswd {u} {p}",
    "openssl enc -aes-256-cbc -k {p} -in a.txt",
    "az login -u {u} -p {p}",
    "rsync --password-file=<(echo {p}) src/ dst/",
]

MAKE_TEMPLATES = [
    "DB_PASSWORD := {p}",
    "API_TOKEN ?= {t}",
    "REGISTRY_PASSWORD := '{p}'",
    "SECRET_KEY ?= {t}",
    "DEPLOY_TOKEN := {t}",
    "ADMIN_PASS ?= {p}",
    "export SMTP_PASSWORD := {p}",
    "PGPASSWORD ?= {p}",
]

FALLBACK_TEMPLATES = [
    'os.getenv("DB_PASSWORD", "{p}")',
    "password = os.environ.get('SMTP_PASSWORD', '{p}')",
    'API_KEY = os.getenv("API_KEY", default="{t}")',
    'SECRET_KEY = env("DJANGO_SECRET_KEY", default="{t}")',
    "const token = process.env.API_TOKEN || '{t}';",
    'const pw = process.env.DB_PASS ?? "{p}";',
    "password: ${{DB_PASSWORD:-{p}}}",
    'token = ENV.fetch("GITHUB_TOKEN", "{t}")',
    'String pw = System.getenv().getOrDefault("DB_PASSWORD", "{p}");',
    "redis_password = os.environ.get(\"REDIS_PASSWORD\") or '{p}'",
    'secret = getenv("APP_SECRET", "{t}")',
]

HEADER_TEMPLATES = [
    "Authorization: Bearer {t}",
    "authorization: bearer {t}",
    '-H "Authorization: Bearer {t}"',
    "Authorization: Basic {b}",
    "Authorization: token {t}",
    "Authorization: Bot {t}",
    "headers = {{'Authorization': 'Bearer {t}'}}",
    "X-Api-Key: {t}",
    "x-auth-token: {t}",
    'fetch(url, {{ headers: {{ Authorization: "Bearer {t}" }} }})',
    "Proxy-Authorization: Basic {b}",
    "bearer {t}",
]

LABELLED_TEMPLATES = [
    "api token {t}",
    "the api key {t} is for staging",
    "token {t}",
    "deploy token for gitlab: {t}",
    "Zugriffstoken {t}",
    "API-Schlüssel: {t}",
    "secret {t} (rotate in May)",
    "here is the key: {t}",
    "access key {t}",
    "app secret – {t}",
    "use token {t} for the webhook",
    "Token fürs Dashboard {t}",
]

PROSE_TEMPLATES = [
    "my password is {p}",
    "My password is {p}.",
    "the wifi password is {p}",
    "The password for the router is '{p}'",
    "password for anna@example.com is {p}",
    "I set the password to {p} yesterday",
    "the new password is now {p}",
    "The passphrase is {p}",
    "use {p} as the password",
    "I used {p} as my password for the NAS",
    "{p} is my bank password",
    "the admin password was changed to {p}",
    "login for the NAS: admin / {p}",
    "user admin pass {p}",
    "The code for the door is {n4} and the alarm PIN is {n6}",
    "my PIN is {n4}",
    "the secret is {p}",
    "Remember: password {p}",
    "her password is {p}, don't tell",
    "password = {p} for the test box",
    "pw {p}",
    "credentials are {u} / {p}",
    "login with {u}:{p}",
    "Password: {p}",
]
PROSE_DE_TEMPLATES = [
    "Mein Passwort ist {p}",
    "Das Passwort für den Router lautet {p}",
    "Das WLAN-Passwort ist {p}",
    "Das Kennwort ist {p}.",
    "Kennwort für die NAS: {p}",
    "Zugangsdaten: {u} / {p}",
    "Die PIN für die Karte ist {n4}",
    "Meine PIN lautet {n4}",
    "Ich habe das Passwort auf {p} geändert",
    "das neue Passwort ist jetzt {p}",
    "Benutzer: {u}, Passwort: {p}",
    "Passwort vom Mailkonto: {p}",
    "nimm {p} als Passwort",
    "Das Kennwort für den Server lautet „{p}“",
    "Login fürs Portal: {u} / {p}",
    "Geheimzahl ist {n4}",
]

# ---------------------------------------------------------------- obfuscation
ZW = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]
CONFUSABLE = {
    "a": "а",
    "e": "е",
    "o": "о",
    "p": "р",
    "c": "с",
    "x": "х",
    "y": "у",
    "i": "і",
    "s": "ѕ",
    "k": "κ",
}


def zero_width(text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        chars.insert(rng.randint(1, len(chars) - 1), rng.choice(ZW))
    return "".join(chars)


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def confusable(text: str) -> str:
    return "".join(CONFUSABLE.get(c, c) if rng.random() < 0.7 else c for c in text)


def obfuscated_case() -> str:
    choice = rng.random()
    if choice < 0.35:
        secret = rng.choice(PROVIDERS[:20])()
        return rng.choice(["key {}", "{}", "use {} here"]).format(zero_width(secret))
    if choice < 0.55:
        template, value = rng.choice(
            [
                ("password={}", password),
                ("ghp_{}", lambda: rand(36)),
                ("my password is {}", password),
            ]
        )
        return fullwidth(template.format(value()))
    if choice < 0.8:
        return confusable(
            rng.choice(["password: {}", "my password is {}", "api_key={}", "secret token {}"])
        ).format(password() if rng.random() < 0.5 else token(20, 30))
    label = rng.choice(["Passwort", "password", "db_password", "Kennwort"])
    return zero_width(label) + rng.choice([": ", "=", " ist "]) + password()


def split_case() -> str:
    secret = rng.choice(PROVIDERS[:40])()
    cut = rng.randint(max(4, len(secret) // 3), max(5, len(secret) * 2 // 3))
    head, tail = secret[:cut], secret[cut:]
    style = rng.choice(
        [
            '"{a}" +\n"{b}"',
            "{a}\\\n{b}",
            "key part 1: {a}\n{b}",
            "{a}\n{b}",
            "first half {a}\n  {b}",
        ]
    )
    return style.format(a=head, b=tail)


# ---------------------------------------------------------------- benign look-alikes
def placeholder_cases() -> list[str]:
    templates = [
        "AKIAIOSFODNN7EXAMPLE",
        "aws_access_key_id = AKIAXXXXXXXXXXXXXXXX",
        "ghp_" + "x" * 36,
        "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "OPENAI_API_KEY=sk-proj-<your-key>",
        "OPENAI_API_KEY=sk-...",
        "api_key: sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "STRIPE_KEY=sk_live_" + "1" * 24,
        "sk_test_" + "0" * 24,
        "SLACK_TOKEN=xoxb-your-token",
        "slack: xoxb-XXXXXXXXXXX-XXXXXXXXXXXXX-XXXXXXXXXXXXXXXXXXXXXXXX",
        "HF_TOKEN=hf_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "glpat-xxxxxxxxxxxxxxxxxxxx",
        "ANTHROPIC_API_KEY=<your-anthropic-key>",
        "token: <your-token>",
        "password: <password>",
        "GOOGLE_API_KEY=AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "npm_" + "X" * 36,
        "Authorization: Bearer <token>",
        "Authorization: Bearer YOUR_TOKEN_HERE",
        "API_KEY=your-api-key-here",
        'password = "changeme"',
        "DB_PASSWORD=********",
        "token = 'REDACTED'",
        "secret_key: EXAMPLEKEY1234567890EXAMPLE",
        "sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "ghp_0000000000000000000000000000000000000",
        "ghp_1234567890abcdefghijklmnopqrstuvwxyz",
        "AKIA0000000000000000",
        "the key looks like sk-proj-… followed by 48 characters",
        "SENDGRID_API_KEY=SG.xxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "postgres://user:password@localhost:5432/mydb",
        "postgres://USER:PASSWORD@HOST:5432/DB",
        "https://<user>:<token>@github.com/org/repo.git",
        "mysql -u root -p",
        "API_TOKEN ?= $(shell cat .token)",
        "password: ${DB_PASSWORD}",
        "Authorization: Bearer {{token}}",
        "Authorization: Bearer $TOKEN",
        "export GITHUB_TOKEN=$(gh auth token)",
        "token: %TOKEN%",
        "secret: {{ .Values.secret }}",
    ]
    return templates


def git_case() -> str:
    sha = rand(40, HEX)
    return rng.choice(
        [
            f"fixed in {sha[:7]}",
            f"commit {sha}",
            f"git cherry-pick {sha[:12]}",
            f"Merge commit '{sha}' into main",
            f"see https://github.com/acme/app/commit/{sha}",
            f"HEAD is now at {sha[:7]} Tidy the settings page",
            f"revert {sha}",
            f"- deploy: last good build {sha[:10]} -> deploy.md",
            f"git checkout {sha}",
            f"Reverts {sha[:8]} and {rand(40, HEX)[:8]}",
        ]
    )


def digest_case() -> str:
    return rng.choice(
        [
            f"sha256: {rand(64, HEX)}",
            f"{rand(64, HEX)}  release-2.4.1.tar.gz",
            f"SHA256 checksum {rand(64, HEX).upper()}",
            f"md5 {rand(32, HEX)}",
            f"sha1sum: {rand(40, HEX)}",
            f"sha512-{rand(86, B64)}==",
            f'integrity="sha384-{rand(64, B64)}"',
            f"the file hash is {rand(64, HEX)}",
            f'etag: "{rand(32, HEX)}"',
            f"blake2b {rand(128, HEX)}",
            f"content digest sha256={rand(64, HEX)}",
            f"checksum: {rand(64, HEX)}",
        ]
    )


def docker_case() -> str:
    image = rng.choice(["python", "postgres", "ghcr.io/acme/api", "redis", "nginx", "node"])
    digest = rand(64, HEX)
    return rng.choice(
        [
            f"FROM {image}@sha256:{digest}",
            f"image: {image}@sha256:{digest}",
            f"Digest: sha256:{digest}",
            f"docker pull {image}@sha256:{digest}",
            f"{image}:3.12 sha256:{digest}",
            f"Status: Downloaded newer image, id sha256:{digest[:12]}",
        ]
    )


def ssh_fp_case() -> str:
    return rng.choice(
        [
            f"SHA256:{rand(43, B64)}",
            f"ED25519 key fingerprint is SHA256:{rand(43, B64)}.",
            f"256 SHA256:{rand(43, B64)} anna@laptop (ED25519)",
            "MD5:" + ":".join(rand(2, HEX) for _ in range(16)),
            f"The key fingerprint is: SHA256:{rand(43, B64)} deploy@ci",
            f"RSA key fingerprint is SHA256:{rand(43, B64)}",
        ]
    )


def public_key_case() -> str:
    return rng.choice(
        [
            f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{rand(rng.randint(60, 300), B64)} anna@laptop",
            f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rand(43, B64)} deploy@ci",
            f"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{rand(80, B64)}= me@host",
            "-----BEGIN PUBLIC KEY-----",
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"
            + rand(20, B64)
            + "\n"
            + rand(64, B64)
            + "\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\nMIID"
            + rand(60, B64)
            + "\n"
            + rand(64, B64)
            + "\n-----END CERTIFICATE-----",
            "-----BEGIN PGP PUBLIC KEY BLOCK-----",
            f"age1{rand(58, LOWER_DIGITS)}",
            f"authorized_keys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rand(43, B64)}",
        ]
    )


def data_uri_case() -> str:
    return rng.choice(
        [
            f'<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{rand(rng.randint(40, 120), B64)}=">',
            f"background: url(data:image/svg+xml;base64,PHN2ZyB4bWxucz0i{rand(60, B64)});",
            f"data:application/pdf;base64,JVBERi0xLjQK{rand(70, B64)}",
            f"![logo](data:image/gif;base64,R0lGODlhAQABAIAAAP{rand(50, B64)})",
            f"data:font/woff2;base64,d09GMgABAAAAA{rand(90, B64)}",
        ]
    )


def uuid_case() -> str:
    u = f"{rand(8, HEX)}-{rand(4, HEX)}-4{rand(3, HEX)}-a{rand(3, HEX)}-{rand(12, HEX)}"
    return rng.choice(
        [
            u,
            f"request id {u}",
            f"tenant_id: {u}",
            f"https://app.example.com/orders/{u}/edit",
            f"- team: workspace {u} -> team.md",
            f"correlation-id={u}",
            f'client_id = "{u}"',
        ]
    )


def identifier_cases() -> list[str]:
    return [
        f"kubectl logs web-{rand(9, LOWER_DIGITS)}-{rand(5, LOWER_DIGITS)}",
        f"customer cus_{rand(14)} asked for a refund",
        f"payment pi_{rand(24)}",
        f"the OpenAI response id was chatcmpl-{rand(29)}",
        f"file id file-{rand(24)}",
        f"https://docs.google.com/document/d/1{rand(43, ALNUM + '-_')}/edit",
        f"youtube.com/watch?v={rand(11, ALNUM + '-_')}",
        f"arn:aws:iam::{rand(12, string.digits)}:role/deploy",
        f"ipfs://bafybei{rand(52, 'abcdefghijklmnopqrstuvwxyz234567')}",
        f"order #{rng.randint(100000, 999999)} shipped",
        f"my-very-long-identifier-name-for-a-kubernetes-deployment-{rng.randint(2020, 2030)}",
        f"bc1q{rand(38, 'qpzry9x8gf2tvdw0s3jn54khce6mua7l')}",
        "apiVersion: apps/v1",
        f"max_tokens={rng.choice([256, 1024, 4096])}",
        "token_count: 512",
        "PASSWORD_MIN_LENGTH = 12",
        "password_hash = make_password(raw)",
        'password = os.environ["DB_PASSWORD"]',
        'token = getenv("TOKEN")',
        "api_key = settings.OPENAI_API_KEY",
        "password: str",
        "password=None",
        "password = getpass.getpass()",
        "secret_name: prod/db/password",
        "DB_PASSWORD_FILE=/run/secrets/db_password",
        "docker login --password-stdin < token.txt",
        'input type="password" name="password"',
        "token_type: bearer",
        "Authorization header missing",
        'os.getenv("DB_HOST", "localhost")',
        "def check_password(self, raw_password):",
        "password_reset_timeout = 3600",
        "auth: basic",
        "key: value",
        "primary_key=True",
        "passenger: Anna Müller, seat 14C",
        "compass bearing 270",
        "docker run -p8080:80 nginx",
        "ssh -p 2222 deploy@host",
        'SECRET_KEY = env("DJANGO_SECRET_KEY")',
        "const token = process.env.API_TOKEN;",
        "password: !vault |",
        "api_key = None  # set in production",
        "AUTH_PASSWORD_VALIDATORS = [",
        'token = request.headers.get("Authorization")',
        "if not password:",
        "self.password = password",
        "pw = getpass()",
        "Passwort-Richtlinie: mindestens 12 Zeichen",
        "refresh_token_lifetime: 7d",
        "oauth2 token endpoint: https://auth.example.com/oauth/token",
    ]


PROSE_BENIGN = [
    "the password is incorrect",
    "The password is wrong, try again",
    "the token was rotated yesterday",
    "reset your password via the link",
    "Password must be at least 12 characters long",
    "the token is valid for 24 hours",
    "my password is stored in 1Password",
    "the password is in the vault",
    "The API key is set via the OPENAI_API_KEY variable",
    "The token expired last night, I made a new one",
    "password is required",
    "the password was changed on Monday",
    "the secret is out: we're moving to Berlin",
    "The password policy is strict",
    "my password is too weak according to the checker",
    "the PIN is required at every login",
    "the token is missing from the request",
    "I forgot my password again",
    "password reset link sent to anna@example.com",
    "Her password manager is Bitwarden",
    "the wifi password is on the fridge",
    "the token was revoked after the leak",
    "the key is in the drawer",
    "please never share your password",
    "Change the admin password after the first login",
    "the passphrase is case-sensitive",
    "the password is the same as last year",
    "The token is generated by the CLI",
    "my pin is not working",
    "The API key goes into the X-Api-Key header",
    "the password is being reset by IT",
    "tokens are counted per request",
    "the password field is empty",
    "an access token expires after one hour",
    "use a password manager for the new account",
    "The secret lives in Vault under kv/prod",
    "the password is correct now",
    "password protected PDF",
    "two-factor auth is on for the bank",
    "the token is a JWT signed with RS256",
    "Is the password still hunter-style? No, we moved to passkeys",
    "the password was leaked in a breach, so I changed it",
    "the secret ingredient is cardamom",
    "my password is saved in the browser",
    "the new token is already in the CI settings",
    "What is the password policy for contractors?",
    "password hints are disabled",
    "the PIN is four digits",
    "we store only password hashes (argon2)",
    "the token in the screenshot was fake",
    "session tokens live for 14 days",
    "The password is the one from the onboarding email",
    "reset token expired, requested a new one",
    "keep API keys out of the repository",
    "a password is a secret you share with nobody",
]
PROSE_BENIGN_DE = [
    "Das Passwort ist falsch",
    "das Passwort ist abgelaufen",
    "Passwort vergessen? Hier zurücksetzen",
    "Das Token wurde gestern rotiert",
    "Bitte ändere dein Kennwort",
    "Das Kennwort muss mindestens 12 Zeichen haben",
    "Die PIN ist ungültig",
    "das Passwort ist im Passwortmanager gespeichert",
    "Mein Passwort ist zu kurz",
    "Das WLAN-Passwort steht auf dem Router",
    "Das Passwort wurde zurückgesetzt",
    "Die Zugangsdaten liegen im Tresor",
    "Das Token ist abgelaufen",
    "Das Passwort ist richtig",
    "Kennwort ändern unter Einstellungen",
    "die PIN ist erforderlich",
    "Das Passwort ist noch nicht gesetzt",
    "Das Token ist nur 24 Stunden gültig",
    "Sie haben Ihr Passwort erfolgreich geändert",
    "Das Passwort ist dasselbe wie letztes Jahr",
    "Das Geheimnis ist gelüftet",
    "das Passwort ist nicht sicher genug",
    "Das Passwort ist dasselbe wie beim Mailkonto",
    "Kennwort wurde per Post verschickt",
    "Meine PIN habe ich vergessen",
    "Das Passwort ist sicher hinterlegt",
    "Zugangsdaten bekommst du von der IT",
    "der Token ist im CI hinterlegt",
    "Bitte das Passwort nicht per Mail schicken",
    "Das Passwort muss alle 90 Tage geändert werden",
]


def fill(template: str) -> str:
    return template.format(
        t=token(),
        p=password(),
        u=rng.choice(USERS),
        n=rng.randint(2, 250),
        n4=rng.randint(1000, 9999),
        n6=rng.randint(100000, 999999),
        b=rand(rng.randint(16, 40), B64) + "=",
    )


def cases() -> list[dict[str, str]]:
    out: list[dict[str, str]] = []

    def add(text: str, label: str, family: str) -> None:
        out.append({"text": text, "label": label, "family": family})

    for make in PROVIDERS:
        for _ in range(2):
            add(rng.choice(KNOWN_TEMPLATES).format(t=make()), "secret", "known_format")
    for header in PEM_HEADERS:
        add(header, "secret", "known_format")
        add(f"{header}\nMII{rand(61, B64)}\n{rand(64, B64)}", "secret", "known_format")
    for _ in range(60):
        name = rng.choice(SECRET_NAMES)
        value = rng.choice([password, token])()
        if name in ("PIN",):
            value = str(rng.randint(1000, 99999999))
        add(rng.choice(ASSIGN_TEMPLATES).format(k=name, v=value), "secret", "assignment")
    for template in URL_TEMPLATES * 2:
        add(fill(template), "secret", "url_credentials")
    for template in SQL_TEMPLATES * 2:
        add(fill(template), "secret", "sql")
    for template in CLI_TEMPLATES * 2:
        add(fill(template), "secret", "cli_flag")
    for template in MAKE_TEMPLATES * 2:
        add(fill(template), "secret", "makefile")
    for template in FALLBACK_TEMPLATES * 2:
        add(fill(template), "secret", "env_fallback")
    for template in HEADER_TEMPLATES * 2:
        add(fill(template), "secret", "auth_header")
    for template in LABELLED_TEMPLATES * 2:
        add(fill(template), "secret", "labelled_token")
    for template in PROSE_TEMPLATES * 2:
        add(fill(template), "secret", "prose")
    for template in PROSE_DE_TEMPLATES * 2:
        add(fill(template), "secret", "prose_de")
    for _ in range(30):
        add(obfuscated_case(), "secret", "obfuscated")
    for _ in range(20):
        add(split_case(), "secret", "split")

    for text in placeholder_cases():
        add(text, "benign", "placeholder")
    for _ in range(30):
        add(git_case(), "benign", "git_commit")
    for _ in range(36):
        add(digest_case(), "benign", "digest")
    for _ in range(22):
        add(docker_case(), "benign", "docker_digest")
    for _ in range(24):
        add(ssh_fp_case(), "benign", "ssh_fingerprint")
    for _ in range(40):
        add(public_key_case(), "benign", "public_key")
    for _ in range(18):
        add(data_uri_case(), "benign", "data_uri")
    for _ in range(22):
        add(uuid_case(), "benign", "uuid")
    for text in identifier_cases():
        add(text, "benign", "code_reference")
    for text in PROSE_BENIGN:
        add(text, "benign", "prose_benign")
    for text in PROSE_BENIGN_DE:
        add(text, "benign", "prose_benign_de")
    seen: set[str] = set()
    unique: list[dict[str, str]] = []
    for row in out:
        if row["text"] not in seen:
            seen.add(row["text"])
            unique.append(row)
    rng.shuffle(unique)
    return unique


def main() -> None:
    rows = cases()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    secrets = sum(row["label"] == "secret" for row in rows)
    print(f"{len(rows)} cases ({secrets} secrets, {len(rows) - secrets} benign) -> {OUT}")


if __name__ == "__main__":
    main()
