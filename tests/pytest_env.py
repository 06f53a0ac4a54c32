"""Loaded with ``-p tests.pytest_env`` before Django starts: the test environment.

Tests use the real offline LLM provider and the real local embedding model; a test that needs
a particular model answer points the settings at the fake LLM server in ``tests/fakes.py``.
django-q2 reads ``sync`` when it is imported, so it has to be set here, not per test.
Start-up runs here too, as in manage.py: without DATABASE_URL (pytest run on its own rather
than by ``make test``) the embedded PostgreSQL is started and DATABASE_URL set, which the
subprocesses some tests start inherit.
"""

import os
import sys
from pathlib import Path

# The agents' client of this checkout (client/), before any installed copy: a virtual
# environment shared by several checkouts has the client installed editable from one of them,
# and a checkout's tests must run its own. The subprocesses the tests start inherit it.
CLIENT = str(Path(__file__).resolve().parents[1] / "client")
sys.path.insert(0, CLIENT)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (CLIENT, os.environ.get("PYTHONPATH")) if p)

os.environ["ULTRON_Q_SYNC"] = "true"
os.environ["ULTRON_LLM_PROVIDER"] = "offline"
os.environ["ULTRON_EMBEDDING_PROVIDER"] = "local"
os.environ["ULTRON_LLM_BACKOFF_SECONDS"] = "0"
os.environ["ULTRON_API_RATE"] = "100000/min"
# Hits written in the request, where a test reads them back at once; tests/memories/test_uses.py
# covers the buffered path that serves by default.
os.environ.setdefault("ULTRON_HITS_FLUSH_SECONDS", "0")
os.environ.pop("DASHSCOPE_API_KEY", None)
os.environ.pop("OPENAI_BASE_URL", None)
# Replicas are started by the tests that read from one (tests/core/test_replicas.py).
os.environ.pop("DATABASE_REPLICA_URL", None)

from ultron_site.startup import prepare  # noqa: E402

prepare(serve=True)  # the test client serves static files
