"""What a sentence calls a value: the words right before it name what it is.

"trace id 0af7…", "client_id=0oa1…", "Correlation-ID: 4bf9…", "the receiving address bc1q…", "the
peer's public key 3huo…", "密钥 ID 6b1e…": the nearest word before the value (connectors such as
"is", "=", "of the" skipped) is the noun the value stands for. When that noun names an identifier,
a digest or a public key, the value is one — whatever cue word stands further back ("令牌过期后，
trace id …"). The guessing detectors (entropy, the likeness score, cue words, detect-secrets'
keyword rules) defer to it; the rules that recognise a credential by its own shape do not.

A session id, a key's secret part and a private key are not public: "session id", "secret key",
"private key" stay credentials. A documented example credential (AWS's ``AKIAIOSFODNN7EXAMPLE``,
``…EXAMPLEKEY``) is published in the vendor's docs and stays readable wherever it stands.
"""

from __future__ import annotations

import re

# Nouns a value stands for when it is an identifier, a digest or public.
_PUBLIC_HEAD = frozenset(
    "id ids uid uuid guid identifier identifiers trace traceid span request requestid correlation commit commits sha "
    "hash digest checksum fingerprint etag revision rev build job deployment version tag image container layer "
    "object arn address addr recipient cursor pubkey publickey nonce".split()
)
_PUBLIC_PAIR = frozenset({("public", "key"), ("public", "keys"), ("host", "key"), ("verify", "key"),
                          ("verifying", "key")})
# Heads whose "id" is a credential: a session id is what a session cookie carries, a token id
# (Vault) and a secret id (AppRole) are the secret itself.
_SECRET_MODIFIER = frozenset({"session", "sess", "sid", "secret", "private", "auth", "login", "token"})
_CJK_PUBLIC_RE = re.compile(r"(?:地址|公钥|指纹|哈希|摘要|校验和|提交|版本|镜像|请求|追踪|跟踪|编号|标识)\s*(?:ID|Id|id|号)?$")
_CJK_SECRET_RE = re.compile(r"(?:会话|私钥|密钥的值|密码)\s*(?:ID|Id|id|号)?$")
# Nouns a value stands for when it is a credential; "key" only with a modifier that is not a map's.
_SECRET_HEAD = frozenset(
    "password passwords passwd pwd passphrase passcode pin secret secrets token tokens credential credentials creds psk "
    "cookie seed apikey".split()
)
_NOT_SECRET_MODIFIER = frozenset(
    "cache idempotency object partition sort primary foreign dedup dedupe lookup map dict row s3 public host registry "
    "group shard hash index json yaml config env environment dictionary redis memcached".split()
)
_ARTICLE = frozenset({"", "the", "a", "an", "this", "that", "its", "their", "our", "my", "same", "new", "old"})
_CJK_SECRET_HEAD_RE = re.compile(r"(?:密码|口令|密钥|秘钥|令牌|凭证|凭据|私钥|签名密钥)\s*$")
# Connectors between a noun and its value: "is", "was", "of the", "=", ":", quotes, brackets.
_CONNECTOR_RE = re.compile(
    r"(?i)(?:[\s:=#(\[\"'`,>]|\b(?:is|was|were|are|be|being|of|for|the|a|an|its|their|our|to|as|called|named"
    r")\b|是|为|：)+$"
)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*$")
_CAMEL_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_EXAMPLE_RE = re.compile(r"[A-Za-z0-9/+=_-]{0,40}EXAMPLE[A-Za-z0-9/+=_-]{0,40}")
_HEXISH_RE = re.compile(r"[0-9a-fA-F-]{8,64}")


def _parts(word: str) -> list[str]:
    """``client_id`` → ``client id``; ``PublicKey`` → ``public key``; ``Correlation-ID`` → ``correlation id``."""
    out: list[str] = []
    for piece in re.split(r"[_.-]+", word):
        out.extend(p.lower() for p in _CAMEL_RE.findall(piece))
    return [p for p in out if p]


