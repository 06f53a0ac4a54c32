"""Start-up: what has to happen before Django loads the settings.

``ultron_site.settings`` only reads the environment and files. Starting the embedded
PostgreSQL and creating files in the data directory happen here, in ``prepare()``, which every
entry point calls before Django is set up: ``manage.py``, ``ultron_site/wsgi.py``, the launcher
(``make run``, ``make test``), the test environment and the benchmarks. Code of your own that
calls ``django.setup()`` calls ``prepare()`` first.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ultron_site.env import env_get

ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """``ULTRON_DATA_DIR`` as an absolute path (a relative one is taken from the project)."""
    path = Path(env_get("ULTRON_DATA_DIR")).expanduser()
    return path if path.is_absolute() else (ROOT / path).resolve()


def secret_key_path(directory: Path) -> Path:
    return directory / "secret_key"


def static_root(directory: Path) -> Path:
    return directory / "static"


@dataclass(frozen=True)
class Prepared:
    database_url: str
    embedded: bool  # DATABASE_URL was unset: the embedded server is in use
    started: bool  # ... and this call started it (it was not running)


def prepare(*, serve: bool = False) -> Prepared:
    """Get the environment ready for Django's settings.

    With ``DATABASE_URL`` unset, the hub owns its data directory: start the embedded
    PostgreSQL (or attach to the running one), put its URI in ``os.environ["DATABASE_URL"]``
    (so the settings, and any child process, use it), and make sure the secret-key file and the
    static directory exist. With ``DATABASE_URL`` set nothing is started or written, except
    the static directory when ``serve`` is true (the web server serves files from it)."""
    url = env_get("DATABASE_URL")
    embedded = not url
    started = False
    directory = data_dir()
    if embedded:
        from ultron_site import embedded_db

        # Whether this call starts the server decides whether the launcher stops it at the end.
        started = not embedded_db.is_running(directory)
        url = embedded_db.ensure_running(directory)
        os.environ["DATABASE_URL"] = url
        _ensure_secret_key(secret_key_path(directory))
    if embedded or serve:
        static_root(directory).mkdir(parents=True, exist_ok=True)
    return Prepared(database_url=url, embedded=embedded, started=started)


def _ensure_secret_key(path: Path) -> None:
    """A random key, written once: to a temporary file, then linked into place, so that two
    processes starting together never see a half-written key nor overwrite each other's."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")
    try:
        with os.fdopen(fd, "w") as handle:  # mkstemp creates the file with mode 0600
            handle.write(secrets.token_urlsafe(50))
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        os.unlink(tmp)
