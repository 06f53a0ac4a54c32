from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from memories.providers.embeddings import BatchingEncoder, get_embedder


def _slow_encode(calls: list[list[str]]):
    def encode(pieces: list[str]) -> np.ndarray:
        calls.append(list(pieces))
        if "boom" in pieces:
            raise RuntimeError("model failed")
        time.sleep(0.05)  # long enough for the other callers to queue up
        return np.array([[float(len(p)), float(i)] for i, p in enumerate(pieces)])

    return encode


def test_concurrent_callers_share_batches_and_get_their_own_rows():
    calls: list[list[str]] = []
    encoder = BatchingEncoder(_slow_encode(calls), max_pieces=64)
    results: dict[int, np.ndarray] = {}

    def work(n: int) -> None:
        results[n] = encoder(["x" * n, "y" * (n + 100)])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(len(c) for c in calls) == 16  # every piece encoded exactly once
    assert len(calls) < 8  # and fewer model calls than callers
    for n, rows in results.items():
        assert rows[:, 0].tolist() == [n, n + 100]


def test_a_lone_caller_runs_at_once_and_batches_respect_the_cap():
    calls: list[list[str]] = []
    encoder = BatchingEncoder(_slow_encode(calls), max_pieces=3)
    assert encoder(["a"]).shape == (1, 2) and len(calls) == 1
    threads = [threading.Thread(target=encoder, args=(["p", "q"],)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(len(c) <= 3 for c in calls[1:])


def test_an_error_reaches_every_caller_of_its_batch_and_the_next_batch_still_runs():
    calls: list[list[str]] = []
    encoder = BatchingEncoder(_slow_encode(calls), max_pieces=64)
    with pytest.raises(RuntimeError, match="model failed"):
        encoder(["boom"])
    assert encoder(["fine"])[0, 0] == 4.0


def test_local_embedder_gives_the_same_vectors_alone_and_in_concurrent_batches():
    embedder = get_embedder()
    texts = [f"pip install fails with error {i} behind the corporate proxy" for i in range(12)]
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    together: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        together[i] = embedder.embed([texts[i]])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in range(len(texts)):
        assert float(alone[i] @ together[i]) == pytest.approx(1.0, abs=1e-4)
