"""Person names beyond what the small spaCy model finds, and fewer false ones.

The NER model (en_core_web_sm) misses single first names, names in lists and names after
cues such as "my name is"; it also calls tool names ("Django") and identifiers people. Here:

- ``plausible``: a PERSON span must look like a name (letters, initials, particles; no digits,
  underscores or code) and not be a well-known technical term;
- ``cue_names``: names after strong cues ("my name is", "Name:", "Dear", "Mr.", "my son"...);
- ``expand``: every item of a list ("Kónya, Becker and Vasquez") that holds a found name, and
  every other occurrence of a found name's words, is a name too.
"""

from __future__ import annotations

import functools

import regex

from memories.redaction.patterns import Finding

_WORD = r"\p{Lu}[\p{Ll}\p{Lu}'’\-]*\p{Ll}[\p{Ll}'’\-]*"  # Capitalised word with lower-case letters
_INITIAL = r"\p{Lu}\."
_PARTICLE = r"(?:van|von|der|den|de|da|di|du|del|della|la|le|ten|ter|bin|ibn|al|el|dos|das)"
_NAME = rf"{_WORD}(?:[ \t]+(?:{_INITIAL}|\p{{Lu}}(?=[ \t])|{_PARTICLE}(?=[ \t]+\p{{Lu}})|{_WORD})){{0,3}}"
_LOWER_NAME = r"\p{L}[\p{L}'’\-]+(?:[ \t]+\p{L}[\p{L}'’\-]+){0,2}"

