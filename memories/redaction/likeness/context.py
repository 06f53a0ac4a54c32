"""How much the words around a value say it is a secret: a logistic regression over its context.

The value itself is masked; what is read is its clause — up to six words before it and five after,
cut at the end of a sentence — as binary features: each word and its distance (nearest, second,
further), the pairs of neighbouring words, the connector right before the value (``is``, ``:``,
``=``), and whether the value opens or closes the clause. Chinese text is read as its characters
and their pairs. Other values in the clause read as ``#v``.

Fitted on three sources, at first use, and cached under the data directory like the likeness model;
scoring is a few dictionary lookups:

- ``context_samples.sentences``: templates where a secret stands, and the same shapes of sentence
  around a public value;
- ``data/contexts_*.jsonl``: about 3,500 sentences written one by one (runbooks, chat, commit
  messages, tables, postmortems, English, Chinese and both mixed; the second sets on purpose the
  hard ones: a verb and no noun, a cue far away or after the value, codes against ordinary
  numbers, public values among a secret's words), each
  with ``{V}`` where a secret or a public value stands. They carry the variety templates cannot:
  verbs that imply a credential with no noun ("re-keyed the cluster to …"), cues far from the value
  or after it, and public values with a secret's words around them ("the password reset ticket …").
  Each counts ``WRITTEN_WEIGHT`` times a template sentence;
- the contexts of values in the shipped lessons (public).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memories.redaction.likeness import model as likeness_model_module

_VERSION = 6
REGULARISATION_C = 4.0
WRITTEN_WEIGHT = 3.0  # a written sentence against a template's: one shape each, not one of many fillings
WRITTEN = Path(__file__).resolve().parent / "data"
BEFORE_WORDS = 6
AFTER_WORDS = 5
_WINDOW = 100  # characters read on each side
_TOKEN_RE = re.compile(r"[A-Za-z][A-Za-z_'’]*|[\u3400-\u9fff]|[:=：]|\S*\d\S*")
_CLAUSE_END_RE = re.compile(r"[.;!?。；！？](?:\s|$)|\n|[。；！？]")
_CONNECTORS = {"is", "was", "are", ":", "=", "：", "to", "with", "as", "是", "为"}


def _tokens(text: str) -> list[str]:
    """Words in lower case, a plural's ``s`` dropped (``codes`` reads as ``code``); a Chinese
    character joined with the one before it (``密码`` reads as ``密``, ``密码``)."""
    out: list[str] = []
    for token in _TOKEN_RE.findall(text):
        if any(c.isdigit() for c in token):
            out.append("#v")
        elif "\u3400" <= token <= "\u9fff":
            out.append(token)
            if len(out) > 1 and len(out[-2]) == 1 and "\u3400" <= out[-2] <= "\u9fff":
                out.append(out[-2] + token)
        else:
            word = token.lower().rstrip("'’")
            out.append(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return out


def split_words(value: str) -> list[str]:
    """The words of a value written as one (``maple.river``, ``cedar_cotton``, ``a b``)."""
    return [w for w in _WORDS_RE.split(value) if w]


def clause_around(text: str, start: int, end: int) -> tuple[str, str]:
    """The clause's text before ``start`` and after ``end``, within the window."""
    before = text[max(0, start - _WINDOW) : start]
    ends = [m.end() for m in _CLAUSE_END_RE.finditer(before)]
    if ends:
        before = before[ends[-1]:]
    after = text[end : end + _WINDOW]
    found = _CLAUSE_END_RE.search(after, 1 if after[:1] in ".;!?" else 0)
    if found:
        after = after[: found.start()]
    return before, after


def features(before: str, after: str) -> list[str]:
    left = _tokens(before)[-BEFORE_WORDS:]
    right = _tokens(after)[:AFTER_WORDS]
    out: list[str] = []
    for distance, token in enumerate(reversed(left), start=1):
        out.append(f"b{min(distance, 3)}:{token}")
        out.append(f"b:{token}")
    for distance, token in enumerate(right, start=1):
        out.append(f"a{min(distance, 3)}:{token}")
        out.append(f"a:{token}")
    out += [f"bb:{a}_{b}" for a, b in zip(left, left[1:], strict=False)]
    out += [f"ab:{a}_{b}" for a, b in zip(right, right[1:], strict=False)]
    if left and left[-1] in _CONNECTORS:
        out.append(f"conn:{left[-1]}")
    if not left:
        out.append("opens")
    if not right:
        out.append("closes")
    return out


