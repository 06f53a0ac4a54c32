"""Pattern rules for secrets and identifiers that no NER model knows (docs/flow.md#redaction).

Each rule has the tag it writes (``<TAG>``), a regular expression, the group that is the
secret (the rest is context, e.g. the key name of an assignment), an optional validator and a
score (1.0 for well-known token formats; less for looser shapes) used to resolve overlaps.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import math
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
    # A check that needs the whole match (the key name beside its value).
    validate_match: Callable[[re.Match[str]], bool] | None = None
    # A substring every match contains: a text without it is skipped without running the pattern.
    needs: str = ""
    # The same as a pattern: one linear search that a text without it fails fast.
    near: re.Pattern[str] | None = None

    def find(self, text: str) -> list[Finding]:
        if (self.needs and self.needs not in text) or (self.near is not None and not self.near.search(text)):
            return []
        found = []
        group = self.group if (self.group == 0 or self.group in self.pattern.groupindex) else 0
        for match in self.pattern.finditer(text):
            start, end = match.span(group)
            if start >= end:
                continue
            if self.validate is not None and not self.validate(match.group(group)):
                continue
            if self.validate_match is not None and not self.validate_match(match):
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


# The marker a redacted value leaves in the text (``<REDACTED_CREDENTIAL>``, ``<PERSON>``).
MARKER_RE = re.compile(r"<[A-Z][A-Z0-9_]*>")
_PLACEHOLDER_RE = re.compile(
    r"^(?:[$%{<\[(]|.*\$\{|.*\{\{)|(?:insert|your[_-]|xxxx|changeme|placeholder|redacted|example\.com|\*\*\*"
    r"|replace[_-]?me|fill[_-]?me[_-]?in|to[_-]?be[_-]?set|^todo$|^tbd$)",
    re.IGNORECASE,
)


_ROLE_LOCAL_PARTS = {
    "noreply", "no-reply", "donotreply", "do-not-reply", "notifications", "notification",
    "mailer-daemon", "postmaster", "bounce", "bounces",
}


def is_role_address(address: str) -> bool:
    return address.split("@", 1)[0].lower() in _ROLE_LOCAL_PARTS


_REFERENCE_RE = re.compile(
    r"^(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?:\(.*)?|[A-Za-z_$][\w$.]*\(.*|[A-Za-z_$][\w$.]*\[.*)$"
)
_NOT_A_VALUE = {
    "true", "false", "null", "none", "nil", "undefined", "required", "optional", "string", "str", "int",
    "bool", "boolean", "number", "text", "empty", "redacted", "hidden", "masked", "secret", "password",
    "token", "env", "environ", "getenv", "process.env", "os.environ",
    # Option values of settings named like secrets (fetch's credentials: 'include', auth: 'bearer').
    "include", "omit", "same-origin", "inherit", "auto", "enabled", "disabled", "basic", "bearer", "digest",
    "oauth", "oauth2", "jwt", "cookie", "header", "session",
}


def is_reference(value: str) -> bool:
    """Is an assigned value not a secret but a stand-in: a placeholder (``$VAR``, ``${X}``,
    ``<key>``, ``%s``, ``changeme``), a code reference (``settings.SECRET_KEY``,
    ``os.environ[...]``, ``get_token()``), a mask (``****``) or a type name (``string``)?"""
    value = value.strip().strip("\"'`")
    if not value or _PLACEHOLDER_RE.search(value) or value.lower() in _NOT_A_VALUE:
        return True
    if set(value) <= set("*xX.•-_#"):
        return True
    return bool(_REFERENCE_RE.match(value))


def secret_like(value: str) -> bool:
    """Is the value of a ``password=`` / ``api_key:`` style assignment a secret? Any value of
    three characters or more that is not a stand-in (``is_reference``) is: when in doubt, redact
    (a short or plain-word password is still a password). An article or pronoun starts a sentence,
    not a value ("secret: the Kibana admin password is …")."""
    from memories.redaction.names import stop_words

    value = value.strip().strip("\"'`")
    return len(value) >= 3 and not is_reference(value) and value.lower() not in stop_words()


# Names of assignment keys whose value is a secret, matched at the end of the name:
# ...password, ...pwd, ...pw, ...secret, ...token, ...api_key, ...access_key, ...credentials.
# A bare "...key" is too common (primary_key, sort_key) and is left to the vendor rules below.
_KEY_NAME = (
    r"[A-Za-z0-9_.-]*?(?:pass(?:word|wd|phrase)?|pwd|pw|secret|token|api[_-]?key|apikey"
    r"|(?:access|private|secret|auth|client|master|signing|encryption|license|licence|product|activation"
    r"|serial|hmac|webhook|data)[_-]?key|credentials?|auth|salt"
    r"|sess(?:ion)?[_-]?(?:id|key|token)|sessid|sid|activation[_-]?code)"
)
# What every key-name match ends with: its last word and the assignment after it.
_KEY_TAIL_RE = re.compile(r"(?i)(?:pass(?:word|wd|phrase)?|pwd|pw|secret|token|key|credentials?|auth|salt|id|sid|code)"
                          r"[\"']?\s*(?::=|:|=)")
_SEP = r"""["']?\s*(?::=|:|=)\s*["']?"""
# An unquoted value runs to whitespace or punctuation that ends a value in code; "&" ends it
# only where a query-string parameter follows ("pw=x&next=/"): in "password=Tr0ub4dor&3" it
# is part of the password.
_VALUE = (r"""(?P<value>"[^"\n]{1,300}"|'[^'\n]{1,300}'"""
          r"""|(?:[^\s"',;}&<>)\]]|&(?![A-Za-z_][\w.\[\]-]*=)(?=[^\s"',;}&<>)\]])){1,300})""")


def not_its_own_name(match: re.Match[str]) -> bool:
    """``session_id: session_id``, ``password: password``: a value that repeats its key's name is
    a variable passed along (object shorthand in Elixir or JavaScript), not a secret."""
    key = re.search(r"[A-Za-z0-9_.-]+", match.string[match.start() : match.start("value")])

    def bare(name: str) -> str:
        return re.sub(r"[^a-z0-9]", "", name.lower())

    return not key or bare(key.group()) != bare(match.group("value").strip("\"'`"))


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value`` (its own character frequencies)."""
    if not value:
        return 0.0
    counts = {c: value.count(c) for c in set(value)}
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _mixed(value: str) -> bool:
    """Random-looking: letters of both cases and digits, or high entropy for its length."""
    classes = sum((any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value)))
    return classes == 3 or (classes == 2 and shannon_entropy(value) >= 0.8 * math.log2(min(len(value), 64)))


_DOCUMENTATION_NETWORKS = [ipaddress.ip_network(n) for n in
                           ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")]


def ip_identifies_a_network(value: str) -> bool:
    """Does an IP address say something about a network? All do but loopback, the unspecified
    address, netmasks and the documentation ranges (kept readable: they identify nothing)."""
    try:
        address = ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return False
    if address.is_loopback or address.is_unspecified or any(address in net for net in _DOCUMENTATION_NETWORKS):
        return False
    if address.version == 4:
        inverted = ~int(address) & 0xFFFFFFFF
        if int(address) and (inverted + 1) & inverted == 0:
            return False  # a netmask (255.255.255.0), not an address
    return True


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
    # Django's generated SECRET_KEY (startproject): its alphabet has brackets and "=", which split tokens.
    Rule("DJANGO_SECRET_KEY", re.compile(r"django-insecure-[a-z0-9!@#$%^&*(\-_=+)]{20,}"), needs="django-insecure-"),
    # --- LLM providers ----------------------------------------------------------------------
    Rule("LLM_API_KEY", re.compile(r"(?<![A-Za-z0-9])sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{20,}")),
    # OpenAI's own prefixes carry the "T3BlbkFJ" marker; plain sk- keys (DashScope, DeepSeek,
    # Moonshot, ...) are just long random strings. Current OpenAI keys are over 150 characters.
    # Every sk-… key of 16 characters or more, whatever its provider or length (OpenAI's project
    # keys, DashScope, DeepSeek, OpenRouter, Moonshot …): an unknown shape is still a key.
    Rule("LLM_API_KEY", re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{13,}")),
    Rule("LLM_API_KEY", re.compile(r"(?<![A-Za-z0-9_-])xai-[A-Za-z0-9_-]{20,}")),
    Rule("LLM_API_KEY", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),  # Hugging Face
    Rule("LLM_API_KEY", re.compile(r"\bgsk_[A-Za-z0-9]{40,}\b")),  # Groq
    Rule("LLM_API_KEY", re.compile(r"\br8_[A-Za-z0-9]{30,}\b")),  # Replicate
    # --- code hosting and package registries ---------------------------------------------------
    Rule("GITHUB_TOKEN", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{12,}|github_pat_[A-Za-z0-9_]{20,})\b")),
    Rule("GITLAB_TOKEN", re.compile(
        r"(?<![\w-])(?:glpat-|gldt-|glrt-|glft-|glptt-|glcbt-(?:[0-9a-fA-F]{1,5}_)?|glffct-|glsoat-|GR1348941)"
        r"[0-9A-Za-z_.-]{10,80}(?![\w-])")),
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
    # Alibaba Cloud's AccessKey ID: like AWS's, half of a key pair that detectors report.
    Rule("ALIBABA_ACCESS_KEY", re.compile(r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{12,28}(?![A-Za-z0-9])")),
    Rule("GOOGLE_API_KEY", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    Rule("AZURE_KEY", re.compile(r"(?i)AccountKey=(?P<value>[A-Za-z0-9+/=]{40,})"), group="value"),
    Rule("CLOUD_CREDENTIAL", re.compile(r"https?://api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/(?P<value>[a-z0-9]{64})\b"),
         group="value"),
    # --- chat, mail, payment ------------------------------------------------------------------
    Rule("SLACK_TOKEN", re.compile(r"\bxox[a-z]-[A-Za-z0-9-]{10,}")),
    Rule("SLACK_TOKEN", re.compile(r"\bxapp-\d-[A-Za-z0-9-]{10,}")),
    Rule("SLACK_TOKEN", re.compile(r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+")),
    Rule("DISCORD_TOKEN", re.compile(r"[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,}")),
    Rule("TELEGRAM_TOKEN", re.compile(r"(?<![\w:])\d{8,10}:[A-Za-z0-9_-]{35}(?![\w-])")),
    Rule("STRIPE_KEY", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}\b")),
    # Unknown pk_/rk_/sk_ keys of any vendor.
    Rule("REDACTED_TOKEN", re.compile(r"(?<![A-Za-z0-9_-])(?:pk|rk|sk)_[A-Za-z0-9_]{13,}(?![\w-])"), score=0.9,
         validate=lambda token: any(c.isdigit() for c in token)),
    Rule("SENDGRID_KEY", re.compile(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b")),
    Rule("MAILCHIMP_KEY", re.compile(r"\b[0-9a-f]{32}-us[0-9]{1,2}\b")),
    Rule("TWILIO_KEY", re.compile(r"\b(?:AC|SK)[0-9a-fx]{32}\b")),
    # --- other vendors with their own prefixes ---------------------------------------------------
    Rule("VENDOR_KEY", re.compile(r"\bNR(?:AK|JS|II|AA|RA|SP|AL)-[A-Z0-9]{16,}\b")),  # New Relic
    Rule("VENDOR_KEY", re.compile(r"\bph[cx]_[A-Za-z0-9]{20,}\b")),  # PostHog
    Rule("VENDOR_KEY", re.compile(r"\bshp(?:at|ss|ca|pa)_[A-Fa-f0-9]{20,}\b")),  # Shopify
    Rule("VENDOR_KEY", re.compile(r"\bkey-[0-9a-z]{32}\b")),  # Mailgun
    Rule("VENDOR_KEY", re.compile(r"\bATATT3[A-Za-z0-9_=+/-]{20,}")),  # Atlassian
    Rule("VENDOR_KEY", re.compile(r"\b00D[A-Za-z0-9]{12,15}![A-Za-z0-9_.]{20,}")),  # Salesforce session
    Rule("VENDOR_KEY", re.compile(r"\bdop_v1_[a-f0-9]{64}\b")),  # DigitalOcean
    Rule("VENDOR_KEY", re.compile(r"\b(?:SG|SK)\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),  # SendGrid-style
    # --- licence and activation keys: groups of letters and digits --------------------------------
    Rule("LICENSE_KEY", re.compile(r"(?<![\w-])[A-Z0-9]{4,10}(?:-[A-Z0-9]{4,10}){3,8}(?![\w-])"), score=0.8,
         validate=lambda key: sum(c.isdigit() for c in key) >= 2 and sum(c.isalpha() for c in key) >= 4),
    # --- JSON Web Key private members ("d", "k", "p", "q", "dp", "dq", "qi") ----------------------------
    Rule("PRIVATE_KEY", re.compile(
        r"(?:^|(?<=[\s{,]))[\"']?(?:d|k|p|q|dp|dq|qi)[\"']?\s*:\s*[\"']?(?P<value>[A-Za-z0-9_-]{16,}={0,2})(?![\w-])"),
        group="value", score=0.9, validate=lambda value: _mixed(value)),
    # --- HTTP credentials -----------------------------------------------------------------------
    # Authorization schemes; a credential is not a plain lower-case word ("token authentication").
    Rule("REDACTED_TOKEN", re.compile(
        r"(?i)\b(?:bearer|basic|token|ntlm|negotiate|kerberos)\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})"),
        group="value", validate=lambda value: not value.isalpha() or not value.islower()),
    Rule("REDACTED_TOKEN", re.compile(r"(?i)\bresponse\s*=\s*\"(?P<value>[0-9a-f]{32,64})\""), group="value"),
    Rule("REDACTED_TOKEN", re.compile(
        r"(?i)\boauth_(?:signature|token|token_secret|consumer_key|verifier)\s*=\s*\"?(?P<value>[^\",\s&]{6,})"),
        group="value"),
    # Passwords given to command-line tools: mysql -pSECRET, curl -u user:pass, .netrc lines,
    # libcurl's CURLOPT_PASSWORD / CURLOPT_USERPWD.
    Rule("REDACTED_CREDENTIAL", re.compile(r"\bmysql\w*\b[^\n]*?\s-p(?P<value>[^\s'\"-][^\s'\"]*)"), group="value",
         validate=secret_like),
    Rule("REDACTED_CREDENTIAL", re.compile(
        r"(?:\s|^)(?:--user|-u|--proxy-user)[\s=]+[\"']?[^\s:'\"]+:(?P<value>[^\s'\"]+)"), group="value",
        validate=secret_like),
    Rule("REDACTED_CREDENTIAL", re.compile(r"\bmachine\s+\S+(?:\s+login\s+\S+)?\s+password\s+(?P<value>\S+)"),
         group="value"),
    Rule("REDACTED_CREDENTIAL", re.compile(
        r"\bCURLOPT_(?:USERPWD|PROXYUSERPWD)\s*,\s*[\"'](?:[^\"':]*:)?(?P<value>[^\"']+)[\"']"), group="value"),
    Rule("REDACTED_CREDENTIAL", re.compile(
        r"\bCURLOPT_\w*(?:PASSWORD|PASSWD|TOKEN|SECRET)\w*\s*,\s*[\"'](?P<value>[^\"']+)[\"']"), group="value"),
    # A literal fallback after an environment lookup: os.environ.get(...) or "pw",
    # process.env.X || 'pw', os.getenv(..., "pw"), ENV.fetch(..., "pw").
    Rule("REDACTED_CREDENTIAL", re.compile(
        r"(?:environ(?:\.get)?\s*[\[(]|getenv\s*\(|Getenv\s*\(|process\.env\.|ENV(?:\.fetch\s*\(|\[))[^\n]*?"
        r"(?:\bor\b|\|\||\?\?|,)\s*[\"'](?P<value>[^\"'\n]{3,})[\"']"), group="value", validate=secret_like),
    # A secret-named key given as a string argument, its value as the next: os.Setenv("DB_PASS",
    # "pw"), config.set("smtp.password", "pw"), <add key="SmtpPassword" value="pw" />.
    Rule("REDACTED_CREDENTIAL", re.compile(
        r"(?i)[\"'][A-Za-z0-9_.-]*(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|credential)[A-Za-z0-9_.-]*[\"']"
        r"\s*(?:,|\s+value\s*=)\s*[\"'](?P<value>[^\"'\n]{3,})[\"']"), group="value", validate=secret_like),
    Rule("REDACTED_CREDENTIAL", re.compile(r"\bsshpass\s+-p\s*[\"']?(?P<value>[^\s'\"]+)"), group="value"),
    # Internal addresses map a network: every IPv4 address but loopback, 0.0.0.0, netmasks and
    # the documentation ranges (Presidio finds the rest, IPv6 included).
    Rule("IP_ADDRESS", re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d]|\.\d)"), score=0.85,
         validate=lambda value: ip_identifies_a_network(value)),
    # "-Token:value" (PowerShell parameters) and "Name-Token: value" headers.
    Rule("REDACTED_CREDENTIAL", re.compile(r"(?i)(?:^|(?<=\s))-(?:token|password|secret|apikey)[:\s]+(?P<value>[^\s'\"]+)"),
         group="value", validate=secret_like),
    # user:password@host in URLs: only the credentials go.
    Rule("REDACTED_CREDENTIAL", re.compile(r"(?<=://)(?P<value>[^\s:/@\"';]+:[^\s@/\"';]+)(?=@)"), group="value"),
    # password=..., api_key: "...", SECRET_TOKEN=..., --api-key VALUE: only the value goes.
    Rule("REDACTED_CREDENTIAL", re.compile(
        r"(?:^|(?<=[\s\"'`{,(;&?\[])|(?<=[:/])(?=_))[\"']?" + _KEY_NAME + r"[\"']?\s*(?::=|:|=)\s*" + _VALUE, re.IGNORECASE),
        score=0.9, group="value", validate=secret_like, validate_match=not_its_own_name, near=_KEY_TAIL_RE),
    # Vendors whose keys have a fixed shape: IBM Cloud IAM (44), SoftLayer (64), Cloudant (24/64).
    Rule("REDACTED_CREDENTIAL", _vendor("ibm|cloud|iam", r"[A-Za-z0-9_-]{44}"), group="value"),
    Rule("REDACTED_CREDENTIAL", _vendor("softlayer|sl", r"[a-z0-9]{64}", space_sep=True), group="value"),
    Rule("REDACTED_CREDENTIAL", _vendor("cloudant|clou|cl", r"[a-z0-9]{64}|[a-z0-9]{24}"), group="value"),
    Rule("REDACTED_CREDENTIAL", re.compile(r"(?:^|(?<=\s))--" + _KEY_NAME + r"\s+" + _VALUE, re.IGNORECASE),
         score=0.9, group="value", validate=secret_like, needs="--"),
    # --- identifiers ----------------------------------------------------------------------------
    # UUIDs stay: they name rows, requests and jobs, not people; one that is a secret is assigned
    # to a secret's name or follows a cue word, and goes as that.
    # Role addresses (noreply@, postmaster@) identify no one and stay.
    Rule("EMAIL_ADDRESS", re.compile(r"(?<![\w.+-])[\w.%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b"), score=0.95,
         validate=lambda address: not is_role_address(address)),
    # Home directories: the user name goes, the rest of the path stays useful.
    Rule("USER", re.compile(r"(?:(?<=/home/)|(?<=/Users/))(?P<value>(?!<)[A-Za-z0-9._-]+)(?=/|\b)"), group="value",
         score=0.7, validate=lambda name: name.lower() not in {"shared", "runner", "ubuntu", "root", "user", "username"}),
    Rule("USER", re.compile(r"(?i)(?<=[A-Z]:\\Users\\)(?P<value>(?!<)[^\\\s/:*?\"<>|]+)"), group="value", score=0.7,
         validate=lambda name: name.lower() not in {"public", "default", "all users"}),
]