# Cues after which a capitalised word sequence is a name.
_CUES = regex.compile(
    r"(?i:\b(?:dear|hi|hello|hey|thanks|thank you|regards|cheers|mr|mrs|ms|mx|miss|dr|prof|sir|madam"
    r"|my (?:kid|son|daughter|wife|husband|partner|friend|colleague|boss|manager|mom|mum|mother|dad|father"
    r"|brother|sister|uncle|aunt|grandma|grandpa|grandmother|grandfather|neighbou?r|child)"
    r"|directed by|written by|performed by|sung by|produced by|signed by|assigned to|reported by"
    r"|ask|tell|cc|attn)\b\.?,?[ \t]+)"
    rf"(?P<name>{_NAME})"
)
# Weaker cues: only a name of two or more words counts ("by Sari Paavolainen", not "by Default").
_CUES_TWO_WORDS = regex.compile(
    r"(?i:\b(?:by|under|add|with|to|from|about|for|called|named|songwriter|singer|author|user:|customer:"
    r"|client:|patient:|employee:|owner:|contact:|change it to|been to a)[ \t]+)"
    rf"(?P<name>{_WORD}[ \t]+(?:{_INITIAL}[ \t]+|\p{{Lu}}[ \t]+)?{_WORD})"
)
# "Sari J. Paavolainen", "Ravil G Yefimov": a middle initial between two capitalised words.
_WITH_INITIAL = regex.compile(rf"(?P<name>{_WORD}[ \t]+\p{{Lu}}\.?[ \t]+{_WORD})(?![\p{{L}}])")
# "Wisława Szczepańska's": a two-word name with a possessive.
_POSSESSIVE = regex.compile(rf"(?P<name>{_WORD}[ \t]+{_WORD})(?=['’]s\b)")
# Strong cues: the next one to three words are the name even in lower case.
_STRONG_CUES = regex.compile(
    r"(?i:\b(?:my name is|my name's|name is|name:|last name\?|first name\?|call me|i am called|i'm called"
    r"|signed|sincerely,?|this is|follow up with|said to|shouted at|shouted to|told|asked)[ \t]+)"
    rf"(?P<name>{_LOWER_NAME})"
)
# "Tomomi Nishiyama lives at", "Enrico shouted": a name at the start of a sentence, before a
# verb that people do.
_SUBJECT = regex.compile(
    rf"(?:^|(?<=[.!?]\s)|(?<=\n))(?P<name>{_NAME})[ \t]+"
    r"(?=(?:lives|lived|shouted|spent|said|says|asked|told|wants|wanted|likes|liked|loves|loved|hates"
    r"|married|was born|is from|was from|will be|would like|called|emailed|wrote|went|came|began|started"
    r"|joined|moved|is a very|is very)\b)"
)
# "Danial, can I ...": a name called at the start of a sentence.
_VOCATIVE = regex.compile(
    rf"(?:^|(?<=[.!?]\s)|(?<=\n))(?P<name>{_WORD}),[ \t]+"
    r"(?=(?:can|could|would|will|please|do|did|are|have|is|i|we|you|thanks|thank)\b)",
    regex.IGNORECASE,
)
# 'Ella: What a wife. Destiny: Remember': a speaker label in a dialogue.
_SPEAKER = regex.compile(rf"(?:^|(?<=[\n.!?\"”]\s)|(?<=\n))(?P<name>{_WORD}):[ \t]*(?=[\"“]?\p{{Lu}})")
# "Yuito Hirai of Reed Group": a two-word name followed by "of" and an organisation.
_OF = regex.compile(rf"(?P<name>{_WORD}[ \t]+{_WORD})(?=[ \t]+of[ \t]+\p{{Lu}})")
_LABELS = {
    w.lower() for w in """
    Error Warning Note Notes Answer Question User Assistant System Human AI Bot Fix Cause Solution
    Resolution Context Example Output Input Result Results Step Steps Tip Summary Status Date Time Subject
    From To Re Cc Bcc Name Phone Email Address Title Description Todo Update Edit Problem Issue Reason Root
    Action Expected Actual Environment Version Command Response Request Reply Query Hint Info Debug Trace
    Exception Traceback Usage Options Returns Args Parameters Raises Yields Attributes Methods Source Target
    Host Port Path File Line Column Message Code Type Value Key Id Url Link Task Goal Plan Decision Outcome
    Conclusion Observation Thought Tool Final Prompt Instructions Rule Rules Preference Pattern Correction
    Security Life Tags Tier Score Total Count Price Cost Location Place Day Today Tomorrow Yesterday Morning
    Evening Night Monday Tuesday Wednesday Thursday Friday Saturday Sunday Important Caution Danger Remember
    Update Edited Author Reviewer Owner Assignee Reporter Priority Severity Labels Milestone Branch Commit
    Merge Review Test Tests Build Deploy Release Changelog Added Changed Removed Fixed Deprecated Breaking
    Architecture Design Overview Background Motivation Implementation Testing Performance Scope
    Log Logs Settings Config Stack Output Stdout Stderr Server Client Worker
    """.split()
}
_LIST = regex.compile(rf"(?:{_NAME})(?:[ \t]*,[ \t]*(?:{_NAME}))*(?:,?[ \t]+(?:and|or|&)[ \t]+(?:{_NAME}))")
_STOP = {
    "i", "a", "an", "the", "this", "that", "these", "those", "it", "he", "she", "we", "they", "you", "my",
    "our", "your", "his", "her", "their", "its", "what", "which", "who", "there", "here", "not", "just",
    "sure", "fine", "ok", "okay", "yes", "no", "please", "sorry", "glad", "happy", "back", "going", "done",
    "able", "new", "all", "everyone", "team", "guys", "folks", "there's", "it's", "good", "great",
    # How a user confirms or acknowledges ("Works, thanks!", "Confirmed, 180 MB now"): never a name
    # called at the start of a sentence, and redacting it would hide the confirmation itself.
    "works", "worked", "perfect", "awesome", "excellent", "nice", "cool", "confirmed", "solved", "fixed",
    "brilliant", "lovely", "amazing", "exactly", "right", "agreed", "noted", "understood", "yep", "yeah",
    "nope", "wow", "thanks", "cheers", "indeed", "absolutely", "correct",
}
# Tool, product and platform names that NER tends to take for people.
TECH_TERMS = {
    t.lower() for t in """
    Django Flask FastAPI Starlette Pydantic Celery Gunicorn Uvicorn SQLAlchemy Alembic Jinja Sphinx Pytest
    Mypy Ruff Black Poetry Pip Conda Homebrew Python Java Kotlin Scala Rust Cargo Go Golang Ruby Rails Perl
    PHP Laravel Symfony Node Deno Bun React Vue Angular Svelte Vite Webpack Babel Jest Playwright Selenium
    Docker Podman Kubernetes Helm Argo Istio Envoy Traefik Nginx Apache Tomcat Jetty Linux Ubuntu Debian
    Fedora CentOS Alpine Arch Windows macOS Xcode Swift Git GitHub GitLab Bitbucket Jira Confluence Slack
    Discord Teams Zoom Notion Figma Grafana Prometheus Kibana Elasticsearch Logstash Kafka Spark Hadoop Hive
    Airflow Dagster Prefect Redis Postgres PostgreSQL MySQL MariaDB SQLite Mongo MongoDB Cassandra Neo4j
    Pandas NumPy SciPy PyTorch TensorFlow Keras Jupyter Matplotlib Terraform Ansible Puppet Chef Vagrant
    Packer Consul Vault Nomad Jenkins Travis CircleCI Buildkite Bazel CMake Clang LLVM GCC Valgrind Nix
    Chrome Chromium Firefox Safari Edge Electron Tailwind Bootstrap htmx Claude Qwen Gemini Llama Mistral
    OpenAI Anthropic DashScope Presidio spaCy Sentry Datadog Heroku Vercel Netlify Cloudflare AWS Azure
    GCP Lambda Stripe Twilio Okta Auth0 Keycloak Excel Outlook Markdown YAML JSON TOML Bash Zsh Vim Neovim
    Emacs VSCode Cursor Copilot Codex Ubuntu Nvidia CUDA Hugging Face Transformers Ollama LangChain
    Tmux Screen Dialyzer Dialyxir Elixir Erlang Phoenix Mix Hex Credo Haskell Cabal Stack OCaml Dune
    Zig Nim Crystal Dart Flutter Lua Julia Fortran Cobol Pascal Delphi Matlab Octave
    """.split()
} | {
    # Words of tool output and code that the model reads as names ("Login Succeeded", "Require
    # stack:", "Running ExUnit"): statuses, log and HTTP vocabulary.
    t.lower() for t in """
    Login Logout Logged Succeeded Failed Passed Completed Finished Started Stopped Running Pending Skipped
    Success Failure Require Required Requires Settings Setting Config Log Logs Logger Stack Socket Request
    Response Session Sessions Repo Repository Supervisor Router Controller Handler Middleware Worker Queue
    Authorization Authenticate Bearer ETag Cookie Header Headers Payload Token Tokens Username Password
    """.split()
}


