"""Settings for Ultron Hub. Every value comes from the environment (see ``.env.example``)."""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from ultron_site.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent

# --- data directory -----------------------------------------------------------------------
ULTRON_DATA_DIR = Path(env_str("ULTRON_DATA_DIR", str(BASE_DIR / "var"))).expanduser()
if not ULTRON_DATA_DIR.is_absolute():
    ULTRON_DATA_DIR = (BASE_DIR / ULTRON_DATA_DIR).resolve()


def _secret_key() -> str:
    configured = env_str("DJANGO_SECRET_KEY")
    if configured:
        return configured
    # No key configured: keep a random one in the data directory so sessions survive restarts.
    path = ULTRON_DATA_DIR / "secret_key"
    if path.exists():
        return path.read_text().strip()
    ULTRON_DATA_DIR.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key


SECRET_KEY = _secret_key()
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "django_q",
    "django_htmx",
    "ultron_site",
    "memories",
    "ingestion",
    "clusters",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "ultron_site.urls"
WSGI_APPLICATION = "ultron_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database -----------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
ULTRON_EMBEDDED_DB = not DATABASE_URL
if ULTRON_EMBEDDED_DB:
    from ultron_site.embedded_db import ensure_running

    DATABASE_URL = ensure_running(ULTRON_DATA_DIR)
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL could not be parsed: {exc}") from None
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (with the pgvector extension).")
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- i18n / time --------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = ULTRON_DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "ultron_site" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "/admin/login/"

# Request bodies: JSON requests are small; file uploads get their own limits (ingestion).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("ULTRON_MAX_REQUEST_BYTES", 5 * 1024 * 1024, minimum=1024)

# --- REST API -----------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["ultron_site.auth.AgentTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "ultron_site.api_errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"user": env_str("ULTRON_API_RATE", "6000/min")},
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Ultron Hub API",
    "DESCRIPTION": "Shared memory hub for AI agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
}

CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- LLM ----------------------------------------------------------------------------------
DASHSCOPE_API_KEY = env_str("DASHSCOPE_API_KEY")
DASHSCOPE_BASE_URL = env_str("DASHSCOPE_BASE_URL")  # empty: the SDK's own endpoint
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
_llm_default = "dashscope" if DASHSCOPE_API_KEY else ("openai" if OPENAI_BASE_URL else "offline")
ULTRON_LLM_PROVIDER = env_choice("ULTRON_LLM_PROVIDER", "auto", ["auto", "offline", "dashscope", "openai"])
if ULTRON_LLM_PROVIDER == "auto":
    ULTRON_LLM_PROVIDER = _llm_default
if ULTRON_LLM_PROVIDER == "dashscope" and not DASHSCOPE_API_KEY:
    raise ImproperlyConfigured("ULTRON_LLM_PROVIDER=dashscope needs DASHSCOPE_API_KEY.")
if ULTRON_LLM_PROVIDER == "openai" and not OPENAI_BASE_URL:
    raise ImproperlyConfigured("ULTRON_LLM_PROVIDER=openai needs OPENAI_BASE_URL.")
ULTRON_LLM_MODEL = env_str(
    "ULTRON_LLM_MODEL", "qwen3.6-flash" if ULTRON_LLM_PROVIDER != "openai" else "gpt-4o-mini"
)
ULTRON_LLM_TIMEOUT_SECONDS = env_float("ULTRON_LLM_TIMEOUT_SECONDS", 30.0, minimum=0.1)
ULTRON_LLM_MAX_ATTEMPTS = env_int("ULTRON_LLM_MAX_ATTEMPTS", 3, minimum=1, maximum=10)
ULTRON_LLM_BACKOFF_SECONDS = env_float("ULTRON_LLM_BACKOFF_SECONDS", 1.0, minimum=0.0)
ULTRON_LLM_MAX_INPUT_TOKENS = env_int("ULTRON_LLM_MAX_INPUT_TOKENS", 32000, minimum=1000)
ULTRON_LLM_PROMPT_RESERVE_TOKENS = env_int("ULTRON_LLM_PROMPT_RESERVE_TOKENS", 4000, minimum=0)
if ULTRON_LLM_PROMPT_RESERVE_TOKENS >= ULTRON_LLM_MAX_INPUT_TOKENS:
    raise ImproperlyConfigured(
        "ULTRON_LLM_PROMPT_RESERVE_TOKENS must be smaller than ULTRON_LLM_MAX_INPUT_TOKENS."
    )

# --- embeddings ---------------------------------------------------------------------------
ULTRON_EMBEDDING_PROVIDER = env_choice("ULTRON_EMBEDDING_PROVIDER", "local", ["local", "dashscope"])
if ULTRON_EMBEDDING_PROVIDER == "dashscope":
    if not DASHSCOPE_API_KEY:
        raise ImproperlyConfigured("ULTRON_EMBEDDING_PROVIDER=dashscope needs DASHSCOPE_API_KEY.")
    ULTRON_EMBEDDING_MODEL = env_str("ULTRON_EMBEDDING_MODEL", "text-embedding-v4")
    ULTRON_EMBEDDING_DIMENSIONS = env_int("ULTRON_EMBEDDING_DIMENSIONS", 1024, minimum=64, maximum=2000)
