"""Ready means ready: what the first request would otherwise wait for is loaded before the hub
says it is healthy.

A process that serves requests needs the redaction engine (Presidio with spaCy's English model,
the secret detectors and their compiled rule catalogue), the embedding model and the offline type
classifier (trained on start-up from the shipped examples, with the embedding model). Loaded
lazily, they made a fresh hub's first upload wait a minute or more. ``warm_up`` loads them all; ``/api/health`` answers
``warming`` (503) until this process has done so.

Under ``make run`` the web server's master process loads what can cross a fork — the redaction
engine, the largest part — before it forks its workers (``ultron_site.gunicorn_conf``), so the
workers share those pages instead of each loading its own copy. The embedding model cannot: its
inference runtime keeps a pool of threads, which a forked child does not have, and a child using
a parent's model waits for them forever. Each worker loads it (and the type classifier, which is
trained with it) itself, before it takes its first request. Any other process (``runserver``, a
test client) starts the warm-up in the background on its first health check.
"""

from __future__ import annotations

import logging
import threading
import time

logger = logging.getLogger("ultron.warmup")

COLD, WARMING, READY, FAILED = "cold", "warming", "ready", "failed"

_lock = threading.Lock()
_state = COLD
_error = ""


def warm_state() -> tuple[str, str]:
    """This process's warm-up: (``cold``/``warming``/``ready``/``failed``, the failure's message)."""
    return _state, _error


def warm_up() -> float:
    """Load everything a request may need, in this thread; return the seconds it took. Safe to
    call again (each part loads once per process; a second call only checks)."""
    global _state, _error
    started = time.perf_counter()
    with _lock:
        if _state != READY:
            _state = WARMING
    try:
        _load()
    except Exception as exc:  # the health check reports it; requests will meet it too
        logger.exception("warm-up failed")
        with _lock:
            _state, _error = FAILED, f"{type(exc).__name__}: {exc}"
        raise
    with _lock:
        _state, _error = READY, ""
    seconds = time.perf_counter() - started
    logger.info("warm: models and engines loaded in %.1f s", seconds)
    return seconds


def warm_up_in_background() -> None:
    """Start ``warm_up`` in a daemon thread unless one has started (or finished) already."""
    global _state
    with _lock:
        if _state != COLD:
            return
        _state = WARMING
    threading.Thread(target=_quietly, name="ultron-warm-up", daemon=True).start()


def _quietly() -> None:
    try:
        warm_up()
    except Exception:  # noqa: BLE001  (logged and reported by warm_up)
        pass


def preload_before_fork() -> float:
    """Load what a forked child can share (the redaction engine), nothing that keeps threads;
    return the seconds it took. This process is not marked warm: it serves nothing itself."""
    started = time.perf_counter()
    _load_shareable()
    return time.perf_counter() - started


def _load_shareable() -> None:
    from memories.redaction.policy import Occasion, redact_one_for

    # Every detector runs on a text that has something for each: Presidio's engine and spaCy's
    # model, detect-secrets' plugins, Kingfisher's rule catalogue (compiled here, ~4 s of CPU; the
    # compiled scanner keeps no threads, so it crosses the fork), the number and address rules.
    redact_one_for(Occasion.MEMORY, "Ada Lovelace wrote to ada@example.com from 10.1.2.3: "
                                    "export API_TOKEN=ghp_000000000000000000000000000000000000")


def _load() -> None:
    from memories.judgements.prototypes import type_model
    from memories.providers.embeddings import get_embedder
    from memories.screening.model import screen_model

    _load_shareable()
    get_embedder().embed(["warm-up: the first query of a fresh hub"])
    type_model()
    screen_model()
