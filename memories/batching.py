"""Sharing one model call between threads: concurrent requests' texts run as one batch."""

from __future__ import annotations

import threading
from typing import Any


class _Request:
    __slots__ = ("pieces", "vectors", "error", "done")

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self.vectors: Any = None
        self.error: BaseException | None = None
        self.done = False


class BatchingEncoder:
    """Runs ``encode`` (texts in, one result per text out, in order: an array's rows or a list)
    for several threads at once, in one batch: spaCy's pass in redaction.

    The model must not be called from two threads at a time, and on a CPU one batch of n texts
    costs far less than n calls. So a caller that finds the model busy queues its texts; when
    the model is free, one of the waiting callers encodes everything queued (up to
    ``max_pieces``) in a single batch and hands each caller its rows. A lone caller never waits.
    """

    def __init__(self, encode, *, max_pieces: int) -> None:
        self._encode = encode
        self._max_pieces = max(1, max_pieces)
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._busy = False
        self.batches = 0  # how many batches ran (for tests and benchmarks)

    def __call__(self, pieces: list[str]) -> Any:
        request = _Request(pieces)
        with self._cond:
            self._pending.append(request)
            # While another caller runs the model, wait: it may take these texts into its next batch.
            while self._busy and not request.done:
                self._cond.wait()
            if request.done:
                return self._result(request)
            self._busy = True
        try:
            # This caller runs batches until its own texts are done; then a waiting caller takes over (notify_all).
            while not request.done:
                with self._cond:
                    batch: list[_Request] = []
                    count = 0
                    # A request over max_pieces still runs, alone; others join while the batch stays within it.
                    while self._pending and (not batch or count + len(self._pending[0].pieces) <= self._max_pieces):
                        taken = self._pending.pop(0)
                        batch.append(taken)
                        count += len(taken.pieces)
                self._run(batch)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
        return self._result(request)

    def waiting(self) -> int:
        """How many callers' texts are queued for the model right now (tests and benchmarks)."""
        with self._cond:
            return len(self._pending)

    def _run(self, batch: list[_Request]) -> None:
        pieces = [piece for item in batch for piece in item.pieces]
        try:
            vectors = self._encode(pieces)
            error = None
        except BaseException as exc:  # handed to every caller of the batch
            vectors, error = None, exc
        with self._cond:
            self.batches += 1
            start = 0
            for item in batch:
                if error is None:
                    item.vectors = vectors[start : start + len(item.pieces)]
                item.error = error
                item.done = True
                start += len(item.pieces)
            self._cond.notify_all()

    @staticmethod
    def _result(request: _Request) -> Any:
        if request.error is not None:
            raise request.error
        assert request.vectors is not None
        return request.vectors
