"""Plain text utilities of the memory service: normalisation, hashing, token counts and
budgets, tags, and the text a memory is embedded as. No judgement lives here (see
``memories.judgements``)."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WS_RE = re.compile(r"\s+")
# Rough token count: one per CJK character, one per word, one per other symbol.
_TOKEN_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])|\n+")


def normalise_space(text: str) -> str:
    return _WS_RE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(content: str, context: str, resolution: str) -> str:
    """Hash of the normalised body: the exact-duplicate fast path (case and spacing ignored)."""
    # Joined with a unit separator: the same words split differently between the fields hash differently.
    body = "\x1f".join(normalise_space(part).casefold() for part in (content, context, resolution))
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def estimate_tokens(text: str) -> int:
    return len(_TOKEN_RE.findall(text))


def truncate_tokens(text: str, budget: int) -> str:
    """Cut ``text`` to about ``budget`` tokens, at a sentence boundary when one is near."""
    text = normalise_space(text)
    if budget <= 0 or not text:
        return ""
    matches = list(_TOKEN_RE.finditer(text))
    if len(matches) <= budget:
        return text
    cut = matches[budget - 1].end()
    head = text[:cut]
    # Prefer the last sentence end in the kept part, if it keeps at least half of it.
    ends = [m.end() for m in re.finditer(r"[.!?。！？]", head)]
    if ends and ends[-1] >= len(head) // 2:
        return head[: ends[-1]].rstrip() + " …"
    return head.rstrip(" ,;:-") + "…"


def first_sentence(text: str, *, min_words: int = 3) -> str:
    """The first sentence; a fragment shorter than ``min_words`` ("npm ERR!") takes the next."""
    text = normalise_space(text)
    taken: list[str] = []
    for part in _SENTENCE_END_RE.split(text):
        if part.strip():
            taken.append(part.strip())
            # Chinese has no spaces to count words by: a CJK sentence stands on its own.
            if len(" ".join(taken).split()) >= min_words or any(0x3400 <= ord(c) <= 0x9FFF for c in part):
                break
    return " ".join(taken) if taken else text


_MARKER_RE = re.compile(r"<([a-z][a-z0-9_]*)>")


def normalise_tags(tags: list[str], *, max_tags: int, max_chars: int) -> list[str]:
    """Lower-case, trim, collapse spaces, drop empties and duplicates (order kept), cap count.
    Redaction markers keep their capitals (``<PERSON>``)."""
    seen: list[str] = []
    for tag in tags:
        clean = normalise_space(str(tag)).lower()[:max_chars].strip()
        clean = _MARKER_RE.sub(lambda m: f"<{m.group(1).upper()}>", clean)
        if clean and clean not in seen:
            seen.append(clean)
    return seen[:max_tags]


def memory_body(content: str, context: str, resolution: str) -> str:
    """A memory's body as one text (for comparing two memories' details)."""
    return "\n".join(part for part in (content, context, resolution) if part)


# Which text of a memory is embedded; stored with the embedding space, so vectors of an older
# format are re-embedded (``manage.py reembed``). 1: "<type>: content" + context + resolution;
# 2: the body alone, so that one vector serves the offline type judgement, dedup and search.
EMBEDDING_TEXT_FORMAT = 2


def embedding_text(content: str, context: str, resolution: str) -> str:
    """The text that is embedded for a memory: all of its body (content, context, resolution)."""
    lines = [content.strip()]
    if context.strip():
        lines.append(f"Context: {context.strip()}")
    if resolution.strip():
        lines.append(f"Resolution: {resolution.strip()}")
    return "\n".join(lines)
