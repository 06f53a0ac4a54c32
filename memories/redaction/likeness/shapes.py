"""The shapes a value's characters give away, whatever is around it: base64 of plain text, a
digest with its algorithm, a timestamp, a file name, the lengths commits and digests have, and
where the value starts in ``name=value`` or a Windows tool's ``/p:value``."""

from __future__ import annotations

import re
from collections.abc import Callable

_SWITCH_RE = re.compile(r"/[A-Za-z]{1,10}:(?!/)")
_NAME_PREFIX_RE = re.compile(r"-{0,2}[A-Za-z_][\w.-]{0,60}[=:]")
_ALGORITHM_PREFIX_RE = re.compile(r"(?i)^(?:sha\d*|md5|blake2[bs]?|h1|xxh\d*)[-:]")
_TIMESTAMP_RE = re.compile(r"^\d{8}T\d{4,6}Z?$|^\d{4}-\d{2}-\d{2}T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?$")
_FILE_RE = re.compile(r"^[\w.-]+\.(?:ya?ml|json|toml|ini|cfg|conf|env|py|js|mjs|ts|tsx|go|rs|java|kt|rb|php|sh|ps1|txt"
                      r"|md|lock|xml|html|css|sql|log|pem|crt|cer|key|pub|p12|pfx|jks|csv|tf|tfvars|gradle|properties)$")


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
    if re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}|^\s*[{\[]\s*\"|^%PDF|^<\?xml|^GIF8|^[a-z]{3,}(?:[ _.-][a-z]{2,})*$", decoded):
        return decoded
    return None


def digest_shaped(value: str) -> bool:
    """Bare hex of the lengths commits, digests and ids have: 7–12 (short commits), 16 (GPG key and
    trace span ids), 32, 40 and 64 characters (``0x`` and 64 is how a wallet's private key is
    written: not one of them)."""
    if value.lower().startswith("0x"):
        return False
    return 7 <= len(value) <= 12 or len(value) in (16, 32, 40, 64)


def value_of(token: str) -> tuple[str, int]:
    """The value part of ``name=value`` / ``name:value`` / ``--flag=name:value`` (its offset in the
    token), else the token."""
    offset = 0
    switch = _SWITCH_RE.match(token)  # a Windows tool's switch: xfreerdp /p:…, net use /user:…
    if switch and switch.end() < len(token):
        return token[switch.end():], switch.end()
    while True:
        match = _NAME_PREFIX_RE.match(token, offset)
        if not match or match.end() >= len(token) or "//" in token[match.end() : match.end() + 2]:
            return token[offset:], offset
        offset = match.end()


def public_shape(value: str, before: str, holds_secret: Callable[[str], bool] | None) -> bool:
    """Values whose shape or the characters just before say what they are: a digest with its
    algorithm (``sha512-…``), a memory address or a status code (``0xC000006D``), a timestamp, a
    template or variable reference (``{{ vault_secret }}``), a documented example key (AWS's
    ``…EXAMPLE``), a file name, or base64 of plain text (unless ``holds_secret`` finds a secret in
    what it encodes)."""
    if _ALGORITHM_PREFIX_RE.match(value) or _TIMESTAMP_RE.match(value) or "EXAMPLE" in value:
        return True
    if value.lower().startswith("0x") and len(value) != 66:
        return True
    if before.rstrip().endswith(("{{", "${", "%(", "{%", "<%=")) or _FILE_RE.match(value):
        return True
    decoded = base64_text(value)
    return decoded is not None and not (holds_secret and holds_secret(decoded))
