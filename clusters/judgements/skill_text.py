"""How the text of a memory is shaped, read by offline skill synthesis (docs/flow.md#crystallization).

Rules about sentence shapes, not about any one topic: an instruction starts with a verb ("Add",
"Added", "We pinned", "you need to run") or is a bare command; a symptom names a failure
("fails", "cannot", an ``...Error`` or ``E...`` code, a quoted message); a caveat carries a
condition or a negation; a command or a setting is code whose head (``pip install -e``,
``pythonpath``) says which action it is.
"""

from __future__ import annotations

import re

from memories.text import normalise_space

# Base forms of verbs that open an instruction in technical notes. Past tenses and third
# persons are derived from them (``base_verb``), so "Added"/"adds"/"add" all read as "add".
VERBS = set("""
add adjust allow answer apply avoid back bind bump call cap catch change check choose clean clear close commit
compare configure convert copy create declare decorate define delete deploy describe disable downgrade drop echo
edit enable ensure exclude export expose fetch find fix force forward freeze generate give grant guard handle
hunt import increase inject insert install keep kill label launch let limit list load lock log look make map mark
measure mention merge migrate mount move name open override pass patch pin place point prefer print provide
prune pull push put raise read rebase rebuild recreate reduce refresh register reinstall remove rename replace
reset restart restore restrict retry return reuse rerun revert rewrite rotate run scope select send serve set
share size skip sort source specify split squash start stop store swap switch tag tell test throttle touch
track trigger trim turn unset update upgrade use validate verify wait wrap write format declare call
""".split())
CHECK_VERBS = {"check", "find", "look", "inspect", "list", "print", "read", "compare", "measure", "search",
               "identify", "trace", "grep", "locate", "diagnose", "reproduce", "log"}
VERIFY_VERBS = {"verify", "rerun", "re-run", "retest", "re-test", "test", "confirm"}
RULE_OPENERS = {"don't", "do", "never", "always", "only", "prefer", "avoid", "no"}
# Command-line tools whose name opens a bare command ("pnpm add <pkg>").
COMMANDS = set("""
apt apt-get bash brew bundle cargo chmod chown corepack curl docker dotnet export fuser gh git go gradle helm
kill kubectl lsof make mix mvn netstat node npm npx pip pip3 pipx pnpm poetry psql pytest python python3 rails
ruff ssh ssh-add ssh-keygen sudo systemctl taskkill terraform tox uv yarn
""".split())
FUNCTION_WORDS = set("""
a an the of in on at to for from with without under over into onto by as after before when while if unless
and or but not no is are be it its this that your my our their so than then via per
""".split())
DETERMINERS = {"the", "a", "an", "my", "our", "your", "their", "every", "each", "some", "all", "any", "this",
               "these", "that", "those", "after", "when", "on", "in"}
FAILURE_WORDS = re.compile(
    r"\b(fail\w*|error\w*|cannot|can't|couldn't|won't|doesn't|does not|isn't|not found|denied|refused|crash\w*|"
    r"dies|died|hangs?|broke\w*|broken|killed|skipped|rejected|timeout|timed out|missing|invalid|exceeded|"
    r"too many|no such|no module named|not installed|unable|exploded|leak\w*|never \w+s)\b", re.I)
CONDITION_RE = re.compile(r"^(if|when|unless|on|for|with|in)\b|\b(only if|only when|unless|except)\b", re.I)
NEGATION_RE = re.compile(r"\b(not|n't|never|no longer|instead of|rather than|did not help|does not help)\b", re.I)
_LEAD_RE = re.compile(r"^(?:(?:then|also|so|and|finally|instead)\b[,:]?|(?:fix|solution|workaround|resolution|answer|"
                      r"tl;dr|til|note|lesson|rule)\s*:)\s+", re.I)
# "Kubernetes: add a preStop sleep": a setting or a tool named before the instruction.
_LABEL_RE = re.compile(r"^[^:`'\"]{1,30}:\s+(?=\S)")
_SUBJECT_RE = re.compile(r"^(?:i|we|they|you)\s+(?:(?:should|must|need to|have to|had to|can|could|just|"
                         r"then|finally|also)\s+)*", re.I)
