"""Values written as several pieces, which no single token shows: a passphrase of words
("maple river quantum lantern", "Tiger.Lemon.Anchor"), a wallet's seed words, a code in groups of
digits ("4821 9930"). Each is found by its shape here; whether it is a secret is the context
model's call (``likeness.find``), with a cue word needed where the shape is weak.
"""

from __future__ import annotations

import re

from memories.redaction.names import stop_words
from memories.redaction.patterns import is_reference

# A run starts after a connector or an opening quote: "is", "was", ":", "=", "to", "with", "as",
# "是"… and ends where its clause does (punctuation, a quote, a line's end, a joining word).
_CONNECTOR = (r"(?:\b(?:is|was|are|were|to|with|as|be|now|into|using|uses|used)\s+|[:=：]\s*"
              r"|(?:[改换设]成|[改设]为)了?\s*|[是为用]\s*)[\"'“`]?")
_JOINER = r"(?:and|but|then|so|for|on|in|at|as|after|before|since|because|which|until|when|while|from)\b"
_WORD = rf"(?!{_JOINER})[A-Za-z][a-z]{{1,11}}\d{{0,4}}"
# Possessive: a run takes every word up to a joining word, and is a value only if its clause ends there.
_WORD_RUN_RE = re.compile(rf"{_CONNECTOR}(?P<run>{_WORD}(?:[ ._-]{_WORD}){{1,23}}+)"
                          rf"(?=[\"'”`]|\s*(?:[.,;:!?)，。；]|$)|\s+{_JOINER}|\s+[—–(-])", re.MULTILINE)
_DIGIT_RUN_RE = re.compile(r"(?<![\w.:/-])(?:\d{3,8}+(?:[ -]\d{3,8}+){1,3}+|\d{6,10}+)(?![\w:/-]|\.\w)")  # a sentence's full stop may follow
# Ten or more small words in a row with no word of grammar between: no sentence is written so, a
# wallet's seed phrase (12–24 words) is. Runs of small words are read whole, then cut at the words
# of grammar: the phrase is often written inside a sentence ("derived it from witty crystal … and got").
_SMALL_WORDS_RE = re.compile(r"(?<![\w-])[a-z]{2,8}+(?:[ ,]++[a-z]{2,8}+)++(?![\w-])")
_SMALL_WORD_RE = re.compile(r"[a-z]+")
_MNEMONIC_WORDS = 10
_FUNCTION_SHARE = 0.2  # of a long run's words (a seed phrase holds "about", "again"…)


def word_runs(text: str) -> list[tuple[int, int, str, int]]:
    """(start, end, run, words) of each run of words written as one value."""
    out = []
    stops = stop_words()
    for match in _WORD_RUN_RE.finditer(text):
        run = match.group("run")
        words = re.split(r"[ ._-]", run)
        if any(w.lower() in stops for w in words[:2]) or sum(w.lower() in stops for w in words) > _FUNCTION_SHARE * len(words):
            continue  # a sentence, not a value: "is stored in the vault"
        if len(words) == 2 and (" " not in run or not all(w[0].isupper() or w[-1].isdigit() for w in words)):
            continue  # two plain words are prose ("is now broken") or a name ("invalid_token")
        out.append((match.start("run"), match.end("run"), run, len(words)))
    return out


# A code of four or five digits, or of two-digit groups ("38 51 07"): a PIN, a door code, a one-time
# code — or a port, a year, an error code, a count. Read only where a word of its clause names a
# secret or a code (``likeness.candidates``); the clause decides.
_SHORT_CODE_RE = re.compile(r"(?<![\w.,:/#$%+-])(?:\d{4,5}+|\d{2}(?: \d{2}){2,3}+)(?![\w:/%+-]|[.,]\w)")
_YEAR_RE = re.compile(r"^(?:19|20)\d{2}$")


def short_codes(text: str) -> list[tuple[int, int, str]]:
    """(start, end, digits) of each code of four or five digits, or of two-digit groups; years aside."""
    return [(m.start(), m.end(), m.group()) for m in _SHORT_CODE_RE.finditer(text) if not _YEAR_RE.match(m.group())]


def digit_runs(text: str) -> list[tuple[int, int, str]]:
    """(start, end, digits) of each code of six or more digits, whole or in groups."""
    return [(m.start(), m.end(), m.group()) for m in _DIGIT_RUN_RE.finditer(text)]


def mnemonics(text: str) -> list[tuple[int, int, str]]:
    """(start, end, words) of each run of ten or more words of three to eight letters holding no
    stop word."""
    stops = stop_words()
    out = []
    for match in _SMALL_WORDS_RE.finditer(text):
        if match.group().count(" ") + match.group().count(",") < _MNEMONIC_WORDS - 1:
            continue
        run: list[re.Match] = []
        for word in [*_SMALL_WORD_RE.finditer(text, match.start(), match.end()), None]:
            if word is not None and len(word.group()) >= 3 and word.group() not in stops:
                run.append(word)
                continue
            if len(run) >= _MNEMONIC_WORDS:
                out.append((run[0].start(), run[-1].end(), text[run[0].start() : run[-1].end()]))
            run = []
    return out


# A passphrase of words written with spaces after the word that names it: "passphrase for the GPG
# key: falcon meadow otter", "the password is correct horse battery staple", "助记词是 abandon …".
_PASSPHRASE_RUN_RE = re.compile(
    r"(?i)(?:\b(?:pass[ -]?phrase|password|passwd|mnemonic|seed[ -]phrase|recovery[ -]phrase|wi-?fi[ -]password)s?"
    r"(?:\s+(?:for|of|on)\s+(?:the\s+|my\s+|our\s+|this\s+)?[\w.-]+(?:\s+[\w.-]+){0,2}?)?"
    r"(?:\s*(?:[:=]|\bis\b|\bwas\b|\bare\b)\s*|\s+(?=[a-z]+\s+[a-z]+\s+[a-z]+))"
    r"|(?:密码|口令|助记词|密语)\s*(?:是|为|：|:)?\s*)"
    r"[\"'“`]?(?P<run>[a-z]{3,12}(?:[ -][a-z]{2,12}){2,23})")
_PHRASE_CUE_RE = re.compile(r"(?i)phrase|mnemonic|助记词|密语")
_CLAUSE_END_AFTER_RE = re.compile(r"\s*(?:[.,;:!?)\"'”`，。；]|$)")


def _passphrase(match: re.Match[str], text: str) -> str | None:
    """The words of a passphrase after its cue: three or more, none a stop word ("the password is
    stored in the vault" names none). After "password" the words must end the clause ("the Wi-Fi
    password is: maple orbit tulip."); after "passphrase" or "mnemonic" they need not."""
    words: list[str] = []
    for word in re.split(r"([ -])", match.group("run")):
        if word in (" ", "-"):
            words.append(word)
            continue
        if word.lower() in stop_words():
            break
        words.append(word)
    run = "".join(words).rstrip(" -")
    if len(re.findall(r"[a-z]+", run)) < 3 or is_reference(run):
        return None
    end = match.start("run") + len(run)
    if not _PHRASE_CUE_RE.search(match.group()) and not _CLAUSE_END_AFTER_RE.match(text, end):
        return None
    return run


def passphrases(text: str) -> list[tuple[int, int, str]]:
    """(start, end, words) of each passphrase of words written after the word that names it."""
    out = []
    for match in _PASSPHRASE_RUN_RE.finditer(text):
        run = _passphrase(match, text)
        if run:
            out.append((match.start("run"), match.start("run") + len(run), run))
    return out