else:
    ULTRON_EMBEDDING_MODEL = env_str("ULTRON_EMBEDDING_MODEL", "all-MiniLM-L6-v2")
    if ULTRON_EMBEDDING_MODEL != "all-MiniLM-L6-v2":
        raise ImproperlyConfigured(
            "ULTRON_EMBEDDING_MODEL: the local provider ships only all-MiniLM-L6-v2."
        )
    ULTRON_EMBEDDING_DIMENSIONS = env_int("ULTRON_EMBEDDING_DIMENSIONS", 384, minimum=384, maximum=384)
ULTRON_EMBEDDING_BATCH_SIZE = env_int("ULTRON_EMBEDDING_BATCH_SIZE", 32, minimum=1, maximum=1024)

# --- redaction ----------------------------------------------------------------------------
# Person names need the spaCy model (about 2 s to load, a few ms per text); off = patterns only.
ULTRON_REDACT_NER = env_bool("ULTRON_REDACT_NER", True)

# --- memory service -----------------------------------------------------------------------
ULTRON_DUPLICATE_THRESHOLD = env_float("ULTRON_DUPLICATE_THRESHOLD", 0.85, minimum=0.0, maximum=1.0)
ULTRON_DUPLICATE_SOFT_THRESHOLD = env_float(
    "ULTRON_DUPLICATE_SOFT_THRESHOLD", 0.75, minimum=0.0, maximum=1.0
)
if ULTRON_DUPLICATE_SOFT_THRESHOLD > ULTRON_DUPLICATE_THRESHOLD:
    raise ImproperlyConfigured(
        "ULTRON_DUPLICATE_SOFT_THRESHOLD must not exceed ULTRON_DUPLICATE_THRESHOLD."
    )
ULTRON_MAX_CONTENT_CHARS = env_int("ULTRON_MAX_CONTENT_CHARS", 20000, minimum=100)
ULTRON_MAX_FIELD_CHARS = env_int("ULTRON_MAX_FIELD_CHARS", 20000, minimum=100)
ULTRON_MAX_TAGS = env_int("ULTRON_MAX_TAGS", 10, minimum=1, maximum=100)
ULTRON_MAX_TAG_CHARS = env_int("ULTRON_MAX_TAG_CHARS", 64, minimum=8, maximum=200)
ULTRON_HOT_PERCENT = env_int("ULTRON_HOT_PERCENT", 10, minimum=0, maximum=100)
ULTRON_WARM_PERCENT = env_int("ULTRON_WARM_PERCENT", 40, minimum=0, maximum=100)
if ULTRON_HOT_PERCENT + ULTRON_WARM_PERCENT > 100:
    raise ImproperlyConfigured("ULTRON_HOT_PERCENT + ULTRON_WARM_PERCENT must not exceed 100.")
ULTRON_ARCHIVE_AFTER_DAYS = env_int("ULTRON_ARCHIVE_AFTER_DAYS", 30, minimum=0)
ULTRON_TIER_BOOST_HOT = env_float("ULTRON_TIER_BOOST_HOT", 1.2, minimum=0.0)
ULTRON_TIER_BOOST_WARM = env_float("ULTRON_TIER_BOOST_WARM", 1.0, minimum=0.0)
ULTRON_TIER_BOOST_COLD = env_float("ULTRON_TIER_BOOST_COLD", 0.8, minimum=0.0)
ULTRON_HOTNESS_DECAY = env_float("ULTRON_HOTNESS_DECAY", 0.05, minimum=0.0)
ULTRON_HOTNESS_WEIGHT = env_float("ULTRON_HOTNESS_WEIGHT", 0.1, minimum=0.0, maximum=1.0)
# Default search mode when the request names none: semantic | keyword | hybrid.
ULTRON_SEARCH_MODE = env_choice("ULTRON_SEARCH_MODE", "hybrid", ["semantic", "keyword", "hybrid"])
# Keyword side of search: at most this many full-text matches are ranked per query.
ULTRON_SEARCH_KEYWORD_CAP = env_int("ULTRON_SEARCH_KEYWORD_CAP", 1000, minimum=50, maximum=1_000_000)
# A query word found in more than this many memories (the planner's statistics) only ranks the
# matches, it does not select them: a common word makes the index read a long posting list.
ULTRON_SEARCH_KEYWORD_COMMON_ROWS = env_int("ULTRON_SEARCH_KEYWORD_COMMON_ROWS", 2000, minimum=100)
ULTRON_SEARCH_EF = env_int("ULTRON_SEARCH_EF", 100, minimum=10, maximum=1000)
ULTRON_SEARCH_FILTERED_EF = env_int("ULTRON_SEARCH_FILTERED_EF", 400, minimum=10, maximum=1000)

