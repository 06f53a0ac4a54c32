"""High-entropy values with no telling name or prefix: random-looking strings in the places
secrets are put.

A token of at least 16 characters from a key alphabet (base64, base64url, hex) is a secret when
its Shannon entropy is high for its length and it

- is assigned (``NAME=…``, ``name: …``, ``"name": "…"``, ``name = '…'``, ``NAME …`` after an
  upper-case name ending in KEY / SECRET / TOKEN / SALT), or is a quoted string in code;
- or is a line of its own of 40 characters or more (the body of a private key pasted without its
  ``-----BEGIN`` line, a base64 blob in a string).

- or, at 20 characters or more, stands anywhere at all — in a sentence, a command, a URL's path
  — and looks random beyond doubt (``random_anywhere``): letters of both cases and digits with
  high entropy and few dictionary-like runs (not an identifier such as ``Argon2PasswordHasher``),
  or a run of lower-case letters and digits (or capitals and digits) with high entropy. A run of
  hex digits alone counts anywhere only behind a vendor-style prefix (``sbp_…``, ``pul-…``): bare
  hex is what digests, commits and object ids look like.

What engineers need stays readable: hashes and digests under their own names (``sha256:``,
``integrity``, ``checksum``, ``commit``, ``etag`` …), commit SHAs in git output, paths, URLs
without credentials, UUIDs, ssh public keys, ``data:`` URIs, versions and words.
"""

from __future__ import annotations

import math
import re

from memories.redaction.patterns import Finding, shannon_entropy

TAG = "REDACTED_CREDENTIAL"
SCORE = 0.75

# Padding may run long or stand inside a token that was cut ("…JqU=v"); "=" then ends the token.
_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9+/_.~-])[A-Za-z0-9+/_.~-]{16,}=*(?![A-Za-z0-9+/_.~-])")
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
# Runs of a capital and 3+ small letters: identifiers ("getUserById2FromDatabase") are mostly such
# words; random base64 is at most 58 % words in 99 tokens out of 100.
_WORDISH_RE = re.compile(r"[A-Z]?[a-z]{3,}")
WORD_SHARE_MAX = 0.6


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
    if "/" not in core and len(core) >= 32 and any(len(p) >= 32 and _HEX_RE.match(p) and shannon_entropy(p) >= HEX_MIN_ENTROPY
                                                   for p in _PIECE_SPLIT_RE.split(core)):
        return True
    has_lower = any(c.islower() for c in core)
    has_upper = any(c.isupper() for c in core)
    has_digit = any(c.isdigit() for c in core)
    if not (has_lower and has_upper and has_digit):
        return False
    if _path_like(core) or sum(len(w) for w in _WORDISH_RE.findall(core)) > WORD_SHARE_MAX * len(core):
        return False  # a path, or an identifier made of words ("Argon2PasswordHasher")
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


# Words just before a value that make it a published digest or an identifier, not a secret.
_PUBLIC_WORD_RE = re.compile(
    r"(?i)\b(?:commit|commits|sha\d*|hash|digest|checksum|fingerprint|etag|integrity|revision|rev|tree|parent"
    r"|blob|object|image|container|layer|trace|span|request|build|run|job|uuid|guid|version)\b[\s:=#(\[\"'`]*$"
)
_SSH_PUBLIC_RE = re.compile(r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-\S+|sk-\S+@openssh\.com)\s+$")
_DATA_URI_RE = re.compile(r"data:[\w.+/-]*(?:;[\w=.-]+)*;base64,$")
_DIGIT_RE = re.compile(r"\d")
_PIECE_SPLIT_RE = re.compile(r"[-_.]")
_DASH_SPLIT_RE = re.compile(r"[-_]")
_RUN_SPLIT_RE = re.compile(r"[/+.=~:]+")
_SEGMENT_SPLIT_RE = re.compile(r"[^A-Za-z0-9]+")
ANYWHERE_MIN = 20


def _classes(value: str) -> tuple[bool, bool, bool]:
    return (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value))


