"""Secrets named in a sentence, the way agents write memories (docs/flow.md#redaction).

"The staging password is hunter2x", "I set the credential `…` in the CI settings", "pwd
Winter2024", "数据库密码是 hunter2x": a value-like word within a few words after a cue word is a
secret unless it is a stand-in (``patterns.is_reference``: ``$VAR``, ``<key>``, ``****``,
``settings.X``…).

- **Cues.** Strong ones name a secret by themselves (password, passphrase, passwd, pwd, pw, api key,
  access key, secret key, private key, client secret, access / auth / bearer token, app password,
  密码, 口令, 密钥, 令牌, 凭证, 凭据, 授权码); weak ones are also ordinary words (pass, secret,
  token, credential, creds, auth) and need a connector or quotes before the value.
- **Between cue and value**: a short qualifier ("for the staging database", "of the ops
  account", "we used"), connectors ("is", "was", "=", ":", "to", "as", "'s", 是, 为, 改成, 设置为…),
  fillers ("now", "set", "the") and quotes, backticks or brackets around the value.
- **The value**: quoted, any stand-in excepted; bare, it must look like a password — letters with
  digits or symbols, mixed case, digits alone after a strong cue, or, after a strong cue and a
  connector, a plain word that is not a common English one ("sunflower", not "required").
- **A little further**: after a cue, the same sentence's next "is …" / ": …" with a value that
  has letters and digits or symbols ("the pass was wrong; the right one is Jenk1ns!").
"""

from __future__ import annotations

import re

from memories.redaction.patterns import Finding, is_reference

TAG = "REDACTED_CREDENTIAL"
SCORE = 0.8

_STRONG = (
    r"pass(?:word|wd|phrase|code)s?|pwd|pw|api[ _-]?keys?|apikeys?|access[ _-]?keys?|secret[ _-]?keys?"
    r"|private[ _-]?keys?|client[ _-]?secrets?|(?:access|auth|bearer|api|refresh|session)[ _-]?tokens?|bearer"
    r"|app[ _-]?passwords?|personal[ _-]access[ _-]tokens?|(?-i:PATs?)"
)
_WEAK = r"pass|secrets?|tokens?|credentials?|creds|auth"
_CJK_CUES = r"密码|口令|密钥|秘钥|令牌|凭证|凭据|授权码"
_CUE_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9_$-])(?:(?P<strong>{_STRONG})|(?P<weak>{_WEAK}))(?![A-Za-z0-9_-])|(?P<cjk>{_CJK_CUES})"
)
_CONNECTOR = (
    r"is|was|were|are|be|'s|’s|=|:=|:|：|to|as|becomes|became|reads|gave\s+it|typed|entered|used|tried"
    r"|是|为|為|改成了?|改为|设置为|设为|设置成|换成了?|变成了?|设成"
)
_FILLER = (r"now|still|just|simply|literally|actually|currently|the|a|set|changed|reset|updated|always|also|then|here"
           r"|其实|现在|还是|就是|仍然|已经|也")
_OPEN = "\"'`“‘(（「【["
_CLOSE = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "(": ")", "（": "）", "「": "」", "【": "】", "[": "]"}
# After the cue: an optional qualifier of up to four words, connectors and fillers, then the value.
_AFTER_RE = re.compile(
    r"(?P<qualifier>(?:'s|’s)?(?:\s+(?:for|of|on|in|at|with|from|that|which|we|i|you|they|he|she|it|and|/)"
    r"(?:\s+[^\s,;:：=。，；]+){0,4}?(?=\s*(?:" + _CONNECTOR + r")(?:\s|[\"'`“‘(（「【\[]|$)))?)"
    r"(?P<link>(?:\s*,?\s*(?:" + _CONNECTOR + r"|" + _FILLER + r")(?=\s|[\"'`“‘(（「【\[]|$|[^\x00-\x7f])){0,4})"
    r"\s*(?P<value>[" + _OPEN + r"][^\n]{1,200}|[^\s,;，。；、！？()（）「」【】\"'`“”‘’<>]+)",
    re.IGNORECASE,
)
_BARE_END = re.compile(r"[.:,;!?]+$")
_SENTENCE_END = re.compile(r"(?<=[^\s.])[.!?](?:\s|$)|\n|。|！|？")
# The same sentence's next "is …" / ": …" (the loose pass).
_LATER_RE = re.compile(
    r"(?:\bis|\bwas|'s|’s|:|=|：|是|为)\s*(?:(?:now|still|just|set\s+to|changed\s+to|其实|现在|还是)\s*)?"
    r"(?P<q>[\"'`“‘(（「]?)(?P<value>[^\s,;，。；、！？()（）「」\"'`“”‘’<>]+)", re.IGNORECASE
)
_LATER_WORDS = 14