_WORDS_RE = re.compile(r"[\s._-]+")
TECHNICAL_SHARE = 0.5
_IDENTIFIER_PART_RE = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}(?![a-z])")


def technical_words(limit: int = 40000) -> frozenset[str]:
    """The words programs are named with: the parts of the standard library's identifiers
    (``get_user_by_id`` → get, user) found in at least two different names."""
    import io
    import sysconfig
    import tokenize
    from collections import Counter

    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "test" not in p.parts and "tests" not in p.parts
                   and "idlelib" not in p.parts and "site-packages" not in p.parts)
    names: set[str] = set()
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
            names.update(t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
                         if t.type == tokenize.NAME)
        except (SyntaxError, UnicodeDecodeError, tokenize.TokenError, IndentationError, OSError):
            continue
        if len(names) >= limit:
            break
    counts = Counter(part.lower() for name in names for part in set(_IDENTIFIER_PART_RE.findall(name)))
    return frozenset(word for word, n in counts.items() if n >= 2)


@dataclass(frozen=True)
class ContextModel:
    weights: dict[str, float]
    intercept: float
    examples: int
    technical: frozenset[str] = frozenset()
    prose: frozenset[str] = frozenset()
    common: frozenset[str] = frozenset()

    def ordinary_word(self, value: str) -> bool:
        """Is every word of ``value`` one that lessons are written with (``disabled``, ``nightly``,
        ``production``) or programs are named with? A password of one word is rarely such a word
        (``walrus``, ``pelican_orbit``); what the clause says decides the rest."""
        words = [w.lower() for w in _WORDS_RE.split(value) if w]
        return bool(words) and all(w in self.prose or w in self.technical for w in words)

    def unusual_words(self, value: str) -> int:
        """How many words of ``value`` (of four letters or more) are words that lessons and programs
        are not written with, when they are at least two thirds of its words (else 0)? A
        passphrase's words are drawn at random from a dictionary; a sentence's, a name's or an
        issue key's are not."""
        words = [w.lower() for w in _WORDS_RE.split(value) if len(w) >= 4]
        unusual = sum(w not in self.common and w not in self.technical for w in words)
        return unusual if unusual * 3 >= 2 * len(words) else 0

    def prose_words_share(self, value: str) -> float:
        """The share of the words of ``value`` (three letters or more) that lessons or programs are
        written with, each seen at least twice."""
        words = [w.lower() for w in _WORDS_RE.split(value) if len(w) >= 3]
        return sum(w in self.common or w in self.technical for w in words) / max(1, len(words))

    def technical_share(self, words: list[str]) -> float:
        """The share of ``words`` that programs are named with (a name, not a passphrase)."""
        return sum(len(w) <= 2 or w.lower() in self.technical for w in words) / max(1, len(words))

    def names_a_thing(self, value: str) -> bool:
        """Are at least half of the words of ``value`` the words programs are named with
        (``node_modules_cache_dir``, ``round robin mode``), so that it reads as a name?"""
        return self.technical_share(_WORDS_RE.split(value)) >= TECHNICAL_SHARE

    def score(self, text: str, start: int, end: int) -> float:
        """The probability that the value at ``text[start:end]`` is a secret, from its clause."""
        before, after = clause_around(text, start, end)
        return _score(self, before, after)

    def compute(self, before: str, after: str) -> float:
        found = set(features(before, after))
        total = sum(self.weights.get(f, 0.0) for f in found) / math.sqrt(max(1, len(found)))
        decision = self.intercept + total
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, decision))))

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


@functools.lru_cache(maxsize=4096)
def _score(model: ContextModel, before: str, after: str) -> float:
    return model.compute(before, after)


def _masked(sentence: str) -> tuple[str, str]:
    """The clause around ``{V}`` in a sentence, the value masked."""
    from memories.redaction.likeness import context_samples

    at = sentence.index(context_samples.VALUE)
    return clause_around(sentence.replace(context_samples.VALUE, "VALUE", 1), at, at + len("VALUE"))


def written_files() -> list[Path]:
    return sorted(WRITTEN.glob("contexts_*.jsonl"))


