"""Values that could be secrets, wherever they stand: a learned secret-likeness score for any token,
read with the words around it (docs/flow.md#redaction).

Every token of a text that could be a value (not a plain word, not a path, URL, e-mail address or
stand-in) is scored by ``model.LikenessModel`` — the probability that its characters are those of
a credential, learned from values sampled from the maintained detectors' rules, random keys and
human passwords against ordinary technical tokens (``samples``). Then the context decides:

- after a **cue** in the same line — a word that names a secret, strong or weak, in English or
  Chinese ("password", "token", "credential", "key", "auth", "密码", "令牌"…), with or without a
  connector — a modest score is enough (``CUE_SCORE``);
- with **no cue**, a high score is needed (``BARE_SCORE``).

Shapes whose meaning the characters cannot tell are the context's call alone: bare hex of the
lengths commits and digests have (7–12 and 40; 32 and 64 beside a digest's name) and UUIDs stay
unless a cue names them; any other bare hex of 16 or more is scored like the rest
(``d37a8b9e09642cb73cfcf4e1 was rejected`` is no commit). Values after the words that make a
value public (``commit``, ``sha256:``, ``trace``, ``version``…) stay unless a strong cue is
nearer.
"""

from __future__ import annotations

import re

from memories.redaction.entropy import _path_like, _public_anywhere
from memories.redaction.likeness.model import likeness_model
from memories.redaction.patterns import Finding, is_reference

TAG = "REDACTED_CREDENTIAL"
SCORE = 0.7  # below the rules that name what they found: where they agree, theirs is kept
STRONG_CUE_SCORE = 0.2
CUE_SCORE = 0.5
BARE_SCORE = 0.9
MIN_LENGTH = 8  # characters of a value with no cue
MIN_LENGTH_CUED = 6

# A value runs to white space, quotes, brackets, separators or CJK text (a value glued to Chinese
# words: "密码Gbeg7x账号").
_CANDIDATE_RE = re.compile(r"[^\s\"'`()\[\]{}<>,;|\u3000-\u303f\u3400-\u9fff\uff00-\uffef]+")
_TRAILING = ".,:;?)"
_STRONG_CUE = (
    r"pass(?:word|wd|phrase|code)s?|pwd|api[ _-]?keys?|apikeys?|access[ _-]?keys?|secret[ _-]?keys?|private[ _-]?keys?"
    r"|client[ _-]?secrets?|(?:access|auth|bearer|api|refresh|session|id|oauth|bot|app)[ _-]?tokens?|bearer"
    r"|credentials?|creds|secrets?|tokens?|psk|pre-?shared[ _-]?key|seed|totp|otp|2fa|mfa|recovery[ _-]?codes?"
    r"|license[ _-]?keys?|signing[ _-]?keys?|webhook[ _-]?secrets?|community[ _-]?string|storepass|keypass"
    r"|(?:backup|recovery|2fa|mfa)[ _-]?codes?"
)
_WEAK_CUE = r"keys?|auth|login|pass|pin|cookie|signature|sig|salt|hmac|cred"
_CJK_CUE = r"密码|口令|密钥|秘钥|令牌|凭证|凭据|授权码|私钥|助记词|种子|验证码|token|key|secret"
_CUE_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(?:(?P<strong>{_STRONG_CUE})|(?P<weak>{_WEAK_CUE}))(?![A-Za-z]|[_-][A-Za-z])"
    rf"|(?P<cjk>{_CJK_CUE})")  # a cue that ends a name (DB_PASSWORD), not one inside it (PASSWORD_HASHERS, key_id)
_CUE_WINDOW = 48  # characters before a value where a cue counts
_HEX_RE = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_DIGEST_WORD_RE = re.compile(r"(?i)sha\d*|md5|hash|checksum|digest|sum|etag|integrity|fingerprint|commit|rev")
# Values that are plain words, numbers or identifiers made of words: never scored.
_PLAIN_RE = re.compile(r"^(?:[a-z]+|[A-Z][a-z]+|[A-Z]+|\d+(?:[.,]\d+)*|[a-z]+(?:[_-][a-z]+)+|[A-Z]+(?:_[A-Z]+)+)$")
# Kubernetes pod and replica set names: a deployment's name, a template hash, a random suffix.
_POD_RE = re.compile(r"^[a-z][a-z0-9-]*-[0-9a-f]{8,10}-[a-z0-9]{5}$")
# A passphrase of dictionary words after a cue that names one: "correct-orbit-violet-quartz".
_PASSPHRASE_RE = re.compile(r"^[a-z]{3,}(?:[-_.][a-z]{3,}){2,}$")
_PINNED_RE = re.compile(r"@(?:sha\d+|sha|blake\w*|md5):[0-9a-fA-F]{16,}$")
_FILE_RE = re.compile(r"^[\w.-]+\.(?:ya?ml|json|toml|ini|cfg|conf|env|py|js|mjs|ts|tsx|go|rs|java|kt|rb|php|sh|ps1|txt"
                      r"|md|lock|xml|html|css|sql|log|pem|crt|cer|key|pub|p12|pfx|jks|csv|tf|tfvars|gradle|properties)$")
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")


