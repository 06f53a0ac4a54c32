"""Strict readers for settings taken from the environment, and the registry of every variable.

Every setting of the hub comes from an environment variable. A value that cannot be parsed
stops start-up with ``ImproperlyConfigured`` naming the variable, instead of silently falling
back to a default. An empty value counts as unset (the default applies).

Each ``env_*`` call declares its variable: kind, default, bounds or choices, a one-line
``help`` text and a ``group``. The declarations form ``REGISTRY``, from which
``python -m ultron_site.settings_reference --write`` generates ``docs/settings.md`` and
``.env.example``. Variables read before or outside ``settings.py`` (start-up, the launcher,
the embedded server) are declared once at the bottom of this module and read with
``env_get(name)``. A variable can keep old names (``deprecated_names``): they are still read,
with a deprecation warning, and disagreeing with the new name stops start-up.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

logger = logging.getLogger("ultron.settings")

# Groups in the order the generated reference lists them: (key, title, what it covers).
GROUPS: dict[str, tuple[str, str]] = {
    "core": ("Core", "Where the hub keeps its data, how it is served, Django basics."),
    "access": ("Access", "Logins to the admin site, https behind a proxy, cookies."),
    "database": ("Database", "PostgreSQL with pgvector: an external server, or the embedded one."),
    "llm": ("LLM", "The language model used to classify, summarise and merge."),
    "embeddings": ("Embeddings", "The model that turns text into vectors."),
    "redaction": ("Redaction", "Scrubbing secrets and personal data."),
    "screening": ("Screening", "The poisoning screen, held memories, and how reads rank memories."),
    "memories": ("Memories", "Limits, duplicates and tiers of the memory service."),
    "search": ("Search", "How memories are searched."),
    "ingestion": ("Ingestion", "Session files and texts turned into memories."),
    "pipeline": ("Pipeline", "The scheduled pipeline and its django-q2 worker."),
    "clusters": ("Clusters", "Clusters of related memories and the skills crystallized from them."),
    "tuning": ("Tuning", "Rarely touched knobs; the defaults suit most hubs."),
}

KINDS = ("str", "bool", "int", "float", "choice", "list")


@dataclass(frozen=True)
class EnvVar:
    """One environment variable as the code declares it."""

    name: str
    kind: str
    default: Any
    help: str
    group: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    deprecated_names: tuple[str, ...] = ()
    # Shown instead of ``default`` where the real default depends on other settings.
    doc_default: str | None = None


REGISTRY: dict[str, EnvVar] = {}


def declare(
    name: str,
    kind: str,
    default: Any,
    *,
    help: str,
    group: str,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: Iterable[str] = (),
    deprecated_names: Iterable[str] = (),
    doc_default: str | None = None,
) -> EnvVar:
    """Record a variable in ``REGISTRY`` (idempotent for an identical declaration)."""
    if kind not in KINDS:
        raise ValueError(f"{name}: unknown kind {kind!r}")
    if group not in GROUPS:
        raise ValueError(f"{name}: unknown group {group!r} (one of {', '.join(GROUPS)})")
    if not help or "\n" in help:
        raise ValueError(f"{name}: help must be one non-empty line")
    if isinstance(default, list):
        default = tuple(default)
    if kind == "choice" and default not in tuple(choices):
        raise ValueError(f"{name}: default {default!r} is not one of its choices")
    var = EnvVar(
        name=name, kind=kind, default=default, help=help, group=group,
        minimum=minimum, maximum=maximum, choices=tuple(choices),
        deprecated_names=tuple(deprecated_names), doc_default=doc_default,
    )
    known = REGISTRY.get(name)
    # One declaration per variable: two readers disagreeing on a default would make the generated
    # reference describe only one of them.
    if known is not None and known != var:
        raise ValueError(f"{name} is declared twice, differently: {known} / {var}")
    for old in var.deprecated_names:
        for other in REGISTRY.values():
            # An old name stands for one variable only: read for two, it would set both.
            if other.name != name and (old == other.name or old in other.deprecated_names):
                raise ValueError(f"{old} is already used by {other.name}")
    REGISTRY[name] = var
    return var


def deprecated_names(registry: dict[str, EnvVar] | None = None) -> dict[str, str]:
    """Old name -> new name, for every deprecated name in the registry."""
    variables = (REGISTRY if registry is None else registry).values()
    return {old: var.name for var in variables for old in var.deprecated_names}


# --- reading ------------------------------------------------------------------------------


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None:
        return None
    value = value.strip()
    return value if value != "" else None


def _read(var: EnvVar, parse: Callable[[str, str], Any]) -> tuple[str, Any] | None:
    """(the name it was found under, the parsed value), or None when unset under every name."""
    found: tuple[str, str, Any] | None = None
    raw = _raw(var.name)
    if raw is not None:
        found = (var.name, raw, parse(var.name, raw))
    for old in var.deprecated_names:
        old_raw = _raw(old)
        if old_raw is None:
            continue
        old_value = parse(old, old_raw)
        message = f"{old} is deprecated: use {var.name} instead (see docs/settings.md)."
        # stacklevel 4 (_read, _value, env_*): the warning names the settings.py line that reads the variable.
        warnings.warn(message, DeprecationWarning, stacklevel=4)
        logger.warning(message)
        if found is None:
            found = (old, old_raw, old_value)
        elif found[2] != old_value:
            raise ImproperlyConfigured(
                f"{found[0]}={found[1]!r} and {old}={old_raw!r} disagree; {old} is the "
                f"deprecated name of {var.name}: set only {var.name}."
            )
    return None if found is None else (found[0], found[2])


def _parse_str(name: str, value: str) -> str:
    return value


def _parse_bool(name: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use true/false).")


def _parse_int(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None


def _parse_float(name: str, value: str) -> float:
    try:
        result = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    # NaN is the one value unequal to itself; neither it nor an infinity is a usable setting.
    if result != result or result in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name}={value!r} is not a finite number.")
    return result


def _parse_choice(name: str, value: str) -> str:
    # Choices compare lower-cased: ULTRON_LLM_PROVIDER=DashScope means dashscope.
    return value.lower()


def _parse_list(name: str, value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


_PARSERS: dict[str, Callable[[str, str], Any]] = {
    "str": _parse_str, "bool": _parse_bool, "int": _parse_int, "float": _parse_float,
    "choice": _parse_choice, "list": _parse_list,
}


_DECLARED = object()


def _value(var: EnvVar, default: Any = _DECLARED) -> Any:
    """Read a declared variable; ``default`` stands in for a computed (``doc_default``) one."""
    found = _read(var, _PARSERS[var.kind])
    if found is None:
        source, value = var.name, (var.default if default is _DECLARED else default)
    else:
        source, value = found
    if var.kind in ("int", "float") and value is not None:
        _check_range(source, value, var.minimum, var.maximum)
    elif var.kind == "choice":
        if value not in var.choices:
            raise ImproperlyConfigured(
                f"{source}={value!r} must be one of: {', '.join(var.choices)}."
            )
    elif var.kind == "list":
        value = list(value)
    return value


def env_get(name: str) -> Any:
    """Read a variable declared elsewhere (see the bottom of this module), with its declared
    default and checks."""
    var = REGISTRY.get(name)
    if var is None:
        raise KeyError(f"{name} is read but not declared; declare it in ultron_site/env.py")
    return _value(var)


def _spec(name: str, kind: str, default: Any, help: str | None, group: str | None,
          **details: Any) -> EnvVar:
    """Declare the variable, or (no help and no group) use its earlier declaration."""
    if help is None and group is None:
        var = REGISTRY.get(name)
        if var is None:
            raise KeyError(f"{name} is read but not declared: give help= and group=")
        expected = tuple(default) if isinstance(default, list) else default
        same = var.kind == kind and var.default == expected and all(
            getattr(var, key) == (tuple(value) if key in ("choices", "deprecated_names") else value)
            for key, value in details.items()
        )
        # A second reader must read the variable exactly as declared, or the reference would describe another.
        if not same:
            raise ValueError(f"{name} is read as {kind} {default!r} {details}, declared as {var}")
        return var
    if help is None or group is None:
        raise ValueError(f"{name}: give both help= and group=")
    return declare(name, kind, default, help=help, group=group, **details)


def env_str(
    name: str, default: str = "", *, help: str | None = None, group: str | None = None,
    deprecated_names: Iterable[str] = (), doc_default: str | None = None,
) -> str:
    # A computed default is not the declared one: the reference shows ``doc_default`` for it instead.
    var = _spec(name, "str", "" if doc_default is not None else default, help, group,
                deprecated_names=deprecated_names, doc_default=doc_default)
    return _value(var, default)


def env_bool(
    name: str, default: bool, *, help: str | None = None, group: str | None = None,
    deprecated_names: Iterable[str] = (), doc_default: str | None = None,
) -> bool:
    var = _spec(name, "bool", default, help, group, deprecated_names=deprecated_names, doc_default=doc_default)
    return _value(var, default)


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None,
    help: str | None = None, group: str | None = None, deprecated_names: Iterable[str] = (),
    doc_default: str | None = None,
) -> int:
    var = _spec(name, "int", None if doc_default is not None else default, help, group,
                minimum=minimum, maximum=maximum, deprecated_names=deprecated_names,
                doc_default=doc_default)
    return _value(var, default)


def env_float(
    name: str, default: Any, *, minimum: float | None = None, maximum: float | None = None,
    help: str | None = None, group: str | None = None, deprecated_names: Iterable[str] = (),
    doc_default: str | None = None,
) -> Any:
    """A number; ``default`` may be ``None`` (unset: the reader decides, as ``doc_default``
    tells the reference)."""
    var = _spec(name, "float", None if doc_default is not None else default, help, group,
                minimum=minimum, maximum=maximum, deprecated_names=deprecated_names,
                doc_default=doc_default)
    return _value(var, default)


def env_choice(
    name: str, default: str, choices: Iterable[str], *, help: str | None = None,
    group: str | None = None, deprecated_names: Iterable[str] = (),
) -> str:
    var = _spec(name, "choice", default, help, group, choices=tuple(choices),
                deprecated_names=deprecated_names)
    return _value(var, default)


def env_list(
    name: str, default: Iterable[str] = (), *, help: str | None = None,
    group: str | None = None, deprecated_names: Iterable[str] = (),
) -> list[str]:
    var = _spec(name, "list", tuple(default), help, group, deprecated_names=deprecated_names)
    return _value(var, tuple(default))


def _check_range(name: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}.")


# --- read before or outside settings.py ---------------------------------------------------
# Start-up (ultron_site/startup.py) reads these before Django loads the settings, the launcher
# and the embedded server read the rest; settings.py reads some of them again with env_get.

declare(
    "ULTRON_DATA_DIR", "str", "var", group="core",
    help="Directory for the embedded database, the generated secret key, static files, the "
         "models' caches (models/, cache/) and benchmark output; a relative path is taken from "
         "the project directory.",
)
declare(
    "DJANGO_SECRET_KEY", "str", "", group="core",
    help="Django's secret key. Empty: the key in $ULTRON_DATA_DIR/secret_key, which start-up "
         "creates when it runs the embedded database; with an external DATABASE_URL, set it.",
)
declare(
    "PORT", "str", "8000", group="core",
    help="HTTP port of `make run`.",
)
declare(
    "ULTRON_HOST", "str", "127.0.0.1", group="core",
    help="Bind address of `make run`.",
)
declare(
    "ULTRON_WEB_WORKERS", "str", "2", group="core",
    help="Web worker processes (gunicorn) of `make run`.",
)
declare(
    "DATABASE_URL", "str", "", group="database",
    help="An external PostgreSQL with the pgvector extension (postgres://user:pass@host/db). "
         "Empty: the embedded server under $ULTRON_DATA_DIR/pg, started on demand.",
)
declare(
    "ULTRON_EMBEDDED_PG_SHARED_BUFFERS_MB", "int", 1024, group="tuning",
    minimum=16, maximum=1_048_576,
    help="Shared buffers of the embedded PostgreSQL in MB, applied when it starts (unused with "
         "DATABASE_URL).",
)