# Plain words that follow "password is" in ordinary text: states, verbs, function words.
_COMMON = set("""
required wrong incorrect correct invalid valid empty blank missing expired expiring revoked set unset stored saved
hashed salted encrypted hidden masked reset changed rotated needed necessary mandatory optional generated shown
displayed printed logged sent given provided accepted rejected weak strong long short secure insecure sensitive
case unknown known available unavailable ok okay fine good bad right same different new old default temporary
permanent random unique visible stale fresh current previous next null none nil true false there here not no yes
also still now then already only just too very really being been used usable enough longer shorter checked
verified validated passed forwarded read written loaded injected mounted fetched retrieved pulled pushed exposed
leaked compromised committed hardcoded configured defined specified supplied entered typed copied pasted cached
refreshed renewed issued created deleted removed added updated broken fixed working ignored truncated encoded
decoded plain plaintext cleartext secret private public personal shared global local identical irrelevant
unrelated important what which that this these those it its your my our their his her the a an in on at for from
with by of to into via per under over about like unlike and or but if when where while because so since until
before after during without within kept inside outside elsewhere somewhere anywhere nowhere everywhere gone lost
forgotten unchanged something anything nothing everything someone anyone one ones all any each every some more
most less least other another such own both either neither due able unable going trying meant supposed allowed
needed expected accepted handled managed owned rejected limited scoped bound tied linked attached assigned
granted denied missing absent present correct case-sensitive mine yours ours theirs his hers way part field
value type string text number length format policy manager prompt reset hash header file env variable key token
password secret credential credentials login user username account access admin root who whom whose how why
""".split())
_WORD_SUFFIXES = ("ed", "ing", "ly", "able", "ible", "tion", "sion", "ment", "ness", "ous", "ive", "ful", "less")
_SET_VERB_RE = re.compile(r"(?i)\b(?:set|sets|setting|change|changed|changes|changing|reset|resets|update|updated"
                          r"|rotate|rotated|rotating|switch|switched)\b")
_VERSION_RE = re.compile(r"^v?\d+(?:\.\d+)+[a-z0-9.+-]*$", re.IGNORECASE)
_UNIT_RE = re.compile(r"^\d+(?:\.\d+)?(?:ms|s|m|h|d|px|em|rem|kb|mb|gb|tb|k|x|%|chars?|bytes?|bits?)$", re.IGNORECASE)
_CJK_RE = re.compile(r"[\u3400-\u9fff]")
_SYMBOLS = set("!@#$%^&*+=?~|")


def _plain_word_ok(word: str) -> bool:
    """A bare word that may be a password: not a common English word or an inflected one."""
    lower = word.lower()
    if lower in _COMMON or not word.isalpha() or len(word) < 4:
        return False
    return not (len(word) >= 6 and lower.endswith(_WORD_SUFFIXES))


def _code_like(value: str) -> bool:
    return bool(re.fullmatch(r"[a-z]+(?:_[a-z]+)+|[A-Z][A-Z]+(?:_[A-Z]+)+", value))


def strong_value(value: str) -> bool:
    """Letters with digits or symbols, or mixed case inside a word: a password's look."""
    if len(value) < 4 or "://" in value or value.startswith(("-", "/", "~", "./", "@")):
        return False
    if _VERSION_RE.match(value) or _UNIT_RE.match(value) or is_reference(value) or _code_like(value):
        return False
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    symbols = any(c in _SYMBOLS for c in value)
    if letters and (digits or symbols):
        # "Argon2-hashed", "sha256-based": a word with a common English part is a description.
        parts = [p for p in re.split(r"[-_.]", value) if p]
        return not (len(parts) > 1 and any(p.lower() in _COMMON or p.lower().endswith(_WORD_SUFFIXES[:2])
                                           for p in parts if p.isalpha() and len(p) >= 4))
    core = value[1:]
    if all(re.fullmatch(r"[A-Z][a-z]*|[A-Z]+", part) for part in re.split(r"[-_]", value) if part):
        return False  # Title-Case words: a header or a class name (X-Api-Key, Content-Type)
    return letters and any(c.isupper() for c in core) and any(c.islower() for c in core) and not value.isupper()


def _quoted(text: str, start: int) -> tuple[int, int] | None:
    """The span inside the quotes or brackets opening at ``start``, on the same line."""
    closer = _CLOSE[text[start]]
    end = text.find(closer, start + 1)
    newline = text.find("\n", start + 1)
    if end == -1 or (newline != -1 and newline < end) or end - start - 1 > 200:
        return None
    return start + 1, end


