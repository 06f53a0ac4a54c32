"""Password hashes and crypt strings (docs/flow.md#redaction).

A password hash is a credential: it can be cracked offline or replayed (NTLM pass-the-hash,
Kerberos roasting), and it names an account. The shapes are the formats' own, not any vendor's:

- modular crypt ``$<id>$…`` — ``$1$`` MD5-crypt, ``$2a$``/``$2b$``/``$2y$`` bcrypt, ``$5$``/``$6$``
  SHA-crypt, ``$y$`` yescrypt, ``$apr1$``, ``$argon2id$``, ``$scrypt$``, Cisco ``$8$``/``$9$``, and the
  cracking-tool forms of captured hashes (``$krb5asrep$``, ``$krb5tgs$``, ``$DCC2$``…): any
  ``$name$`` followed by hash material;
- ``<algorithm>$…$…`` as Django and passlib store them (``pbkdf2_sha256$600000$salt$hash``,
  ``argon2$argon2id$…``, ``bcrypt_sha256$…``);
- LDAP ``{SSHA}…``, ``{SSHA512}…``, ``{CRYPT}…`` and kin;
- LM:NT hash pairs (``aad3b435…:31d6cfe0…``, the pwdump / secretsdump shape) and NetNTLM
  challenge-responses (``user::DOMAIN:challenge:response:blob``);
- MySQL ``*<40 hex>``, PostgreSQL ``md5<32 hex>`` and ``SCRAM-SHA-256$<iterations>:…``.
"""

from __future__ import annotations

import re

from memories.redaction.patterns import Rule

TAG = "PASSWORD_HASH"
# Salt and hash characters of the crypt family and of the cracking tools' formats.
_MATERIAL = r"[A-Za-z0-9./+=$*:@#,~_-]"


def _hash_material(value: str) -> bool:
    """Enough letters and digits to be a hash, not ``$1$2`` in a shell line or ``$x$y`` in code."""
    alnum = sum(c.isalnum() for c in value)
    return alnum >= 16 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


RULES: list[Rule] = [
    # Modular crypt and the cracking tools' $format$ strings.
    Rule(TAG, re.compile(r"(?<![\w$])\$[A-Za-z0-9][A-Za-z0-9-]{0,19}\$" + _MATERIAL + r"{16,}"), score=0.95,
         validate=_hash_material, needs="$"),
    # Django / passlib: <algorithm>$<parameters or salt>$<hash>.
    Rule(TAG, re.compile(
        r"(?<![\w$])(?:pbkdf2_sha\d+|pbkdf2_sha1|pbkdf2|argon2|bcrypt_sha256|bcrypt|scrypt|sha1|md5|crypt"
        r"|unsalted_sha1|unsalted_md5)\$" + _MATERIAL + r"{16,}"), score=0.95, validate=_hash_material, needs="$"),
    # The same <name>$<part>$<secret> layout from other issuers (Braintree's access_token$production$…$…).
    Rule("REDACTED_CREDENTIAL", re.compile(r"(?<![\w$])[A-Za-z][\w-]{1,30}\$[\w.-]{1,40}\$[\w.$/+=-]{16,}"),
         score=0.9, validate=_hash_material, needs="$"),
    # A numeric account id and its hex secret (Asana's 2/<id>/<id>:<hex>, "<app id>:<key>" pairs).
    Rule("REDACTED_CREDENTIAL", re.compile(r"(?<![\w/.:-])(?:\d+/)*\d{6,}:(?P<value>[0-9a-fA-F]{32,})(?![\w-])"),
         group="value", score=0.85, needs=":"),
    Rule(TAG, re.compile(r"(?i)\{(?:s?sha(?:256|384|512)?|s?md5|crypt|pbkdf2[\w-]*|argon2\w*|bcrypt)\}"
                         r"[A-Za-z0-9+/=.$_-]{12,}"), score=0.95, needs="}"),
    # LM:NT pairs, and the NT hash alone after an account and RID (user:1001:<lm>:<nt>:::).
    Rule(TAG, re.compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{32}:[0-9A-Fa-f]{32}(?![0-9A-Fa-f])"), score=0.95, needs=":"),
    # NetNTLMv1/v2 as responders print them: user::DOMAIN:challenge:response:blob.
    Rule(TAG, re.compile(r"::[\w.-]*:(?P<value>[0-9A-Fa-f]{16}:[0-9A-Fa-f]{24,}(?::[0-9A-Fa-f]+)?)"),
         group="value", score=0.95, needs="::"),
    Rule(TAG, re.compile(r"(?<![\w*])\*[0-9A-F]{40}(?![0-9A-Fa-f])"), score=0.9, needs="*"),
    Rule(TAG, re.compile(r"(?<![\w$])md5[0-9a-f]{32}(?![0-9a-f])"), score=0.9, needs="md5"),
    Rule(TAG, re.compile(r"SCRAM-SHA-(?:1|256)\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+"), score=0.95,
         needs="SCRAM-SHA-"),
]
