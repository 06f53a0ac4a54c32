"""Values that could be secrets, wherever they stand: a learned secret-likeness score for any token,
read with the words around it (docs/flow.md#redaction).

Every token of a text that could be a value (not a plain word, not a path, URL, e-mail address or
stand-in) is scored by ``model.LikenessModel`` — the probability that its characters are those of
a credential, learned from values sampled from the maintained detectors' rules, random keys and
human passwords against ordinary technical tokens (``samples``). Then the context decides:

- after a **cue** in the same line — a word that names a secret, strong or weak, in English or
  Chinese ("password", "token", "credential", "key", "auth", "密码", "令牌"…), with or without a
  connector — a modest score is enough (``CUE_SCORE``);
- with **no cue**, a high score is needed (``BARE_SCORE``);
- in between, the **context model** (``context.ContextModel``, learned from sentences around
  secrets and around public values) reads the value's clause: a value of a modest score is a
  secret where the words around it say so ("signing requests with … as the shared key").

Shapes whose meaning the characters cannot tell are the context model's call: bare hex of the
lengths commits, digests and ids have (7–12, 16, 32, 40 and 64), UUIDs, words joined into one
token ("cedar_cotton_rescue") or written as a run after a connector ("is maple river quantum"),
and codes of digits ("4821 9930") stay unless a strong cue names them or the clause reads as a
secret's (``runs``). Codes of four or five digits ("PIN 2580", "门禁码 8812") are read only where the
clause speaks of a code or a secret, and need the clause's score whatever the cue: ports, error
codes and counts stand in the same places. A single word in lower case after a cue ("the
printer's admin PIN is violet") is read when it is not a word lessons or programs are written with,
and needs a higher clause score (``CONTEXT_WORD_SCORE``). Bare hex of any other length is random by construction and redacted
(``d37a8b9e09642cb73cfcf4e1 was rejected`` is no commit); ten or more small words with no word of
grammar between are a seed phrase. Values after the words that make a value public (``commit``,
``sha256:``, ``trace``, ``version``…) stay unless a strong cue is nearer.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from memories.redaction.entropy import _UUID_RE, _path_like, _public_anywhere
from memories.redaction.likeness import runs
from memories.redaction.likeness.context import context_model, split_words
from memories.redaction.likeness.model import likeness_model
from memories.redaction.likeness.shapes import digest_shaped, public_shape, value_of
from memories.redaction.names import stop_words
from memories.redaction.naming import named_secret
from memories.redaction.patterns import MARKER_RE, Finding, is_reference

TAG = "REDACTED_CREDENTIAL"
SCORE = 0.7  # below the rules that name what they found: where they agree, theirs is kept
PHRASE_SCORE = 0.8
STRONG_CUE_SCORE = 0.35
CUE_SCORE = 0.7
BARE_SCORE = 0.9
# The context model (``context``): a value whose characters leave it in doubt (a likeness of at least
# CONTEXT_FLOOR) is a secret where its clause scores CONTEXT_SCORE; a commit-shaped hex, a UUID, a run
# of words or digits — shapes the characters cannot tell — where it scores CONTEXT_ALONE_SCORE.
CONTEXT_SCORE = 0.7
CONTEXT_FLOOR = 0.3
CONTEXT_ALONE_SCORE = 0.65
CONTEXT_WEAK_SCORE = 0.7  # a weak cue names public values as often as secrets ("gpg: key 3AA5C343…")
# The same shapes after a strong cue that binds them ("验证码 899274", "口令改成 …"): the cue says what
# the value is, so the clause needs only to not read as a public value's. A weak cue ("gpg: key
# 3AA5C343…", "cache key …") names public values as often as secrets: no lower bar.
CONTEXT_CUED_SCORE = 0.3
# A single word after a cue ("the kiosk PIN is violet") is a password only where the clause reads as
# one more clearly than a value of any other shape needs: the same words stand before ordinary ones.
CONTEXT_WORD_SCORE = 0.75
# Words written as one value (a run after a connector, words joined by dots) stand where prose does
# ("add it with `helm repo add …`", "with tactile brown switches"): they need more than a code or hex.
CONTEXT_WORDS_SCORE = 0.8
PROSE_RUN_SHARE = 2 / 3  # of a run's words that lessons are written with: a noun phrase, unless a strong cue binds it
_CONTEXT_THRESHOLDS = {"context": CONTEXT_ALONE_SCORE, "context-strong": CONTEXT_CUED_SCORE,
                       "context-weak": CONTEXT_WEAK_SCORE, "context-word": CONTEXT_WORD_SCORE,
                       "context-words": CONTEXT_WORDS_SCORE}
MIN_LENGTH = 8  # characters of a value with no cue
MIN_LENGTH_CUED = 8  # shorter values after a cue and a connector are prose.py's

# A value runs to white space, quotes (curly ones too), brackets, separators or CJK text (a value
# glued to Chinese words: "密码Gbeg7x账号").
_CANDIDATE_RE = re.compile(r"[^\s\"'`()\[\]{}<>,;|\u2018-\u201f\u3000-\u303f\u3400-\u9fff\uff00-\uffef]+")
_TRAILING = ".,:;?)"
_STRONG_CUE = (
    r"pass(?:word|wd|phrase|code)s?|pwd|api[ _-]?keys?|apikeys?|access[ _-]?keys?|secret[ _-]?keys?|private[ _-]?keys?"
    r"|client[ _-]?secrets?|(?:access|auth|bearer|api|refresh|session|id|oauth|bot|app)[ _-]?tokens?|bearer"
    r"|credentials?|creds|secrets?|tokens?|psk|pre-?shared[ _-]?key|seed|totp|otp|2fa|mfa|recovery[ _-]?codes?"
    r"|license[ _-]?keys?|signing[ _-]?keys?|webhook[ _-]?secrets?|community[ _-]?string|storepass|keypass"
    r"|(?:backup|recovery|2fa|mfa)[ _-]?codes?|(?-i:PINs?|PUKs?)"  # the noun, in capitals; "pin" is also a verb
)
_WEAK_CUE = r"keys?|auth|login|pass|pin|cookie|signature|sig|salt|hmac|cred"
_CJK_CUE = r"密码|口令|密钥|秘钥|令牌|凭证|凭据|授权码|私钥|助记词|种子|验证码|恢复码|备用码|安全码|门禁码|解锁码|动态码|取件码"
_CUE_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(?:(?P<strong>{_STRONG_CUE})|(?P<weak>{_WEAK_CUE}))(?![A-Za-z]|[_-][A-Za-z])"
    rf"|(?P<cjk>{_CJK_CUE})")  # a cue that ends a name (DB_PASSWORD), not one inside it (PASSWORD_HASHERS, key_id)
_CUE_WINDOW = 48  # characters before a value where a cue counts
_HEX_RE = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")
# Values that are plain words, numbers or identifiers made of words: never scored.
_PLAIN_RE = re.compile(r"^(?:[a-z]+|[A-Z][a-z]+|[A-Z]+|\d+(?:[.,]\d+)*|[a-z]+(?:[_-][a-z]+)+|[A-Z]+(?:_[A-Z]+)+)$")
# Kubernetes pod and replica set names: a deployment's name, a template hash, a random suffix.
_POD_RE = re.compile(r"^[a-z][a-z0-9-]*-[0-9a-f]{8,10}-[a-z0-9]{5}$")
# A passphrase of dictionary words after a cue that names one: "correct-orbit-violet-quartz".
_PASSPHRASE_RE = re.compile(r"^[a-z]{3,}(?:[-_.][a-z]{3,}){2,}$")
_ASSIGNED_RE = re.compile(r"[=:]\s*[\"']?$")
_DOTTED_WORDS_RE = re.compile(r"^[A-Za-z][a-z]{2,}(?:\.[a-z]{3,}){2,}$")
_NAMES_AFTER_RE = re.compile(r"\s*[=:]|[(\[]|\.\w")  # an assignment, a call or an attribute follows: a name, not a value
_USERINFO_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:(?P<password>[^\s/@]{3,})@[^\s/@]")
_PINNED_RE = re.compile(r"@(?:sha\d+|sha|blake\w*|md5):[0-9a-fA-F]{16,}$")
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")


# Words right before a value that make it an identifier of a public object, not a key: Twilio's
# "message SM…", Stripe's "customer cus_…", "event evt_…" (with ``entropy``'s digests and build ids).
_OBJECT_WORD_RE = re.compile(
    r"(?i)\b(?:message|customer|event|invoice|order|charge|subscription|payment|refund|ticket|issue|cursor"
    r"|transaction|tx|block|pod|node|instance|snapshot|volume|ami|bucket|object|record|row|account\s+id|user\s+id"
    r"|client\s+id|tenant\s+id|app\s+id|id|ids|sid)\b[\s:=#(\[\"'`]*$")


# Words between a cue and its value: plain words (values, punctuation and connectors aside).
_OWN_NAME_RE = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred")
_BETWEEN_WORD_RE = re.compile(r"(?<![^\s])[A-Za-z]{2,}(?![^\s:=,.])")
# A tool's password argument (mysql -pX, sshpass -p X, redis-cli -a X, xfreerdp /p:X, keytool
# -storepass X, net use … /user:u X is left to the rules): the value after the flag names itself.
_TOOL_RE = re.compile(
    r"(?i)\b(?:mysql\w*|mariadb|sshpass|ssh-keygen|ldap(?:search|modify|add|delete|whoami|passwd)|redis-cli|docker\s+login|podman\s+login|xfreerdp|rdesktop|keytool|jarsigner"
    r"|sqlcmd|bcp|psql|mongo(?:sh|dump|restore)?|htpasswd|smbclient|openssl|curl|wget|mosquitto_\w+|rabbitmqctl)\b")
_TOOL_FLAG_RE = re.compile(
    r"(?:^|\s)(?:-p|-P|-a|-w|--pass(?:word|wd)?|--auth|-storepass|-keypass|-srcstorepass|-deststorepass|/p|/pass|-pw"
    r"|-K|-k|-pass\s+pass:|-passin\s+pass:|-passout\s+pass:)"  # openssl's key, password and pass:… arguments
    r"(?:[=:]|\s+)?['\"]?$")
# An authenticator's setup key written in groups ("jeep urt6 5i6t 3lb3 …") and recovery codes.
# A value right before the words that name it: "used Adm1n as its password", "X is the passphrase".
_CUE_AFTER_RE = re.compile(
    r"(?i)\s+(?:as|is|was|being)\s+(?:(?:its|the|their|his|her|my|our|your|a|an)\s+)?(?:[a-z]+\s+)?"
    r"(?:pass(?:word|phrase|code)|pin|secret|token|api\s+key)\b|\s*(?:是|作为|当作)(?:\S{0,6})?(?:密码|口令|密钥|令牌)")
_QUOTED_ARGUMENT_RE = re.compile(
    r"(?:^|\s)(?:-p|-P|-N|-a|-w|--pass(?:word|wd|phrase)?|-storepass|-keypass|-pw)[=\s]?\s*(?P<q>[\"'])(?P<value>[^\"'\n]{3,80})(?P=q)")
_SECURE_STRING_RE = re.compile(r"(?i)ConvertTo-SecureString\s+(?:-String\s+)?['\"]?$")
_GROUPED_SEED_RE = re.compile(r"(?i)\b(?:[a-z2-7]{4}[ -]){3,}[a-z2-7]{4}\b")
_CODES = r"codes?|otp|passcodes?|sms|text(?:ed)?"  # words of any code's clause
_CODE_WORD_RE = re.compile(rf"(?i)\b(?:{_CODES}|pins?|puk|door|alarm|unlock\w*|disarm\w*|keypad|combination)\b|码")
# A one-time code's shape (six digits, whole or as two groups of three) and the words around one.
_OTP_RE = re.compile(r"\d{6}|\d{3}[ -]\d{3}")
_OTP_WORD_RE = re.compile(rf"(?i)\b(?:{_CODES}|one-time|2fa|mfa|totp|authenticator|authy|duo|okta|verify|verification)\b"
                          r"|验证码|动态码|短信")
_CODE_CUE_RE = re.compile(r"(?i)(?:backup|recovery|2fa|mfa|one-time)[ _-]?codes?|恢复码|备用码|备用验证码|安全码")


def _line_from(text: str, position: int, window: int) -> int:
    """Where the context of ``position`` starts: its line's start, or ``window`` characters back on
    a longer line. Bounded, so a text of one long line (a tool's output) is not read from its start
    for every token."""
    low = max(0, position - window)
    return max(low, text.rfind("\n", low, position) + 1)


def _in_code_list(text: str, line_start: int, start: int) -> bool:
    """Does a backup or recovery code cue stand before ``start`` in the same clause ("recovery codes:
    e37b4-700fd a3bc5-2d67d f955e-0e0b5" — every code of the list, however long it runs)?"""
    for match in _CODE_CUE_RE.finditer(text, max(line_start, start - _CODE_LIST_WINDOW), start):
        if not _CLAUSE_END_RE.search(text, match.end(), start):
            return True
    return False


_CLAUSE_END_RE = re.compile(r"[;。；]|\.\s")
_CODE_LIST_WINDOW = 400  # characters: a list of codes is short; a long line is not read from its start per token
_CONTEXT_WINDOW = 200  # characters before a value that the tool, flag and public-word checks read


def names_secret(name: str) -> bool:
    """Does a field's name hold a word that names a secret (``private_key``, ``DB_PASSWORD``,
    ``signature``, ``密码``)?"""
    return bool(name) and any(_CUE_RE.finditer(name.replace("_", " ").replace("-", " ")))


def _cues(text: str) -> list[tuple[int, int, str]]:
    """Every cue of ``text``, once: (start, end, ``strong`` / ``weak``); none inside the marker of
    a value already redacted (``<REDACTED_CREDENTIAL>`` names no value after it)."""
    cues = [(m.start(), m.end(), "weak" if m.group("weak") else "strong") for m in _CUE_RE.finditer(text)]
    if cues and "<" in text:
        markers = [m.span() for m in MARKER_RE.finditer(text)]
        cues = [c for c in cues if not any(a <= c[0] < b for a, b in markers)]
    return cues


def _cue_before(text: str, cues: list[tuple[int, int, str]], starts: list[int], start: int) -> str | None:
    """The cue that binds the value at ``start``: on its line, within the window, with at most
    four plain words between ("the token that finally worked was …", not "its token instead of
    the app id …"). A strong cue outranks a weak one ("login OTP=…" is bound by "OTP")."""
    low = _line_from(text, start, _CUE_WINDOW)
    found = None
    for _cue_start, cue_end, kind in cues[bisect.bisect_left(starts, low):]:
        if cue_end > start:
            break
        if len(_BETWEEN_WORD_RE.findall(text, cue_end, start)) <= 4:
            if kind == "strong":
                return kind
            found = kind
    return found


def _context_cue(cue: str | None) -> str:
    """The context model's call for a shape the characters cannot tell, by the cue that binds it."""
    return {"strong": "context-strong", "weak": "context-weak"}.get(cue or "", "context")


def _words_cue(text: str, start: int, words: str, cue: str | None) -> str:
    """The context model's call for words written as one value, by the cue that binds it — unless
    four or more of its words, and two thirds of them, are ones that lessons and programs are not
    written with, with no word of grammar between ("valley dagger turnip fossil eagle"): no
    sentence strings such words together, a passphrase does. A command in backticks (`helm repo
    add ingress-nginx`) is code, not a passphrase."""
    if (context_model().unusual_words(words) >= 4 and text[start - 1 : start] != "`"
            and not any(w.lower() in stop_words() for w in split_words(words))):
        return "phrase"
    return "context-strong" if cue == "strong" else "context-words"


_WORD_VALUE_RE = re.compile(r"[a-z]{3,}(?:[_.-][a-z]{3,}){0,2}")


def _word_value(text: str, value: str, end: int) -> bool:
    """Could ``value``, a word in lower case or two or three joined, be a password of words? Not a
    word lessons or programs are written with, not a name that a call, an attribute or an
    assignment follows, not a secret's own name (``password_hash``)."""
    model = context_model()
    return (len(value) >= 4 and bool(_WORD_VALUE_RE.fullmatch(value)) and not _NAMES_AFTER_RE.match(text, end)
            and not names_secret(value)
            and not model.ordinary_word(value)  # "cluster-admin", "read-only": words of prose, however joined
            and not (_JOINED_RE.search(value) and model.names_a_thing(value)))  # joined: a name of a program's words


_JOINED_RE = re.compile(r"[_.]")
_EMPHASIS_RE = re.compile(r"(\*{1,2}|_{1,2})([^*_\s]+)\1")


def _cue_later_in_clause(text: str, cues: list[tuple[int, int, str]], end: int) -> bool:
    """Does a cue stand later in the clause, two words or more after the value ("the demo iPad
    unlocks with … since we turned on the passcode")? A cue right after a word is the word's
    noun ("riot key …"), not its name."""
    after = _CLAUSE_END_RE.search(text, end, end + _CUE_WINDOW * 2)
    high = after.start() if after else min(len(text), end + _CUE_WINDOW * 2)
    return any(end <= cue_start and cue_end <= high and len(_BETWEEN_WORD_RE.findall(text, end, cue_start)) >= 2
               for cue_start, cue_end, _ in cues)


def candidates(text: str, holds_secret: Callable[[str], bool] | None = None) -> list[tuple[int, int, str, str | None]]:
    """(start, end, value, cue) for each token of ``text`` the model should read; ``holds_secret``:
    whether a text holds a secret, for what base64 of plain text encodes (the package's detectors)."""
    out: list[tuple[int, int, str, str | None]] = []
    for match in _USERINFO_RE.finditer(text):  # the password of a URL's user information names itself
        value = match.group("password")
        if not is_reference(value):
            out.append((match.start("password"), match.end("password"), value, "url"))
    cues = _cues(text)
    starts = [c[0] for c in cues]
    out.extend((start, end, run, "phrase") for start, end, run in runs.passphrases(text))
    for match in _QUOTED_ARGUMENT_RE.finditer(text):  # ssh-keygen -P "old horse battery", mysql -p'…'
        line_start = _line_from(text, match.start(), _CONTEXT_WINDOW)
        if _TOOL_RE.search(text, line_start, match.start()) and not is_reference(match.group("value")):
            out.append((match.start("value"), match.end("value"), match.group("value"), "phrase"))
    for start, end, run, words in runs.word_runs(text):  # the context model decides (find)
        if names_secret(run) or context_model().names_a_thing(run):
            continue  # a name ("invalid_token", "round robin mode"), not a secret
        cue = _cue_before(text, cues, starts, start) if cues else None
        if cue == "strong" or (words >= 3 and not context_model().prose_words_share(run) >= PROSE_RUN_SHARE):
            out.append((start, end, run, _words_cue(text, start, run, cue)))  # (prose: "with proper filtering based on")
    for start, end, digits in runs.digit_runs(text):
        cue = _cue_before(text, cues, starts, start) if cues else None
        if cue != "strong" and _OTP_RE.fullmatch(digits) and _OTP_WORD_RE.search(
                text, _line_from(text, start, _CUE_WINDOW), end + _CUE_WINDOW):
            cue = "strong"  # six digits where the clause speaks of a one-time code: "Authy showed 271 044"
        if cue == "strong" or not _ASSIGNED_RE.search(text, max(0, start - 3), start):  # a setting's number is its name's call
            out.append((start, end, digits, _context_cue(cue)))
    for start, end, digits in runs.short_codes(text):  # a PIN, a door code — where the clause speaks of one
        if cues or _CODE_WORD_RE.search(text, _line_from(text, start, _CUE_WINDOW), start + _CUE_WINDOW):
            out.append((start, end, digits, "context"))  # four digits are too short for a cue's lower bar
    out.extend((start, end, words, "phrase") for start, end, words in runs.mnemonics(text))
    for match in _GROUPED_SEED_RE.finditer(text):
        if _cue_before(text, cues, starts, match.start()) and any(c.isdigit() for c in match.group()):
            out.append((match.start(), match.end(), match.group(), "url"))
    for match in _CANDIDATE_RE.finditer(text):
        token, token_start = match.group().rstrip(_TRAILING), match.start()
        emphasis = _EMPHASIS_RE.fullmatch(token)
        if emphasis:  # markdown's **bold** or _italic_ around a word: the word
            token, token_start = emphasis.group(2), token_start + emphasis.start(2)
        if len(token) < 4 or "REDACTED" in token or _PINNED_RE.search(token):
            continue  # too short to be anything, a marker, or an image pinned by its digest (…@sha256:…)
        value, offset = value_of(token)
        start = token_start + offset
        end = start + len(value)
        if len(value) < 4 or (_PLAIN_RE.match(value) and not _PASSPHRASE_RE.match(value) and not (
                value.isdigit() and _CODE_CUE_RE.search(text, max(0, start - _CUE_WINDOW), start))):
            if cues and _word_value(text, value, end) and (_cue_before(text, cues, starts, start) or _CUE_AFTER_RE.match(
                    text, end) or _cue_later_in_clause(text, cues, end)):
                out.append((start, end, value, "context-word"))  # "the printer's admin PIN is violet"
            continue  # plain words and numbers, except the digits of a backup code
        cue = _cue_before(text, cues, starts, start) if cues else None
        if cue != "strong" and (cue or _HEX_RE.match(value) or _UUID_RE.match(value)) and named_secret(text, start):
            cue = "strong"  # the noun the value stands for is a credential's: "the HMAC key 3f2a…"
        if cue is None and _CUE_AFTER_RE.match(text, end):
            cue = "url"  # named a password right after: "used Adm1n as its password"
        if offset and cue is None and _OWN_NAME_RE.search(token[:offset]):
            cue = "strong"  # the value's own name
        line_start = _line_from(text, start, _CONTEXT_WINDOW)
        before = text[line_start:start]
        if _SECURE_STRING_RE.search(before):
            cue = "url"  # PowerShell's ConvertTo-SecureString "…" -AsPlainText: the argument is a password
        elif (_TOOL_FLAG_RE.search(before) or token[:offset].lower() in ("/p:", "/pass:")) and _TOOL_RE.search(before):
            cue = "url" if any(c.isdigit() or not c.isalnum() for c in value) or len(value) >= 6 else cue
        elif _in_code_list(text, line_start, start) and any(c.isdigit() for c in value):
            cue = "url"  # a recovery or backup code: short, digits, and a secret whatever its shape
        if len(value) < (4 if cue == "url" else MIN_LENGTH_CUED if cue else MIN_LENGTH):
            continue
        if _PLAIN_RE.match(value) and cue not in ("strong", "url"):
            if (not _PASSPHRASE_RE.match(value) or _NAMES_AFTER_RE.match(text, end) or names_secret(value)
                    or context_model().names_a_thing(value)):
                continue  # a name ("aws_secret_access_key = …", "get_user_by_id(…"), not a value
            cue = _words_cue(text, start, value, cue)  # a run of words is a passphrase only where the words around say so
        reference = is_reference(value)
        if (reference and cue != "url" and _DOTTED_WORDS_RE.match(value) and not _NAMES_AFTER_RE.match(text, end)
                and not context_model().names_a_thing(value)):
            cue = _words_cue(text, start, value, cue)  # words joined by dots: a module's path, or a passphrase if the words around say so
            out.append((start, end, value, cue))  # (a path's shape, which the clause decides)
            continue
        if reference or "://" in value or _EMAIL_RE.match(value) or public_shape(value, text[max(0, start - 6) : start], holds_secret):
            continue
        if value.startswith(("/", "./", "../", "~/", "\\", "$", "%", "@")) or _path_like(value) or _POD_RE.match(value):
            continue
        if (_UUID_RE.match(value) or (_HEX_RE.match(value) and digest_shaped(value))) and cue not in ("strong", "url"):
            cue = _context_cue(cue)  # a commit, a digest or an id unless the words around name a secret
        out.append((start, end, value, cue))
    return out


def find(text: str, holds_secret: Callable[[str], bool] | None = None) -> list[Finding]:
    model = likeness_model()
    context = context_model()
    found: list[Finding] = []
    for start, end, value, cue in candidates(text, holds_secret):
        line_start = _line_from(text, start, _CONTEXT_WINDOW)
        line = text[line_start:end]  # what the checks below read: the context before the value, and the value
        if cue in ("url", "phrase"):  # a run of words outranks a cue rule's guess at its first word
            found.append(Finding(start, end, TAG, PHRASE_SCORE if cue == "phrase" else SCORE, "likeness"))
            continue
        if cue != "strong" and (_public_anywhere(line, start - line_start, end - line_start)
                                or _OBJECT_WORD_RE.search(text[max(line_start, start - 40) : start])):
            continue
        if cue in _CONTEXT_THRESHOLDS:
            if context.score(text, start, end) >= _CONTEXT_THRESHOLDS[cue]:
                found.append(Finding(start, end, TAG, SCORE, "likeness"))
            continue
        if _UUID_RE.match(value) or _HEX_RE.match(value) or _PASSPHRASE_RE.match(value):
            probability = 1.0  # the shape is random by construction; the checks above kept the public ones
        else:
            probability = model.score(value)
        threshold = STRONG_CUE_SCORE if cue == "strong" else CUE_SCORE if cue else BARE_SCORE
        if probability >= threshold or (
                probability >= CONTEXT_FLOOR and context.score(text, start, end) >= CONTEXT_SCORE):
            found.append(Finding(start, end, TAG, SCORE, "likeness"))
    return found
