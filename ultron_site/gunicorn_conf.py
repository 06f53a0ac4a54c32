"""gunicorn's settings for ``make run`` (``gunicorn -c python:ultron_site.gunicorn_conf``).

The application is loaded in the master (``preload_app``), which also loads the redaction
engine before it forks the workers: they share those pages instead of each loading its own
copy. A worker loads what cannot cross a fork (the embedding model, ``ultron_site.warmup``)
before it accepts a connection, so no request waits for a model and ``/api/health`` is ``ok``
from a worker's first answer.
"""

from __future__ import annotations

preload_app = True


def when_ready(server) -> None:  # noqa: ANN001  (gunicorn's hook signature)
    from ultron_site.warmup import preload_before_fork

    server.log.info("loading the redaction engine (shared by the workers)")
    server.log.info("redaction engine loaded in %.1f s", preload_before_fork())


def post_worker_init(worker) -> None:  # noqa: ANN001
    from ultron_site.warmup import warm_up

    worker.log.info("worker warm in %.1f s", warm_up())


def worker_exit(server, worker) -> None:  # noqa: ANN001, ARG001
    from memories.services import uses_flush

    written = uses_flush()  # the hits this worker buffered (memories/services/uses.py)
    if written:
        worker.log.info("recorded %d buffered memory uses on exit", written)