_CONJOINED_RE = re.compile(r"(\b(?:and|then|,)\s+)([a-z]+ed)\b")
_MODAL_RE = re.compile(r"^(?:(?:you\s+)?(?:should|must|need to|have to)|just|simply|please)\s+", re.I)
_SPLIT_RE = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<=[^\s.][.!?])\s+(?=[A-Za-z`\"'(])|;\s+|\s+--\s+|\s+—\s+|\n+")
_CODE_RE = re.compile(r"`([^`]+)`")
_SETTING_RE = re.compile(r"\b([A-Za-z_][\w.-]*)\s*[:=]\s*(\"[^\"]*\"|'[^']*'|\[[^\]]*\]|[\w./-]+)")
_FLAG_RE = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
_COMMAND_RE = re.compile(r"(?<![\w./-])(?:" + "|".join(sorted(map(re.escape, COMMANDS), key=len, reverse=True))
                         + r")(?:\s+(?:-{1,2}[\w-]+|[a-z][\w.-]*)){1,2}")
_DECORATOR_RE = re.compile(r"(?<![\w])@([A-Za-z_][\w.]*)")
# Where an error message quoted in prose ends: after a quoted name, at a conjunction or a dash.
_MESSAGE_END_RE = re.compile(r"(?<=['\"])\s|\s+(?:although|though|while|when|but|because|even|and|after)\s|\s+--?\s")
_ERROR_RE = re.compile(
    r"\b([A-Z][A-Za-z]+(?:Error|Exception|Warning)\b(?::\s*[^.;\n\"]{3,80})?)"   # ModuleNotFoundError: No module…
    r"|\b(E[A-Z]{4,})\b"                                                        # EADDRINUSE, ERESOLVE
    r"|\b((?i:exit|status) code \d+)\b"
    r"|\b([1-5]\d\d (?:[A-Z][a-z]+ ?){1,3})"                                    # 502 Bad Gateway
    r"|[\"“]((?i:[^\"”]*(?:error|denied|not found|no such|failed|cannot|refused|too many|no space|already|not "
    r"allowed|not supported|invalid)[^\"”]*))[\"”]")


def sentences(text: str) -> list[str]:
    """Sentences and clauses that stand alone ("a; b", "a -- b"), with their end punctuation cut."""
    parts = (p.strip(" .\t") for p in _SPLIT_RE.split(text.strip()))
    return [normalise_space(p) for p in parts if len(p.split()) >= 1 and p.strip(" .")]


def base_verb(word: str) -> str | None:
    """``word`` as a known verb's base form: "Added" → "add", "pinned" → "pin", "froze" → "freeze"."""
    w = word.lower().strip(",:")
    irregular = {"froze": "freeze", "ran": "run", "made": "make", "put": "put", "set": "set", "found": "find",
                 "chose": "choose", "gave": "give", "kept": "keep", "let": "let", "wrote": "write", "split": "split",
                 "read": "read", "rebuilt": "rebuild", "built": "build", "took": "take", "told": "tell"}
    if w in VERBS or w in irregular:
        return irregular.get(w, w)
    candidates = []
    if w.endswith("ied"):
        candidates.append(w[:-3] + "y")
    if w.endswith("ed"):
        candidates += [w[:-2], w[:-1], w[:-3] if len(w) > 4 and w[-3] == w[-4] else ""]
    if w.endswith("es"):
        candidates += [w[:-2], w[:-1]]
    elif w.endswith("s"):
        candidates.append(w[:-1])
    return next((c for c in candidates if c in VERBS), None)


def _command_head(words: list[str]) -> str:
    """``pip install -e .`` → "pip install -e"; ``lsof -ti:4000`` → "lsof -ti"; placeholders and
    values (``<pkg>``, ``:3000``, ``4412``) are left out."""
    head = [words[0]]
    for word in words[1:3]:
        word = re.split(r"[:=]", word)[0]
        if not word or word.startswith(("<", "'", '"', "/", ".", "|")) or word[0].isdigit():
            break
        head.append(word)
        if word.startswith("-"):
            break
    return " ".join(head).lower()


def code_heads(text: str) -> set[str]:
    """What a step's code says it does: a command's tool and sub-command with its first flag
    or argument (``pip install -e``), a setting's key (``pythonpath``), a long flag
    (``--legacy-peer-deps``), a decorator. The tool alone is ``tool:<name>``."""
    commands = [span.split() for span in _CODE_RE.findall(text)]
    commands += [m.group(0).split() for m in _COMMAND_RE.finditer(_CODE_RE.sub(" ", text))]
    heads: set[str] = set()
    for words in commands:
        if words and (words[0].lower() in COMMANDS or (len(words) > 1 and words[1].startswith("-"))):
            heads.add(_command_head(words))
            heads.add("tool:" + words[0].lower())
    heads.update(m.group(1).lower() for m in _SETTING_RE.finditer(text)
                 if m.group(1).lower() not in {"http", "https", "e.g", "i.e", "reason"} and len(m.group(1)) > 2)
    heads.update(f.lower() for f in _FLAG_RE.findall(text) if f.startswith("--") and len(f) > 4)
    heads.update("@" + d.lower() for d in _DECORATOR_RE.findall(text))
    return heads


def instruction(sentence: str, *, reported: bool = True, commands: bool = True) -> str | None:
    """The sentence as an instruction in the imperative, or None when it is not one: "Added X"
    → "Add X", "We pinned X" → "Pin X", "you need to run X" → "Run X", "pnpm add <pkg>" →
    "Run `pnpm add <pkg>`", "Never X" stays. With ``reported=False`` only the imperative
    itself counts: in a problem's description "Moved the code to src/" is what happened, not
    what to do. ``commands=False``: a bare command is not an instruction."""
    text = _LEAD_RE.sub("", sentence.strip()).strip()
    text = _SUBJECT_RE.sub("", _MODAL_RE.sub("", text)) if re.match(r"(?i)(i|we|they|you|should|must|need|"
                                                                        r"have|just|simply|please)\b", text) else text
    if not text:
        return None
    words = text.split()
    first = words[0].lower().strip(",:")
    if first in RULE_OPENERS and len(words) > 1 and not (FAILURE_WORDS.search(text) or error_signatures(text)):
        return text[0].upper() + text[1:]
    verb = base_verb(first)
    if verb and not reported and verb != first:
        return None
    if verb and not (len(words) > 1 and words[1].lower() in {"is", "are", "was", "were", "has", "have"}):
        rest = _CONJOINED_RE.sub(lambda m: m.group(1) + (base_verb(m.group(2)) or m.group(2)), text[len(words[0]):])
        return verb.capitalize() + rest
    label = _LABEL_RE.match(text)
    # "Fix: run X" is a label on an instruction; "failed to copy files: write …" is an error message
    if label and not error_signatures(text[: label.end()]) and not FAILURE_WORDS.search(text[: label.end()]):
        inner = instruction(text[label.end():], reported=reported, commands=False)
        if inner:
            return f"{text[: label.end()]}{inner[0].lower()}{inner[1:]}"
    if not (reported and commands) or error_signatures(text) or FAILURE_WORDS.search(text):
        return None
    if text.startswith("`") and len(_CODE_RE.sub("", text).split()) <= 3:
        return f"Run {text}"
    if words[0] in COMMANDS and len(words) > 1 and "!" not in text:
        return f"Run `{text}`"
    return None


def phase(step: str) -> int:
    """0 check, 1 fix, 2 verify: where a step goes in a procedure."""
    first = base_verb(step.split()[0]) if step.split() else None
    if first in VERIFY_VERBS or re.search(r"\b(again|afterwards|now passes|now works)\b", step, re.I) and first in CHECK_VERBS:
        return 2
    if first in CHECK_VERBS:
        return 0
    return 1


def is_caveat(sentence: str) -> bool:
    """A condition or a disagreement: "If …", "unless …", "did not help", "not necessarily"."""
    return bool(CONDITION_RE.search(sentence) or NEGATION_RE.search(sentence))


def error_signatures(text: str) -> list[tuple[str, str]]:
    """(key, as written) for each error the text quotes; the key ignores names and numbers that
    differ between reports ("No module named 'acme'" and "…'billing'" share one key)."""
    found = []
    for match in _ERROR_RE.finditer(text):
        written = _MESSAGE_END_RE.split(next(g for g in match.groups() if g))[0].strip(" :,")
        named = match.group(1) or match.group(2)
        key = (named.split(":")[0] if named else
               re.sub(r"'[^']*'|\"[^\"]*\"|\b\d+\b|:\S+|/\S+", "_", written.lower()))
        found.append((" ".join(key.split())[:80], written[:120]))
    return found


def is_keyword_list(name: str) -> bool:
    """A name that is a list of terms ("layout · modulenotfounderror · package · pytest"), not a phrase."""
    parts = [p for p in re.split(r"\s*[·•|,;/]\s*|\s+-\s+", name.strip()) if p]
    if len(parts) >= 3 and all(len(p.split()) <= 2 for p in parts):
        return True
    words = name.split()
    return (len(words) >= 3 and name == name.lower() and not any(w in FUNCTION_WORDS for w in words)
            and base_verb(words[0]) is None)


_CLAUSE_END_RE = re.compile(r":\s|;|\s--\s|\s—\s|,\s(?:but|although|though|while|so|because|which)\b|"
                            r"\s(?:although|though|while|because|even though|even if|since|whereas|so that|so)\s|"
                            r"\.\s|\.$")
_FINITE_RE = re.compile(r"\b(fails|failed|dies|died|breaks|broke|crashes|crashed|hangs|hung|errors|exits|exited|"
                        r"keeps|returns|returned|reports|reported|shows|throws|raises|raised|gets|got|runs|"
                        r"stops|stopped|loses|lost|passes|passed|works|worked|hits|says|answers|prints|is|are|was|were|"
                        r"(?:cannot|can't|doesn't|does not|won't|did not|didn't|never)(?:\s+[a-z]+)?)\b")
_GERUNDS = {"is": "being", "are": "being", "was": "being", "were": "being", "cannot": "unable to",
            "can't": "unable to", "doesn't": "not", "does not": "not", "won't": "not", "did not": "not",
            "didn't": "not", "dies": "dying", "died": "dying", "hung": "hanging", "broke": "breaking",
            "got": "getting", "lost": "losing", "ran": "running"}


def first_clause(text: str, max_words: int = 12) -> str:
    """The sentence's main clause: cut at a colon, a dash, "although"/"while"/"because", cut
    to ``max_words`` at most, end punctuation and quotes removed."""
    text = normalise_space(text)
    match = _CLAUSE_END_RE.search(text, 12)
    clause = text[: match.start()] if match else text
    words = clause.split()
    if len(words) > max_words:
        words = words[:max_words]
        while words and words[-1].lower() in FUNCTION_WORDS:
            words.pop()
    return _phrase(" ".join(words).split(), max_words)


def gerund(verb: str) -> str:
    """"fails" → "failing", "crashed" → "crashing", "runs" → "running", "doesn't pick" → "not
    picking", "cannot find" → "unable to find", "never hits" → "never hitting"."""
    v = verb.lower()
    negation = re.match(r"(cannot|can't|doesn't|does not|won't|did not|didn't|never)\s+([a-z]+)$", v)
    if negation:
        word, then = negation.groups()
        if word in {"cannot", "can't"}:
            return f"unable to {then}"
        return f"{'never' if word == 'never' else 'not'} {gerund(then)}"
    if v in _GERUNDS:
        return _GERUNDS[v]
    stem = v[:-2] if v.endswith("ed") else v[:-1] if v.endswith("s") else v
    if v.endswith("ed") and base_verb(v):
        stem = base_verb(v) or stem
    if stem.endswith("e") and not stem.endswith("ee"):
        stem = stem[:-1]
    if re.fullmatch(r"(?:[^aeiou]|^)[aeiou][bdgmnprt]", stem[-3:]) and len(stem) <= 4:
        stem += stem[-1]
    return stem + "ing"


def _phrase(words: list[str], limit: int) -> str:
    words = words[:limit]
    while words and words[-1].lower().strip(",") in FUNCTION_WORDS:
        words.pop()
    text = " ".join(words).strip(" ,.;:-")
    if text.count('"') % 2:  # a quotation cut short: end before it
        return _phrase(text.rsplit('"', 1)[0].split(), limit)
    return text


_STATEMENT_RE = re.compile(r"^(?:this|the|our) (?:repo|repository|project|team|codebase|app|service) "
                           r"(uses|prefers|requires)\s+", re.I)


def imperative_name(summary: str, *, max_words: int = 12) -> str:
    """A name in the imperative from a memory's one-line summary (see ``named``)."""
    return named(summary, max_words=max_words)[0]


def named(summary: str, *, max_words: int = 12) -> tuple[str, int]:
    """A name in the imperative and how plainly the summary gave it (0 best): 0, an
    instruction keeps its main clause ("Lock dependencies with pip-tools"); 1, a symptom
    becomes "Fix …" with its verbs as gerunds ("pytest fails at collection with X" → "Fix
    pytest failing at collection with X"; "X works but Y fails" names Y); 2, a report of what
    was done is told as an instruction ("Switched X to Y" → "Switch X to Y"), a convention
    "This repo uses X" → "Use X"; 3, anything else, "Apply: …"."""
    summary = re.sub(r"^[^\w`\"'(]+", "", normalise_space(summary))
    label = re.match(r"(?:[A-Z]\w*)?(?:Error|ERROR|error|Exception):\s+", summary)
    if label:  # "Error: listen EADDRINUSE: address in use" names its failure after the label
        return "Fix " + _phrase(summary[label.end():].split(), max_words), 1
    conditional = re.match(r"(?i)(?:if|when|unless)\b[^,]+,\s*(.+)", summary)
    if conditional and instruction(conditional.group(1), reported=False, commands=False):
        summary = conditional.group(1)
    clause = first_clause(summary, max_words=max_words + 6)
    if not clause:
        return "", 3
    parts = re.split(r",?\s+(?:and\s+)?(?:now|but)\s+", clause)
    failing = [p for p in parts if FAILURE_WORDS.search(p) or error_signatures(p)]
    told = instruction(clause, reported=False, commands=False)
    if told and len(parts) == 1:
        return _phrase(told.split(), max_words), 0
    opener = clause.split()[0].lower()
    narrated = base_verb(opener) not in (None, opener) and len(parts) == 1
    if failing and not narrated:
        symptom = failing[-1]
        if _FINITE_RE.match(symptom) or FAILURE_WORDS.match(symptom) or base_verb(symptom.split()[0]):  # "… but fails in the full suite" has its subject before
            symptom = clause
        if _FINITE_RE.search(symptom):
            phrase = _FINITE_RE.sub(lambda m: gerund(m.group(1)), symptom)
        else:  # a verb the list does not hold: the first third-person form after the subject
            words = symptom.split()
            at = next((i for i, w in enumerate(words[1:], 1) if w.endswith("s") and base_verb(w) not in (None, w)), 0)
            phrase = " ".join(words[:at] + [gerund(words[at])] + words[at + 1:]) if at else symptom
        lead = phrase.split()[0]
        phrase = phrase[0].lower() + phrase[1:] if lead.lower() in DETERMINERS else phrase
        return "Fix " + _phrase(phrase.split(), max_words), 1
    reported = instruction(clause, commands=False)
    if reported:
        return _phrase(reported.split(), max_words), 2
    convention = _STATEMENT_RE.match(clause)
    if convention:
        return _phrase([convention.group(1)[:-1].capitalize()] + clause[convention.end():].split(), max_words), 2
    return "Apply: " + _phrase(clause.split(), max_words), 3