def _random_run(run: str) -> bool:
    """Is a run of letters and digits, with ``-`` and ``_`` inside (base64url), random: not words,
    not an identifier, not hex?"""
    pieces = [p for p in _DASH_SPLIT_RE.split(run) if p]
    joined = "".join(pieces)
    lower, upper, digit = _classes(joined)
    if not digit or len(joined) < ANYWHERE_MIN - 4:
        return False
    if lower and upper:
        return (shannon_entropy(joined) >= B64_MIN_SHARE * math.log2(min(len(joined), 64))
                and sum(len(w) for w in _WORDISH_RE.findall(joined)) <= WORD_SHARE_MAX * len(joined))
    # One case and digits (base32, lower-case tokens): one long piece, not hex, with high entropy
    # for 36 symbols (pod names and package versions are short pieces between dashes).
    return any(len(piece) >= ANYWHERE_MIN - 4 and not _HEX_RE.match(piece)
               and sum(c.isdigit() for c in piece) >= 0.1 * len(piece)
               and shannon_entropy(piece) >= 0.75 * math.log2(min(len(piece), 36)) for piece in pieces)


def random_anywhere(token: str) -> bool:
    """Random beyond doubt, whatever stands around it (see the module's docstring)."""
    core = token.rstrip("=")
    if len(core) < ANYWHERE_MIN or not _DIGIT_RE.search(core) or _UUID_RE.match(core) or ".." in core:
        return False  # every shape below has digits
    if ("/" in core or "+" in core) and not _path_like(core):
        # base64 with its own alphabet, judged whole.
        lower, upper, digit = _classes(core)
        return (lower and upper and digit
                and shannon_entropy(core) >= B64_MIN_SHARE * math.log2(min(len(core), 64))
                and sum(len(w) for w in _WORDISH_RE.findall(core)) <= WORD_SHARE_MAX * len(core))
    if any(_random_run(run) for run in _RUN_SPLIT_RE.split(core) if run):
        return True
    # Hex behind a vendor-style prefix of letters (sbp_…, pul-…, mlsn.…), never a bare digest.
    if "/" in core:
        return False  # a path or URL segment of hex is a digest, a commit or an object id
    if _PREFIXED_UUID_RE.search(core):
        return True  # waka_<uuid>, RGAPI-<uuid>, HRKU-<uuid>: a vendor's key made of a UUID
    pieces = [p for p in _SEGMENT_SPLIT_RE.split(core) if p]
    glued = _GLUED_HEX_RE.match(pieces[0]) if pieces else None
    if glued and not _DIGEST_NAME_RE.match(glued.group(1)):
        return True  # dapi0123…: letters that are not hex digits, then hex
    # One or two words of prefix, then the hex: sntryu_…, shippo_live_…, mlsn.…, lsv2_pt_…, v1.0-…
    return (len(pieces) >= 2 and bool(_PREFIX_WORD_RE.match(pieces[0])) and not _DIGEST_NAME_RE.match(pieces[0])
            and any(len(p) >= 32 and _HEX_RE.match(p) for p in pieces[1:4]))


_PREFIX_WORD_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,11}$")


# A UUID behind a word that says key or token ("pat-na1-", "sdk-", "RGAPI-", "waka_", "HRKU-").
_PREFIXED_UUID_RE = re.compile(
    r"(?i)^(?:[a-z0-9]*(?:api|key|token|secret|pat|sdk|access|auth|live|prod|sandbox|private|waka|hrku)[a-z0-9]*[-_.])+"
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)
_GLUED_HEX_RE = re.compile(r"^([A-Za-z]*[G-Zg-z][A-Za-z]*)(?:[0-9a-f]{32,}|[0-9A-F]{32,})$")


_DIGEST_NAME_RE = re.compile(r"(?i)^(?:sha\d*|md\d|h\d|blake\w*|xxh\w*|crc\d*|sum|commit|rev|ref|tree|blob|build|run"
                             r"|id|uuid|version|v|git|g|index|layer|image|container|sha\d*sum|merged|diff|overlay\d*)$")


