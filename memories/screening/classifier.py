"""The learned side of the screen: a prompt-injection classifier, behind one small interface
and chosen by ``ULTRON_SCREEN_CLASSIFIER``.

``defender`` is StackOne Defender's Tier 2 model (package ``stackone-defender``, Apache-2.0): an
int8 MiniLM in ONNX (~22 MB, shipped inside the wheel, nothing downloaded), run on the ONNX
Runtime the hub already uses for embeddings; a few milliseconds a field on two cores. It was
trained on tool outputs carrying injections, so its thresholds here were chosen on the hub's own
labelled memories (bench/screen.py), not taken from the package. ``off`` runs the rules alone.

The package's own wrapper answers a failed inference with a score of 0 ("skipped"); this adapter
raises instead, so the policy holds the memory: the screen never fails open."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings


class ClassifierError(RuntimeError):
    pass


@dataclass(frozen=True)
class Score:
    main: float  # how much the text reads as an injection (0..1)
    aux: float | None  # the model's second head: the text discusses or quotes injections


class InjectionClassifier(Protocol):
    name: str

    def scores(self, texts: list[str]) -> list[Score]: ...


# Below this many characters the package does not classify (it answers "skipped", score 0).
_MIN_CHARS = 10
# A field longer than this is scored by the package's sentence chunks (max over the chunks).
_LONG_CHARS = 1200


class DefenderClassifier:
    name = "defender"

    def __init__(self) -> None:
        from stackone_defender.classifiers.tier2_classifier import create_tier2_classifier

        self._model = create_tier2_classifier()
        self._model.warmup()
        if not self._model.is_ready():
            raise ClassifierError("the injection classifier's model did not load")

    def _one(self, text: str) -> Score:
        if len(text.strip()) < _MIN_CHARS:
            return Score(0.0, None)
        if len(text) > _LONG_CHARS:
            chunked = self._model.classify_by_chunks(text)
            if chunked.get("skipped"):
                reason = str(chunked.get("skip_reason") or "")
                if "error" in reason.lower():
                    raise ClassifierError(reason)
                return Score(0.0, None)
            return Score(float(chunked["score"]), None)
        result = self._model.classify(text)
        if result.skipped:
            reason = result.skip_reason or ""
            if "too short" in reason.lower():
                return Score(0.0, None)
            raise ClassifierError(reason or "the injection classifier skipped the text")
        return Score(float(result.score), None if result.aux is None else float(result.aux))

    def scores(self, texts: list[str]) -> list[Score]:
        return [self._one(text) for text in texts]


class NoClassifier:
    name = "off"

    def scores(self, texts: list[str]) -> list[Score]:
        return [Score(0.0, None) for _ in texts]


_loaded: dict[str, InjectionClassifier] = {}
_lock = threading.Lock()


def get_classifier() -> InjectionClassifier:
    """The configured classifier, loaded once per process (``ClassifierError`` when it cannot be)."""
    name = settings.ULTRON_SCREEN_CLASSIFIER
    with _lock:
        if name not in _loaded:
            try:
                _loaded[name] = DefenderClassifier() if name == "defender" else NoClassifier()
            except ClassifierError:
                raise
            except Exception as exc:  # an import or model error: the policy holds what it screens
                raise ClassifierError(f"the injection classifier could not load: {exc}") from exc
        return _loaded[name]
