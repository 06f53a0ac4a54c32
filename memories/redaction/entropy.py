"""High-entropy values with no telling name or prefix: random-looking strings in the places
secrets are put.

A token of at least 16 characters from a key alphabet (base64, base64url, hex) is a secret when
its Shannon entropy is high for its length and it

- is assigned (``NAME=…``, ``name: …``, ``"name": "…"``, ``name = '…'``, ``NAME …`` after an
  upper-case name ending in KEY / SECRET / TOKEN / SALT), or is a quoted string in code;
- or is a line of its own of 40 characters or more (the body of a private key pasted without its
  ``-----BEGIN`` line, a base64 blob in a string).

What engineers need stays readable: hashes and digests under their own names (``sha256:``,
``integrity``, ``checksum``, ``commit``, ``etag`` …), commit SHAs in git output, paths, URLs,
UUIDs, versions and words.
"""

from __future__ import annotations

import math
import re

from memories.redaction.patterns import Finding, shannon_entropy

TAG = "REDACTED_CREDENTIAL"
SCORE = 0.75

_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9+/_.~-])[A-Za-z0-9+/_.~-]{16,}={0,2}(?![A-Za-z0-9+/_=.~-])")
# The name an assigned value is given, and the assignment itself, just before the token.
_ASSIGNED_RE = re.compile(
    r"""(?P<name>[A-Za-z_$][\w$.\[\]'"-]{0,80}?)['"\]]*\s*(?::=|\?=|=>|=|:)\s*[\[(]?\s*(?:b|r|byte\()?["'`]?\s*$"""
)
_CAPS_NAME_RE = re.compile(r"\b(?P<name>[A-Z][A-Z0-9_]*(?:KEY|SECRET|TOKEN|SALT|PASS|PASSWORD))\s+$")
# Names whose values are public digests, identifiers or versions, not secrets.
_PUBLIC_NAME_RE = re.compile(
    r"(?i)(?:hash|sha\d*|md5|checksum|digest|integrity|etag|fingerprint|commit|rev|revision|ref|head|parent|tree"
    r"|oid|blob|version|ver|tag|image|build|run|trace|span|request|correlation|uuid|guid|_id|^id)$"
)
# Prefixes that make what follows a published digest: sha256:…, sha512-…, h1:…, SHA256:… (ssh).
_DIGEST_PREFIX_RE = re.compile(r"(?i)(?:sha\d+|md5|h1|blake2b?|sha)[-:]$")
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX_RE = re.compile(r"^[0-9a-f]+$|^[0-9A-F]+$")

# Calibrated on labelled secrets and ordinary technical lines (bench/redaction.py): random
# base64 of n characters carries close to log2(n) bits per character; text-like tokens far less.
HEX_MIN_ENTROPY = 3.0
B64_MIN_SHARE = 0.8  # of log2(min(n, 64))


def _wordy(part: str) -> bool:
    return part.isdigit() or part.islower() or part.isupper() or (part[:1].isupper() and part[1:].islower())


def _path_like(token: str) -> bool:
    """A path or dotted name made of words (``/var/run/postgresql/.s.PGSQL.5432``,
    ``com/example/MyService``), not random characters that happen to contain a slash."""
    parts = [p for p in re.split(r"[/._-]", token) if p]
    if token.count("/") + token.count(".") < 2 or not parts:
        return False
    return sum(_wordy(p) for p in parts) >= 0.6 * len(parts)


def _random_looking(token: str) -> bool:
    core = token.rstrip("=")
    # UUIDs are tagged <UUID> by the pattern rules; ".." and "://" belong to paths and URLs, kept readable.
    if len(core) < 16 or _UUID_RE.match(core) or ".." in core or "://" in core:
        return False
    if _HEX_RE.match(core):
        return len(core) >= 32 and shannon_entropy(core) >= HEX_MIN_ENTROPY
    has_lower = any(c.islower() for c in core)
    has_upper = any(c.isupper() for c in core)
    has_digit = any(c.isdigit() for c in core)
    if not (has_lower and has_upper and has_digit):
        return False
    if _path_like(core):
        return False
    # With 64 symbols no token carries more than log2(64) = 6 bits a character, however long it is.
    return shannon_entropy(core) >= B64_MIN_SHARE * math.log2(min(len(core), 64))


def _context_allows(line: str, start: int, end: int) -> bool:
    before = line[:start]
    if _DIGEST_PREFIX_RE.search(before[-8:]):
        return False
    assigned = _ASSIGNED_RE.search(before[-120:])
    if assigned:
        name = assigned.group("name").strip("'\"[]").split(".")[-1].split("[")[-1].strip("'\"")
        return not _PUBLIC_NAME_RE.search(name)
    caps = _CAPS_NAME_RE.search(before[-80:])
    if caps:
        return True
    quote_before = before.rstrip()[-1:] in ("'", '"', "`")
    quote_after = line[end : end + 1] in ("'", '"', "`") or line[end : end + 3] == "\\n"
    if quote_before and quote_after:
        return not _HEX_RE.match(line[start:end])  # an unnamed quoted hex string is mostly a digest
    # A line of its own: a pasted key body or blob.
    rest = line[end:].strip().strip("\"',;)").replace("\\n", "")
    lead = before.strip().strip("\"'(")
    return end - start >= 40 and not lead and not rest and not _HEX_RE.match(line[start:end])


def find(text: str) -> list[Finding]:
    found: list[Finding] = []
    offset = 0
    for line in text.split("\n"):
        for match in _TOKEN_RE.finditer(line):
            token = match.group(0).strip(".")
            start = match.start() + match.group(0).find(token)
            end = start + len(token)
            if _random_looking(token) and _context_allows(line, start, end):
                found.append(Finding(offset + start, offset + end, TAG, SCORE, "entropy"))
        offset += len(line) + 1
    return found