# Words right before a value that make it an identifier of a public object, not a key: Twilio's
# "message SM…", Stripe's "customer cus_…", "event evt_…" (with ``entropy``'s digests and build ids).
_OBJECT_WORD_RE = re.compile(
    r"(?i)\b(?:message|customer|event|invoice|order|charge|subscription|payment|refund|ticket|issue|cursor"
    r"|transaction|tx|block|pod|node|instance|snapshot|volume|ami|bucket|object|record|row|account\s+id|user\s+id"
    r"|client\s+id|tenant\s+id|app\s+id|id|ids|sid)\b[\s:=#(\[\"'`]*$")


def base64_text(value: str) -> str | None:
    """What base64 encodes when it is text or structure — a sentence, JSON, a file's magic
    (``%PDF``): data quoted in a lesson, not a key (``user:password``, basic auth, is neither)."""
    import base64
    import binascii

    if len(value) < 8 or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", value):
        return None
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if not all(c.isprintable() or c in "\n\t\r" for c in decoded):
        return None
    if re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}|^\s*[{\[]\s*\"|^%PDF|^<\?xml|^GIF8", decoded):
        return decoded
    return None


def _cue(text: str, start: int) -> str | None:
    """``strong`` or ``weak`` when a word naming a secret stands shortly before ``start`` on its line."""
    line_start = text.rfind("\n", 0, start) + 1
    window = text[max(line_start, start - _CUE_WINDOW) : start]
    found = None
    for match in _CUE_RE.finditer(window):
        found = "weak" if match.group("weak") else "strong"
    return found


def _digest_shaped(value: str, before: str) -> bool:
    """Bare hex that commits and digests look like: 7–12 or 40 characters, or 32 / 64 beside a digest's name."""
    core = value[2:] if value.lower().startswith("0x") else value
    if value.lower().startswith("0x") and len(core) == 64:
        return False  # a wallet's private key is written so; a transaction hash too, but "when in doubt"
    return 7 <= len(core) <= 12 or len(core) == 40 or (len(core) in (32, 64) and bool(_DIGEST_WORD_RE.search(before)))


def _value_of(token: str) -> tuple[str, int]:
    """The value part of ``name=value`` / ``name:value`` (its offset in the token), else the token."""
    for separator in ("=", ":"):
        name, found, value = token.partition(separator)
        if found and value and re.fullmatch(r"[A-Za-z_][\w.-]{0,60}", name) and "//" not in value:
            return value, len(name) + 1
    return token, 0


def candidates(text: str) -> list[tuple[int, int, str, str | None]]:
    """(start, end, value, cue) for each token of ``text`` the model should read."""
    out = []
    for match in _CANDIDATE_RE.finditer(text):
        token = match.group().rstrip(_TRAILING)
        start = match.start()
        if _PINNED_RE.search(token):
            continue  # an image or a package pinned by its digest: grafana/grafana@sha256:…
        value, offset = _value_of(token)
        start += offset
        end = start + len(value)
        cue = _cue(text, start)
        if offset and cue is None and re.search(r"(?i)pass|pwd|secret|token|key|auth|cred", token[:offset]):
            cue = "strong"  # the value's own name
        if len(value) < (MIN_LENGTH_CUED if cue else MIN_LENGTH) or "REDACTED" in value:
            continue
        if _PLAIN_RE.match(value) and not (cue == "strong" and _PASSPHRASE_RE.match(value)):
            continue
        if is_reference(value) or "://" in value or _EMAIL_RE.match(value) or _FILE_RE.match(value):
            continue
        if value.startswith(("/", "./", "../", "~/", "\\", "$", "%", "@")) or _path_like(value) or _POD_RE.match(value):
            continue
        if (_UUID_RE.match(value) or (_HEX_RE.match(value) and _digest_shaped(value, text[max(0, start - 40) : start]))) \
                and cue != "strong":
            continue
        out.append((start, end, value, cue))
    return out


def find(text: str) -> list[Finding]:
    model = likeness_model()
    found: list[Finding] = []
    for start, end, value, cue in candidates(text):
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line = text[line_start : line_end if line_end != -1 else len(text)]
        if cue != "strong" and (_public_anywhere(line, start - line_start, end - line_start)
                                or _OBJECT_WORD_RE.search(text[max(line_start, start - 40) : start])):
            continue
        if _UUID_RE.match(value) or _HEX_RE.match(value) or _PASSPHRASE_RE.match(value):
            probability = 1.0  # the shape is random by construction; the checks above kept the public ones
        else:
            probability = model.score(value)
        threshold = STRONG_CUE_SCORE if cue == "strong" else CUE_SCORE if cue else BARE_SCORE
        if probability >= threshold:
            found.append(Finding(start, end, TAG, SCORE, "likeness"))
    return found