def _head(text: str, start: int) -> tuple[str, list[str]]:
    """The text before the noun of ``text[start:]`` and the noun's words, last two at most."""
    low = max(0, start - 80)
    line_start = max(low, text.rfind("\n", low, start) + 1)
    before = text[line_start:start]
    connector = _CONNECTOR_RE.search(before)
    head_end = connector.start() if connector else len(before)
    stem = before[:head_end]
    cjk = stem
    words: list[str] = []
    for _ in range(2):  # the head word and the one before it ("public key", "trace id")
        match = _WORD_RE.search(stem)
        if not match:
            break
        words[:0] = _parts(match.group())
        stem = stem[: match.start()].rstrip(" \t'\"`")
        if len(words) >= 2:
            break
    return cjk, words


def named_public(text: str, start: int, value: str = "") -> bool:
    """Do the words just before ``text[start:]`` (the value ``value``) name it an identifier, a
    digest or a public key? A "key id" is public when it is hex or a UUID (a KMS or GPG key's id);
    a vendor's key id with its own prefix (``rzp_live_…``) is half of a key pair."""
    stem, words = _head(text, start)
    if _CJK_SECRET_RE.search(stem):
        return False
    if _CJK_PUBLIC_RE.search(stem):
        return True
    if not words:
        return False
    head = words[-1]
    modifier = words[-2] if len(words) > 1 else ""
    if "access" in words:  # an access key's id is half of the key pair ("AccessKeyId: LTAI…")
        return False
    if modifier in _SECRET_MODIFIER or head in _SECRET_MODIFIER:
        return False
    if modifier in ("key", "keys") and head in ("id", "ids"):
        return bool(_HEXISH_RE.fullmatch(value))
    return head in _PUBLIC_HEAD or (modifier, head) in _PUBLIC_PAIR


def named_secret(text: str, start: int) -> bool:
    """Do the words just before ``text[start:]`` name it a credential — "the HMAC key …", "webhook
    secret: …", "密钥 …" — rather than a key of a map, a cache or a table ("cache key", "idempotency
    key", "the key …" alone say nothing)?"""
    stem, words = _head(text, start)
    if _CJK_SECRET_HEAD_RE.search(stem):
        return True
    if not words or named_public(text, start, "-"):
        return False
    head = words[-1]
    modifier = words[-2] if len(words) > 1 else ""
    if head in _SECRET_HEAD:
        return modifier not in _NOT_SECRET_MODIFIER
    return head in ("key", "keys") and modifier not in _NOT_SECRET_MODIFIER and modifier not in _ARTICLE


def documented_example(value: str) -> bool:
    """A vendor's documented example credential (``AKIAIOSFODNN7EXAMPLE``): published, not a secret."""
    return len(value) >= 16 and bool(_EXAMPLE_RE.fullmatch(value))


_RUN_RE = re.compile(r"[A-Za-z0-9]+")


def _filler(run: str) -> bool:
    """One character repeated (``xxxx``, ``0000``), or after a letter (``T00000000``)."""
    distinct = len(set(run.lower()))
    return len(run) >= 4 and (distinct == 1 or (len(run) >= 8 and distinct == 2))


def stand_in(value: str) -> bool:
    """Is ``value`` a credential's shape with nothing secret in it: a short prefix and a filler
    (``ghp_xxxxxxxxxxxx``, ``sk-...``, ``T00000000/B00000000/XXXXXXXX``), a run of one digit
    (``0000``), or placeholders in a URL (``postgres://<user>:<password>@<host>``)?"""
    from memories.redaction.patterns import is_reference

    if "<" in value and ">" in value and is_reference(value.split("@")[0].split("//")[-1].split(":")[-1]):
        return True
    runs = _RUN_RE.findall(value)
    if not runs:
        return False
    if all(run.isdigit() for run in runs):
        return len(set("".join(runs))) == 1 and len("".join(runs)) >= 4
    filled = any(_filler(run) for run in runs) or "..." in value or "\u2026" in value
    return filled and all(len(run) <= 4 or _filler(run) for run in runs)