def _public_anywhere(line: str, start: int, end: int) -> bool:
    """Does the context say a random-looking token is a digest, an identifier or public?"""
    before = line[max(0, start - 60) : start]
    if _DIGEST_PREFIX_RE.search(before[-8:]) or _PUBLIC_WORD_RE.search(before[-30:]):
        return True
    if _SSH_PUBLIC_RE.search(before) or _DATA_URI_RE.search(before):
        return True
    assigned = _ASSIGNED_RE.search(line[max(0, start - 120) : start])
    if assigned:
        name = assigned.group("name").strip("'\"[]").split(".")[-1].split("[")[-1].strip("'\"")
        return bool(_PUBLIC_NAME_RE.search(name)) and not _KEY_ID_RE.search(name)
    return False


_KEY_ID_RE = re.compile(r"(?i)(?:key|secret|token)[_-]?id$")


def _assigned_uuid(line: str, token: str, start: int) -> bool:
    """A UUID is an identifier and stays, unless it is the value of a secret's name: npm's
    ``_authToken=<uuid>``, ``HEROKU_API_KEY=<uuid>`` (some vendors' keys are UUIDs)."""
    if len(token) != 36 or not line[max(0, start - 4) : start].rstrip(" \t\"'`[(").endswith(("=", ":", ">")):
        return False
    if not _UUID_RE.match(token):
        return False
    assigned = _ASSIGNED_RE.search(line[max(0, start - 120) : start])
    if not assigned:
        return False
    name = assigned.group("name").strip("'\"[]").split(".")[-1].split("[")[-1].strip("'\"")
    return bool(_SECRET_NAME_RE.search(name))


_SECRET_NAME_RE = re.compile(r"(?i)(?:pass(?:word|wd)?|pwd|secret|token|api_?key|apikey|auth|credentials?|private_?key"
                             r"|access_?key|license_?key|licen[cs]e)$")


# Random strings with punctuation in them (Django's generated SECRET_KEY: "tzc^ujn##d8lgg+h*8%_3)m…"),
# which the token pattern above splits: a run of 24+ visible characters without spaces that has
# letters, digits and three kinds of punctuation or more, high entropy and few words.
_SYMBOLIC_RE = re.compile(r"(?<![^\s\"'`])[!-~]{24,}(?![^\s\"'`])")
_PUNCTUATION = set("!#$%^&*()_+-=[]{}|;:,.<>?~@")
_RARE_PUNCTUATION = set("!#$%^&*()[]{}|;<>?~@")  # outside base64, URLs and digests


def _symbolic(line: str) -> list[tuple[int, int]]:
    spans = []
    for match in _SYMBOLIC_RE.finditer(line):
        value = match.group().strip("\"'`,;")
        if (len(set(value) & _PUNCTUATION) < 3 or len(set(value) & _RARE_PUNCTUATION) < 2 or "://" in value
                or "/" in value or "\\" in value or _DIGEST_PREFIX_RE.match(value[:8].split(":")[0] + ":")):
            continue
        letters = "".join(c for c in value if c.isalpha())
        if (not any(c.isdigit() for c in value) or len(letters) < 8
                or sum(len(w) for w in _WORDISH_RE.findall(value)) > 0.3 * len(value)
                or re.search(r"[A-Za-z_]\w{2,}\(|\w\.\w+\(|[=!<>]=|&&|\|\||->|=>", value)):
            continue  # code: calls, comparisons, arrows
        if shannon_entropy(value) >= B64_MIN_SHARE * math.log2(min(len(value), 90)):
            start = match.start() + match.group().find(value)
            spans.append((start, start + len(value)))
    return spans


def find(text: str) -> list[Finding]:
    found: list[Finding] = []
    offset = 0
    for line in text.split("\n"):
        for match in _TOKEN_RE.finditer(line):
            token = match.group(0).strip(".")
            start = match.start() + match.group(0).find(token)
            end = start + len(token)
            if (_random_looking(token) and _context_allows(line, start, end)) or _assigned_uuid(line, token, start) or (
                    len(token) >= ANYWHERE_MIN and random_anywhere(token) and not _public_anywhere(line, start, end)):
                found.append(Finding(offset + start, offset + end, TAG, SCORE, "entropy"))
        if len(line) >= 24:
            found.extend(Finding(offset + start, offset + end, TAG, SCORE, "entropy") for start, end in _symbolic(line))
        offset += len(line) + 1
    return found