# --- ingestion ----------------------------------------------------------------------------
# Directories whose files POST /api/ingest may read by path (comma-separated); empty = none.
ULTRON_INGEST_ROOTS = [str(Path(p).expanduser().resolve()) for p in env_list("ULTRON_INGEST_ROOTS")]
ULTRON_INGEST_MAX_FILE_BYTES = env_int("ULTRON_INGEST_MAX_FILE_BYTES", 50 * 1024 * 1024, minimum=1024)
ULTRON_INGEST_MAX_REQUEST_BYTES = env_int("ULTRON_INGEST_MAX_REQUEST_BYTES", 200 * 1024 * 1024, minimum=1024)
ULTRON_INGEST_MAX_TEXT_CHARS = env_int("ULTRON_INGEST_MAX_TEXT_CHARS", 200_000, minimum=100)
# Files above this size keep no bytes in the raw archive (ingestion still proceeds).
ULTRON_RAW_ARCHIVE_MAX_BYTES = env_int("ULTRON_RAW_ARCHIVE_MAX_BYTES", 10 * 1024 * 1024, minimum=0)
# Store redacted text in the raw archive instead of the original bytes.
RAW_ARCHIVE_REDACT = env_bool("RAW_ARCHIVE_REDACT", False)
# Offline segmenter: a user turn less similar than this to the current goals starts a segment.
ULTRON_SEGMENT_SHIFT_THRESHOLD = env_float("ULTRON_SEGMENT_SHIFT_THRESHOLD", 0.2, minimum=-1.0, maximum=1.0)
# Segments scoring at least this are eligible for memory extraction.
ULTRON_SEGMENT_MIN_SCORE = env_float("ULTRON_SEGMENT_MIN_SCORE", 0.7, minimum=0.0, maximum=1.0)
# Pipeline work items: batch size, attempts before parking, first retry delay (doubles).
ULTRON_PIPELINE_BATCH = env_int("ULTRON_PIPELINE_BATCH", 20, minimum=1, maximum=1000)
ULTRON_PIPELINE_MAX_ATTEMPTS = env_int("ULTRON_PIPELINE_MAX_ATTEMPTS", 5, minimum=1, maximum=100)
ULTRON_PIPELINE_RETRY_SECONDS = env_int("ULTRON_PIPELINE_RETRY_SECONDS", 60, minimum=0)
ULTRON_PIPELINE_LEASE_SECONDS = env_int("ULTRON_PIPELINE_LEASE_SECONDS", 900, minimum=10)
# Optional consolidation step: merge near-duplicate pairs left over, bounded per run.
ULTRON_CONSOLIDATION_ENABLED = env_bool("ULTRON_CONSOLIDATION_ENABLED", False)

# --- clusters and skills ------------------------------------------------------------------
ULTRON_CLUSTER_SIMILARITY_THRESHOLD = env_float("ULTRON_CLUSTER_SIMILARITY_THRESHOLD", 0.75, minimum=-1.0, maximum=1.0)
ULTRON_CRYSTALLIZATION_THRESHOLD = env_int("ULTRON_CRYSTALLIZATION_THRESHOLD", 5, minimum=2)
ULTRON_RECRYSTALLIZATION_DELTA = env_int("ULTRON_RECRYSTALLIZATION_DELTA", 3, minimum=1)

# --- scheduled pipeline (django-q2) -------------------------------------------------------
ULTRON_DECAY_INTERVAL_HOURS = env_float("ULTRON_DECAY_INTERVAL_HOURS", 6.0, minimum=0.05)
ULTRON_Q_WORKERS = env_int("ULTRON_Q_WORKERS", 2, minimum=1, maximum=64)
ULTRON_Q_TIMEOUT_SECONDS = env_int("ULTRON_Q_TIMEOUT_SECONDS", 1800, minimum=10)
Q_CLUSTER = {
    "name": "ultron",
    "orm": "default",
    "workers": ULTRON_Q_WORKERS,
    "timeout": ULTRON_Q_TIMEOUT_SECONDS,
    "retry": ULTRON_Q_TIMEOUT_SECONDS + 600,  # must exceed the timeout
    "max_attempts": 3,
    "sync": env_bool("ULTRON_Q_SYNC", False),
    "catch_up": False,
    "save_limit": 1000,
    "label": "Pipeline",
}

# --- logging ------------------------------------------------------------------------------
ULTRON_LOG_LEVEL = env_choice("ULTRON_LOG_LEVEL", "info", ["debug", "info", "warning", "error"])
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "ultron": {"handlers": ["console"], "level": ULTRON_LOG_LEVEL.upper(), "propagate": False},
        "django_q": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        # Presidio logs analysed text at DEBUG; never let that through.
        "presidio-analyzer": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}
