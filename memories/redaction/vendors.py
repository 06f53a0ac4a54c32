"""Vendor token shapes from a maintained rule catalogue: Kingfisher's (PyPI
``kingfisher-secret-scanner``, Apache-2.0), run in-process on each text.

Its catalogue is the Betterleaks rule set (the successor of gitleaks' rules: hundreds of
vendors' token formats, each anchored on a prefix or on the vendor's name beside the value) and
Google's Veles detectors. Our own rules hold the shapes of our labelled families; this catalogue
is kept current by others, so a vendor that starts issuing tokens nobody here wrote a rule for is
caught when the package is upgraded. Only its matching is used: ``Scanner.scan`` runs the
compiled rules (Rust, Vectorscan) on the text's bytes in this process, with no network, no
subprocess and no file; its validation and revocation (which do call vendors) are never used.

The rules compile once per process (about 4 s of CPU on this hub's machines; its on-disk rule
cache is off, so nothing is written), at warm-up: the compiled scanner keeps no threads, so the
web server's master compiles it before it forks and the workers share it
(``ultron_site.warmup``).

Its findings are filtered like our rules' values: a stand-in (``is_reference``) is no secret, and
neither is what a rule names an identifier (``…-client-id``, ``…-account-name``, ``…-host``):
an id or a name beside a secret is not one. Where ours find the same span, ours win (higher
score) and keep their specific tags. Secret values are never logged.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from memories.redaction.patterns import Finding, is_reference

TAG = "REDACTED_CREDENTIAL"
SCORE = 0.85  # as detect-secrets' findings: below our own vendor rules, above the entropy rules
MIN_LENGTH = 8
# Rules whose value identifies an account, an application or a host rather than granting access
# (``curl-auth-user`` is not one of them: its value is ``user:password``).
_IDENTIFIER_RULE = re.compile(r"-(?:id|name|host|domain)(?:\.\d+)?$")

_lock = threading.Lock()
_scanner: Any = None


def load() -> Any:
    """The compiled scanner, built on first use (once per process)."""
    global _scanner
    if _scanner is None:
        with _lock:
            if _scanner is None:
                from kingfisher_sdk import Rules, Scanner

                # Every rule of the bundled catalogue ("low" includes the keyword-anchored generic
                # ones); cache=False: compiled here, never read from or written to a cache directory.
                _scanner = Scanner(Rules(confidence="low", cache=False))
    return _scanner


def _char_offset(data: bytes, text: str, offset: int) -> int:
    """A byte offset into ``data`` (``text`` as UTF-8) as a character offset into ``text``."""
    if len(data) == len(text):
        return offset
    return len(data[:offset].decode("utf-8", errors="ignore"))


def find(text: str) -> list[Finding]:
    """Every secret the catalogue's rules see in ``text``, as findings."""
    scanner = load()
    if len(text) < MIN_LENGTH:
        return []
    # A lone surrogate (from JSON) becomes one "?" byte: offsets stay aligned with the text.
    data = text.encode("utf-8", errors="replace")
    found: list[Finding] = []
    for finding in scanner.scan(data):
        if not finding.visible or _IDENTIFIER_RULE.search(finding.rule_id):
            continue
        secret = finding.secret
        if len(secret) < MIN_LENGTH or is_reference(secret):
            continue
        location = finding.location
        start = _char_offset(data, text, location["start_offset"])
        end = _char_offset(data, text, location["end_offset"])
        if end > start:
            found.append(Finding(start, end, TAG, SCORE, "kingfisher"))
    return found
