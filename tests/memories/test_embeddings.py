from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from memories.batching import BatchingEncoder
from memories.providers.embeddings import get_embedder


class _HeldModel:
    """A stand-in model whose first call holds until the test releases it, so the test decides
    which callers queue behind it: no timing involved."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.holding = threading.Event()
        self.release = threading.Event()

    def __call__(self, pieces: list[str]) -> np.ndarray:
        self.calls.append(list(pieces))
        if len(self.calls) == 1:
            self.holding.set()
            assert self.release.wait(10), "never released"
        if "boom" in pieces:
            raise RuntimeError("model failed")
        return np.array([[float(len(p)), float(i)] for i, p in enumerate(pieces)])


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.001)


def _queue_behind_a_busy_model(encoder: BatchingEncoder, model: _HeldModel, groups: list[list[str]]) -> dict:
    """The first group's caller takes the model and is held there; each other caller is started
    only once the one before it has queued (so the queue's order is the groups' order); then the
    model is released. Returns each group's rows or exception, by index."""
    outcomes: dict[int, object] = {}

    def call(index: int) -> None:
        try:
            outcomes[index] = encoder(groups[index])
        except RuntimeError as exc:
            outcomes[index] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(groups))]
    threads[0].start()
    assert model.holding.wait(10)
    for index, thread in enumerate(threads[1:], 1):
        thread.start()
        _until(lambda index=index: encoder.waiting() == index, f"caller {index} to queue")
    model.release.set()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    return outcomes


def test_concurrent_callers_share_batches_and_get_their_own_rows():
    model = _HeldModel()
    encoder = BatchingEncoder(model, max_pieces=64)
    groups = [["x" * n, "y" * (n + 100)] for n in range(1, 9)]
    outcomes = _queue_behind_a_busy_model(encoder, model, groups)
    # the first caller alone, then the seven that queued meanwhile in one model call
    assert [len(c) for c in model.calls] == [2, 14] and encoder.batches == 2
    for index, rows in outcomes.items():
        n = index + 1
        assert rows[:, 0].tolist() == [n, n + 100]


def test_a_lone_caller_runs_at_once_and_batches_respect_the_cap():
    calls: list[list[str]] = []

    def model(pieces: list[str]) -> np.ndarray:
        calls.append(list(pieces))
        return np.zeros((len(pieces), 2))

    assert BatchingEncoder(model, max_pieces=3)(["a"]).shape == (1, 2) and calls == [["a"]]
    held = _HeldModel()
    encoder = BatchingEncoder(held, max_pieces=3)
    # queued in this order: 1 + 1 + 1 pieces fill a batch; 2 + 2 would pass the cap; a caller
    # bigger than the cap still runs, alone
    groups = [["first"], ["a"], ["b"], ["c"], ["d", "e"], ["f", "g"], ["h", "i", "j", "k"]]
    outcomes = _queue_behind_a_busy_model(encoder, held, groups)
    assert held.calls == [["first"], ["a", "b", "c"], ["d", "e"], ["f", "g"], ["h", "i", "j", "k"]]
    assert all(isinstance(rows, np.ndarray) and len(rows) == len(groups[i]) for i, rows in outcomes.items())


def test_an_error_reaches_every_caller_of_its_batch_and_the_next_batch_still_runs():
    model = _HeldModel()
    encoder = BatchingEncoder(model, max_pieces=64)
    outcomes = _queue_behind_a_busy_model(encoder, model, [["first"], ["boom"], ["x"], ["yy"]])
    assert model.calls == [["first"], ["boom", "x", "yy"]]
    assert isinstance(outcomes[0], np.ndarray)
    for index in (1, 2, 3):  # the three callers that shared the failing batch
        assert isinstance(outcomes[index], RuntimeError) and str(outcomes[index]) == "model failed"
    assert encoder(["fine"])[0, 0] == 4.0
    assert model.calls[-1] == ["fine"]


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


def test_texts_of_different_lengths_from_many_threads_never_break_a_batch():
    """Cutting a text into windows uses a tokenizer too. On the model's own tokenizer that call
    turns padding off for everyone, and a batch being encoded at that moment came out ragged
    ('expected sequence of length 8 at dim 1 (got 6)': a 500 on search under load)."""
    embedder = get_embedder()
    embedder.embed(["warm"])
    texts = [" ".join(["docker build fails behind the proxy"] * (1 + i % 7)) for i in range(40)]
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(offset: int) -> None:
        start.wait()
        for i in range(25):
            try:
                batch = texts[(offset + i) % 40 : (offset + i) % 40 + 1 + i % 3]
                assert embedder.embed(batch).shape == (len(batch), embedder.dimensions)
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
                errors.append(exc)

    threads = [threading.Thread(target=work, args=(k * 5,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