def written_sentences() -> Iterator[tuple[str, int]]:
    """(sentence holding ``{V}``, label) from the written sets: 1 where the value is a secret."""
    for path in written_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row["text"].count("{V}") != 1 or row["label"] not in ("secret", "public"):
                raise ValueError(f"{path.name}:{number}: a sentence holds one {{V}} and a label secret or public")
            yield row["text"], int(row["label"] == "secret")


def examples(seed: int = 46) -> tuple[list[tuple[str, str]], list[int], list[float]]:
    """(before, after) contexts, labels and weights: the templates' sentences, the written
    sentences, and the contexts of the values in the shipped lessons (public: they are the hub's
    own examples of ordinary lessons)."""
    from memories.redaction.likeness import context_samples, samples

    contexts: list[tuple[str, str]] = []
    labels: list[int] = []
    weights: list[float] = []
    for sentence, label in dict(context_samples.sentences(seed)).items():  # each sentence once
        contexts.append(_masked(sentence))
        labels.append(label)
        weights.append(1.0)
    for sentence, label in written_sentences():
        contexts.append(_masked(sentence))
        labels.append(label)
        weights.append(WRITTEN_WEIGHT)
    value_re = re.compile(r"(?<!\S)[\w./:@+-]*\d[\w./:@+-]*(?!\S)")
    for text in samples.shipped_texts():
        for match in value_re.finditer(text):
            if len(match.group()) >= 6:
                contexts.append(clause_around(text, match.start(), match.end()))
                labels.append(0)
                weights.append(1.0)
    return contexts, labels, weights


def fit(contexts: list[tuple[str, str]], labels: list[int], weights: list[float] | None = None) -> ContextModel:
    import numpy as np
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    index: dict[str, int] = {}
    rows, cols, values = [], [], []
    for row, (before, after) in enumerate(contexts):
        found = set(features(before, after))
        weight = 1.0 / math.sqrt(len(found)) if found else 0.0
        for feature in found:
            rows.append(row)
            cols.append(index.setdefault(feature, len(index)))
            values.append(weight)
    matrix = csr_matrix((values, (rows, cols)), shape=(len(contexts), len(index)))
    regression = LogisticRegression(C=REGULARISATION_C, max_iter=2000, solver="liblinear", class_weight="balanced")
    regression.fit(matrix, np.asarray(labels), sample_weight=None if weights is None else np.asarray(weights))
    coefficients = regression.coef_[0]
    learned = {f: float(coefficients[c]) for f, c in index.items() if abs(coefficients[c]) > 1e-6}
    prose, common = prose_words()
    return ContextModel(learned, float(regression.intercept_[0]), len(contexts), technical_words(), prose, common)


_PROSE_WORD_RE = re.compile(r"[A-Za-z]{2,}")


def prose_words() -> tuple[frozenset[str], frozenset[str]]:
    """The words of the shipped lessons and of the written sentences (their values masked), in
    lower case, with English's stop words: the vocabulary of ordinary technical prose — every word
    seen, and the words seen at least twice (a word seen once may be a lesson's own example of a
    passphrase)."""
    from collections import Counter

    from memories.redaction.likeness import samples
    from memories.redaction.names import stop_words

    counts: Counter[str] = Counter()
    for text in samples.shipped_texts():
        counts.update(w.lower() for w in _PROSE_WORD_RE.findall(text))
    for sentence, _label in written_sentences():
        counts.update(w.lower() for w in _PROSE_WORD_RE.findall(sentence.replace("{V}", " ")))
    stops = frozenset(stop_words())
    return stops | frozenset(counts), stops | frozenset(w for w, n in counts.items() if n >= 2)


def inputs_digest() -> str:
    from memories.redaction.likeness import context_samples, samples

    digest = hashlib.sha256()
    for module in (context_samples, samples):
        digest.update(Path(str(module.__file__)).read_bytes())
    digest.update(Path(__file__).read_bytes())
    digest.update(f"|v{_VERSION}|C{REGULARISATION_C}|".encode())
    for path in [*samples.data_files(), *written_files()]:
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


_lock = threading.Lock()
_model: ContextModel | None = None


def context_model() -> ContextModel:
    """The fitted model, loaded from the cache or fitted once per process."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = likeness_model_module.load_or_fit(
                    "secret-context", inputs_digest(), ContextModel, lambda: fit(*examples()))
    return _model
