"""Pattern rules for secrets and identifiers that no NER model knows (docs/flow.md#redaction).

Each rule has the tag it writes (``<TAG>``), a regular expression, the group that is the
secret (the rest is context, e.g. the key name of an assignment), an optional validator and a
score (1.0 for well-known token formats; less for looser shapes) used to resolve overlaps.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    start: int
    end: int
    tag: str
    score: float
    source: str = "pattern"


@dataclass(frozen=True)
class Rule:
    tag: str
    pattern: re.Pattern[str]
    score: float = 1.0
    group: str | int = 0
    validate: Callable[[str], bool] | None = None

    def find(self, text: str) -> list[Finding]:
        found = []
        group = self.group if (self.group == 0 or self.group in self.pattern.groupindex) else 0
        for match in self.pattern.finditer(text):
            start, end = match.span(group)
            if start >= end:
                continue
            if self.validate is not None and not self.validate(match.group(group)):
                continue
            found.append(Finding(start, end, self.tag, self.score))
        return found


def _b64json(segment: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        return isinstance(json.loads(raw.decode("utf-8")), dict)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False


def _valid_jwt(token: str) -> bool:
    header, payload = token.split(".")[:2]
    return _b64json(header) and _b64json(payload)


_PLACEHOLDER_RE = re.compile(
    r"^(?:[$%{<\[(]|.*\$\{|.*\{\{)|(?:insert|your[_-]|xxxx|changeme|placeholder|redacted|example\.com|\*\*\*)",
    re.IGNORECASE,
)


_ROLE_LOCAL_PARTS = {
    "noreply", "no-reply", "donotreply", "do-not-reply", "notifications", "notification",
    "mailer-daemon", "postmaster", "bounce", "bounces",
}


def is_role_address(address: str) -> bool:
    return address.split("@", 1)[0].lower() in _ROLE_LOCAL_PARTS


def secret_like(value: str) -> bool:
    """Is the value of a ``password=`` / ``api_key:`` style assignment plausibly a secret?

    Placeholders (``$VAR``, ``%s``, ``${...}``, ``<...>``, ``insert_key_here``) are not; a value
    needs at least six characters and a letter with a digit, or three character classes.
    """
    value = value.strip("\"'")
    if len(value) < 6 or _PLACEHOLDER_RE.search(value):
        return False
    has_lower = any(c.islower() for c in value)
    has_upper = any(c.isupper() for c in value)
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() and not c.isspace() for c in value)
    if has_digit and (has_lower or has_upper):
        return True
    return sum((has_lower, has_upper, has_digit, has_symbol)) >= 3


# Names of assignment keys whose value is a secret, matched at the end of the name:
# ...password, ...pwd, ...pw, ...secret, ...token, ...api_key, ...access_key, ...credentials.
# A bare "...key" is too common (primary_key, sort_key) and is left to the vendor rules below.
_KEY_NAME = (
    r"[A-Za-z0-9_.-]*?(?:pass(?:word|wd|phrase)?|pwd|pw|secret|token|api[_-]?key|apikey"
    r"|(?:access|private|secret|auth|client|master|signing|encryption)[_-]?key|credentials?|auth)"
)
_SEP = r"""["']?\s*(?::=|:|=)\s*["']?"""
_VALUE = r"""(?P<value>"[^"\n]{1,300}"|'[^'\n]{1,300}'|[^\s"',;}&<>)\]]{1,300})"""


def _vendor(prefix: str, value: str, *, space_sep: bool = False) -> re.Pattern[str]:
    """``<prefix>...key|pass|pwd = <value>`` for a vendor whose keys have a known shape."""
    sep = r"""["']?\s*(?::=|:|=|\s)\s*["']?""" if space_sep else _SEP
    return re.compile(
        rf"(?i)(?<![A-Za-z0-9])(?:{prefix})[\w-]*?(?:key|pass|password|pwd|pw)[\w-]*?{sep}(?P<value>{value})(?![\w-])"
    )


RULES: list[Rule] = [
    # --- private keys and signed tokens ---------------------------------------------------
    Rule("PRIVATE_KEY", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.DOTALL)),
    Rule("JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]*)?"),
         validate=_valid_jwt),
    # --- LLM providers ----------------------------------------------------------------------
    Rule("LLM_API_KEY", re.compile(r"(?<![A-Za-z0-9])sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{20,}")),
    # OpenAI's own prefixes carry the "T3BlbkFJ" marker; plain sk- keys (DashScope, DeepSeek,
    # Moonshot, ...) are just long random strings. Current OpenAI keys are over 150 characters.
    Rule("LLM_API_KEY", re.compile(
        r"(?<![A-Za-z0-9_-])sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{10,}T3BlbkFJ[A-Za-z0-9_-]{10,}"
        r"|[A-Za-z0-9_-]{80,})")),
    Rule("LLM_API_KEY", re.compile(r"(?<![A-Za-z0-9_-])sk-(?!proj-|svcacct-|admin-)[A-Za-z0-9_-]{20,}")),
    Rule("LLM_API_KEY", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),  # Hugging Face
    Rule("LLM_API_KEY", re.compile(r"\bgsk_[A-Za-z0-9]{40,}\b")),  # Groq
    Rule("LLM_API_KEY", re.compile(r"\br8_[A-Za-z0-9]{30,}\b")),  # Replicate
    # --- code hosting and package registries ---------------------------------------------------
    Rule("GITHUB_TOKEN", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    Rule("GITLAB_TOKEN", re.compile(
        r"(?<![\w-])(?:glpat-|gldt-|glrt-|glft-|glcbt-(?:[0-9a-fA-F]{1,5}_)?|glffct-|glsoat-|GR1348941)"
        r"[0-9A-Za-z_-]{20,50}(?![\w-])")),
    Rule("GITLAB_TOKEN", re.compile(r"(?<![\w-])glimt-[0-9A-Za-z_-]{25}(?![\w-])")),
    Rule("GITLAB_TOKEN", re.compile(r"(?<![\w-])glptt-[0-9A-Za-z_-]{40}(?![\w-])")),
    Rule("GITLAB_TOKEN", re.compile(r"(?<![\w-])glagent-[0-9A-Za-z_-]{50,1024}(?![\w-])")),
    Rule("GITLAB_TOKEN", re.compile(r"(?<![\w-])gloas-[0-9A-Za-z_-]{64}(?![\w-])")),
    Rule("NPM_TOKEN", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    Rule("NPM_TOKEN", re.compile(r"//[^\s/]+/:_authToken=\s*(?P<value>[^\s$'\"{]+)"), group="value"),
    Rule("PYPI_TOKEN", re.compile(r"\bpypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{70,}")),
    Rule("ARTIFACTORY_TOKEN", re.compile(r"(?:(?<=[\s=:\"'])|^)(?:AKC[A-Za-z0-9]{10,}|AP[\dA-F][A-Za-z0-9]{8,})")),
    # --- clouds -------------------------------------------------------------------------------
    Rule("AWS_ACCESS_KEY", re.compile(r"(?<![A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])")),
    Rule("AWS_SECRET_KEY", re.compile(
        r"(?i)aws.{0,20}?(?:secret|private|access).{0,20}?[=:]\s*[\"']?(?P<value>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"),
        group="value"),
    Rule("GOOGLE_API_KEY", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    Rule("AZURE_KEY", re.compile(r"(?i)AccountKey=(?P<value>[A-Za-z0-9+/=]{40,})"), group="value"),
    Rule("CLOUD_CREDENTIAL", re.compile(r"https?://api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/(?P<value>[a-z0-9]{64})\b"),
         group="value"),
    # --- chat, mail, payment ------------------------------------------------------------------
    Rule("SLACK_TOKEN", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    Rule("SLACK_TOKEN", re.compile(r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+")),
    Rule("DISCORD_TOKEN", re.compile(r"[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,}")),
    Rule("TELEGRAM_TOKEN", re.compile(r"(?<![\w:])\d{8,10}:[A-Za-z0-9_-]{35}(?![\w-])")),
    Rule("STRIPE_KEY", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    Rule("SENDGRID_KEY", re.compile(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b")),
    Rule("MAILCHIMP_KEY", re.compile(r"\b[0-9a-f]{32}-us[0-9]{1,2}\b")),
    Rule("TWILIO_KEY", re.compile(r"\b(?:AC|SK)[0-9a-fx]{32}\b")),
    # --- HTTP credentials -----------------------------------------------------------------------
    Rule("REDACTED_TOKEN", re.compile(r"(?i)\b(?:bearer|basic|token)\s+(?P<value>[A-Za-z0-9._~+/=-]{12,})"),
         group="value"),
    # user:password@host in URLs: only the credentials go.
    Rule("REDACTED_CREDENTIAL", re.compile(r"(?<=://)(?P<value>[^\s:/@\"';]+:[^\s@/\"';]+)(?=@)"), group="value"),
    # password=..., api_key: "...", SECRET_TOKEN=..., --api-key VALUE: only the value goes.
    Rule("REDACTED_CREDENTIAL", re.compile(
        r"(?:^|(?<=[\s\"'{,(;&?]))[\"']?" + _KEY_NAME + r"[\"']?\s*(?::=|:|=)\s*" + _VALUE, re.IGNORECASE),
        score=0.9, group="value", validate=secret_like),
    # Vendors whose keys have a fixed shape: IBM Cloud IAM (44), SoftLayer (64), Cloudant (24/64).
    Rule("REDACTED_CREDENTIAL", _vendor("ibm|cloud|iam", r"[A-Za-z0-9_-]{44}"), group="value"),
    Rule("REDACTED_CREDENTIAL", _vendor("softlayer|sl", r"[a-z0-9]{64}", space_sep=True), group="value"),
    Rule("REDACTED_CREDENTIAL", _vendor("cloudant|clou|cl", r"[a-z0-9]{64}|[a-z0-9]{24}"), group="value"),
    Rule("REDACTED_CREDENTIAL", re.compile(r"(?:^|(?<=\s))--" + _KEY_NAME + r"\s+" + _VALUE, re.IGNORECASE),
         score=0.9, group="value", validate=secret_like),
    # --- identifiers ----------------------------------------------------------------------------
    Rule("UUID", re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
         score=0.8),
    # Role addresses (noreply@, postmaster@) identify no one and stay.
    Rule("EMAIL_ADDRESS", re.compile(r"(?<![\w.+-])[\w.%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b"), score=0.95,
         validate=lambda address: not is_role_address(address)),
    # Home directories: the user name goes, the rest of the path stays useful.
    Rule("USER", re.compile(r"(?:(?<=/home/)|(?<=/Users/))(?P<value>(?!<)[A-Za-z0-9._-]+)(?=/|\b)"), group="value",
         score=0.7, validate=lambda name: name.lower() not in {"shared", "runner", "ubuntu", "root"}),
    Rule("USER", re.compile(r"(?i)(?<=[A-Z]:\\Users\\)(?P<value>(?!<)[^\\\s/:*?\"<>|]+)"), group="value", score=0.7,
         validate=lambda name: name.lower() not in {"public", "default", "all users"}),
]