def _accept(value: str, *, strong_cue: bool, linked: bool, quoted: bool, plain_ok: bool) -> bool:
    value = value.strip()
    if len(value) < 3 or is_reference(value) or value.startswith("<") or _code_like(value):
        return False
    if re.fullmatch(r"[A-Za-z_]+=", value):
        return False  # the name of the next assignment (realm=), not a value
    if quoted:
        if value.isalpha():
            return strong_cue and _plain_word_ok(value)
        return strong_value(value) or (strong_cue and (len(value) >= 8 or not any(c.isspace() for c in value)))
    if not (strong_cue or linked):
        return False
    if strong_value(value):
        return True
    if value.isdigit():
        return strong_cue and linked and len(value) >= 4
    if _CJK_RE.search(value):
        return False
    return strong_cue and linked and plain_ok and _plain_word_ok(value)


def _strict(text: str, cue: re.Match[str], found: list[Finding]) -> bool:
    position = cue.end()
    if position < len(text) and cue.start() > 0 and text[position] in "\"'`" and text[cue.start() - 1] == text[position]:
        position += 1  # a quoted key ("access_token": …): the value follows its closing quote
    match = _AFTER_RE.match(text, position)
    if not match:
        return False
    strong_cue = cue.group("weak") is None
    link = match.group("link") or ""
    linked = bool(re.search(r"(?i)(?:^|[\s,])(?:" + _CONNECTOR + r")(?:\s|$)|[:=：是为為成]", link))
    value_start = match.start("value")
    first = text[value_start]
    if first in _OPEN:
        span = _quoted(text, value_start)
        if span is None:
            return False
        value = text[span[0] : span[1]]
        if first in "(（[【" and any(c.isspace() for c in value.strip()):
            return False  # a remark in brackets ("token (exists, not expired)"), not a value
        if _accept(value, strong_cue=strong_cue, linked=linked, quoted=True, plain_ok=True):
            found.append(Finding(span[0], span[1], TAG, SCORE, "prose"))
            return True
        return False
    value = _BARE_END.sub("", match.group("value"))
    # A plain word after "to" is a password only after set / change / reset ("changed the
    # password to marmalade"), not in "the token to access the API".
    plain_ok = not re.search(r"(?i)\bto\s*$", link) or bool(_SET_VERB_RE.search(text[max(0, cue.start() - 60) : cue.start()]))
    if _accept(value, strong_cue=strong_cue, linked=linked, quoted=False, plain_ok=plain_ok):
        found.append(Finding(value_start, value_start + len(value), TAG, SCORE, "prose"))
        return True
    return False


def _later(text: str, cue: re.Match[str], found: list[Finding]) -> None:
    """The loose pass: the sentence's next "is …" / ": …" with a password-looking value."""
    sentence_end = _SENTENCE_END.search(text, cue.end())
    stop = sentence_end.start() if sentence_end else len(text)
    window = text[cue.end() : stop]
    words = window.split()
    if len(words) > _LATER_WORDS:
        window = window[: window.find(words[_LATER_WORDS])]
    for match in _LATER_RE.finditer(window):
        value = _BARE_END.sub("", match.group("value"))
        if strong_value(value) and not _CJK_RE.fullmatch(value):
            start = cue.end() + match.start("value")
            found.append(Finding(start, start + len(value), TAG, SCORE * 0.95, "prose"))
            return


# Where a cue can start: the first letters of every cue, found with str.find (a scan of the whole
# text with the cue pattern costs ten times more on megabytes of tool output).
_STEMS = ("pass", "pwd", "pw", "api", "access", "secret", "private", "client", "auth", "bearer", "refresh",
          "session", "app", "personal", "token", "cred", "pat", "密码", "口令", "密钥", "秘钥", "令牌", "凭证", "凭据", "授权码")


def _cues(text: str) -> list[re.Match[str]]:
    lower = text.lower()
    starts: set[int] = set()
    for stem in _STEMS:
        position = lower.find(stem)
        while position != -1:
            starts.add(position)
            position = lower.find(stem, position + 1)
    cues: list[re.Match[str]] = []
    end = -1
    for position in sorted(starts):
        if position < end:
            continue
        cue = _CUE_RE.match(text, position)
        if cue:
            cues.append(cue)
            end = cue.end()
    return cues


def find(text: str) -> list[Finding]:
    found: list[Finding] = []
    for cue in _cues(text):
        if not _strict(text, cue, found):
            _later(text, cue, found)
    return found