_IDENTIFIER = regex.compile(r"(?:Error|Exception|Warning|Exit|Interrupt)$|\p{Ll}\p{Lu}.*\p{Ll}\p{Lu}")


def plausible(text: str) -> bool:
    """Does a PERSON span look like a person's name rather than code or a tool?"""
    words = text.split()
    if not words or len(words) > 5:
        return False
    if text.lower() in TECH_TERMS or any(w.lower().strip(".,'’") in TECH_TERMS for w in words):
        return False
    for word in words:
        core = word.strip(",")
        if regex.fullmatch(_PARTICLE, core):
            continue
        # Capitalised words ("O'Neil", "Jean-Luc") or initials ("J", "J.") only.
        if not regex.fullmatch(r"\p{Lu}\.?|\p{Lu}[\p{L}'’\-]*", core):
            return False
        if len(core) >= 3 and core.isupper():
            return False  # acronyms: API, JWT, SSN
        if _IDENTIFIER.search(core):
            return False  # an exception or class name: TypeError, ModuleNotFoundError
    return True


@functools.cache
def stop_words() -> frozenset[str]:
    """spaCy's English stop words, imported on first use: importing spaCy costs a second and
    40 MiB that commands which never redact (``manage.py check``, migrations) need not pay."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def _ok(name: str, *, lower_case: bool = False) -> bool:
    words = name.split()
    if not words or words[0].lower() in _STOP or words[0].lower() in _LABELS:
        return False
    if lower_case:  # after "my name is", names may be written in lower case
        # ...but "asked for reproducible builds", "told me", "name: db-credentials" hold no name.
        if any(w.lower() in stop_words() for w in words) or any(c in name for c in "-_/.:"):
            return False
        return plausible(" ".join(w[:1].upper() + w[1:] for w in words))
    return plausible(name)


# Lines of code, shell and comments: braces, semicolons, calls, arrows, a leading "#", "//", "$ ", ">".
_CODE_LINE = regex.compile(r"[{};]|::|->|=>|→|\w\(|\w=\S|^\s*(?:#|//|\$\s|>)")
_IDENTIFIER_BEFORE = regex.compile(r"[\w.$@#/\\:]$")
_IDENTIFIER_AFTER = regex.compile(r"^(?:\.\w|\(|::|_|/|\[|\w)")


def technical(text: str, start: int, end: int) -> bool:
    """Is a span the model called a person part of code or tool output rather than a name: glued
    to an identifier (``Spotter.Repo``, ``http.Request``), a label starting a line (``ETag: …``,
    speakers are the cue rules' business), or a single word on a line of code or a short label
    line (``new LiveSocket("/live", Socket, {``, ``# Settings here``, ``Require stack:``)? Names
    of two words or more on such lines stay names (``author = "Jane Doe"``)."""
    span = text[start:end]  # the model's spans may carry the blank lines after a name
    start, end = start + len(span) - len(span.lstrip()), end - (len(span) - len(span.rstrip()))
    if _IDENTIFIER_BEFORE.search(text[max(0, start - 1) : start]) or _IDENTIFIER_AFTER.match(text[end : end + 2]):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start : line_end if line_end != -1 else len(text)]
    if not text[line_start:start].strip() and text[end : end + 1] == ":":
        return True
    if len(text[start:end].split()) > 1:
        return False
    return bool(_CODE_LINE.search(line)) or (line.rstrip().endswith(":") and len(line.split()) <= 3)


def cue_names(text: str) -> list[Finding]:
    found: list[Finding] = []
    patterns = (
        (_STRONG_CUES, 0.8), (_CUES, 0.7), (_WITH_INITIAL, 0.7), (_CUES_TWO_WORDS, 0.6),
        (_POSSESSIVE, 0.6), (_SUBJECT, 0.6), (_VOCATIVE, 0.6), (_SPEAKER, 0.55), (_OF, 0.55),
    )
    for pattern, score in patterns:
        for match in pattern.finditer(text):
            name = match.group("name")
            # Trim trailing words that are function words ("Rubija and" -> "Rubija").
            words = name.split()
            while words and (words[-1].lower() in _STOP or words[-1].lower() in stop_words()):
                words.pop()
            if not words:
                continue
            name = " ".join(words)
            start = match.start("name")
            if _IDENTIFIER_AFTER.match(text[start + len(name) : start + len(name) + 2]) or (
                    pattern is _SPEAKER and "-" in name):
                continue  # name: Spotter.Supervisor, WWW-Authenticate: — code and headers
            if _ok(name, lower_case=pattern is _STRONG_CUES):
                found.append(Finding(start, start + len(name), "PERSON", score, "names"))
    return found


def expand(text: str, persons: list[Finding]) -> list[Finding]:
    """More names: the other items of a list holding a name; other mentions of a name's words."""
    if not persons:
        return []
    extra: list[Finding] = []
    spans = [(p.start, p.end) for p in persons]
    for match in _LIST.finditer(text):
        items = list(regex.finditer(_NAME, match.group(0)))
        absolute = [(match.start() + m.start(), match.start() + m.end()) for m in items]
        if any(s < pe and ps < e for s, e in absolute for ps, pe in spans):
            for (s, e), item in zip(absolute, items, strict=True):
                if _ok(item.group(0)):
                    extra.append(Finding(s, e, "PERSON", 0.65, "names"))
    words = {w.strip(".,'’") for p in persons for w in text[p.start : p.end].split()}
    words = {w for w in words if len(w) >= 3 and w[0].isupper() and w.lower() not in TECH_TERMS}
    for word in words:
        for match in regex.finditer(rf"(?<![\p{{L}}\d_]){regex.escape(word)}(?![\p{{L}}\d_])", text):
            extra.append(Finding(match.start(), match.end(), "PERSON", 0.6, "names"))
    return extra


_GAP = regex.compile(r"[ \t]+(?:\p{Lu}\.?[ \t]+)?")


def merge_adjacent(persons: list[Finding], text: str) -> list[Finding]:
    """Join PERSON pieces separated only by spaces or a middle initial ("Martim" "A" "Pereira")."""
    merged: list[Finding] = []
    for finding in sorted(persons, key=lambda f: f.start):
        if merged and regex.fullmatch(_GAP, text[merged[-1].end : finding.start]):
            last = merged[-1]
            merged[-1] = Finding(last.start, finding.end, "PERSON", max(last.score, finding.score), last.source)
        else:
            merged.append(finding)
    return merged
