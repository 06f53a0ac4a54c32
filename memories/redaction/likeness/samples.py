"""The examples the secret-likeness model learns from, made on the machine from what is installed
and shipped — nothing downloaded, nothing copied from a test set.

Secrets (label 1):

- **values of maintained detectors' rules**: every rule of Kingfisher's bundled catalogue (the
  Betterleaks rules, successors of gitleaks', and Google's Veles detectors) is sampled: a random
  string matching the rule's regular expression is generated and the rule's secret group taken
  from it, so the model sees each vendor's token shape without anyone listing it;
- **random strings** of the alphabets keys are drawn from (hex, base64, base64url, base32,
  base58, letters and digits, with and without a vendor-style prefix) and lengths 12–96;
- **human passwords**: words from the shipped lessons capitalised, joined, with digits, years and
  symbols, look-alike substitutions (``P@ssw0rd``), keyboard walks, pinyin names with digits,
  Django's generated keys (``django-insecure-…``).

Ordinary tokens (label 0): identifiers, strings and numbers of the Python standard library's own
source (tests left out), the words and values of the shipped lessons, and
public technical shapes — versions, dates, times, addresses, ports, paths, file names, flags,
package pins, image tags, pod names. UUIDs and bare hex are left out of both sides: whether they
are identifiers or secrets is the context's call (``likeness.find``), not the characters'.
"""

from __future__ import annotations

import io
import json
import random
import re
import string
import sysconfig
import tokenize
import warnings
from collections.abc import Iterator
from pathlib import Path

_MAX_EXTRA = 12  # a repeat without an upper bound draws at most this many more than its minimum
DATA = Path(__file__).resolve().parent.parent.parent / "data"
_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def excluded(token: str) -> bool:
    """Shapes neither side learns: bare hex and UUIDs (the context decides), and very short tokens."""
    return len(token) < 6 or bool(_HEX.match(token)) or bool(_UUID.search(token))


# --- sampling a regular expression ------------------------------------------------------------------

def _parser():
    import re._parser as parser  # the standard library's regular-expression parser (Python 3.11+)

    return parser


_PRINTABLE = string.ascii_letters + string.digits + "-_.+/=@:"
_CATEGORY = {"CATEGORY_DIGIT": string.digits, "CATEGORY_WORD": string.ascii_letters + string.digits + "_",
             "CATEGORY_SPACE": " ", "CATEGORY_NOT_DIGIT": string.ascii_letters + "_-",
             "CATEGORY_NOT_WORD": "-.:/", "CATEGORY_NOT_SPACE": _PRINTABLE}


def _class(items, rng: random.Random) -> str:
    """One character of a ``[...]`` class."""
    negate = False
    allowed: list[str] = []
    for op, value in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            allowed.append(chr(value))
        elif name == "RANGE":
            low, high = value
            allowed.extend(chr(c) for c in range(low, min(high, low + 200) + 1))
        elif name == "CATEGORY":
            allowed.extend(_CATEGORY.get(str(value), _PRINTABLE))
    if negate:
        pool = [c for c in _PRINTABLE if c not in allowed] or list("x")
        return rng.choice(pool)
    return rng.choice(allowed) if allowed else "x"


def _emit(tree, rng: random.Random, groups: dict[int, str]) -> str:
    out: list[str] = []
    for op, value in tree:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(value))
        elif name == "NOT_LITERAL":
            out.append(rng.choice([c for c in _PRINTABLE if ord(c) != value]))
        elif name == "ANY":
            out.append(rng.choice(_PRINTABLE))
        elif name == "IN":
            out.append(_class(value, rng))
        elif name == "CATEGORY":
            out.append(rng.choice(_CATEGORY.get(str(value), _PRINTABLE)))
        elif name == "BRANCH":
            out.append(_emit(rng.choice(value[1]), rng, groups))
        elif name == "SUBPATTERN":
            group, _add, _del, sub = value
            text = _emit(sub, rng, groups)
            if group is not None:
                groups[group] = text
            out.append(text)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = value
            high = min(high, low + _MAX_EXTRA)
            out.append("".join(_emit(sub, rng, groups) for _ in range(rng.randint(low, high))))
        elif name == "GROUPREF":
            out.append(groups.get(value, ""))
        elif name == "ATOMIC_GROUP":
            out.append(_emit(value, rng, groups))
        # AT (anchors), ASSERT and ASSERT_NOT (look-arounds) produce nothing.
    return "".join(out)


def _python_pattern(pattern: str) -> tuple[str, int]:
    """A Rust/Go-flavoured rule as Python reads it: inline flags moved to the front, ``\\z`` as ``\\Z``."""
    flags = 0
    if "(?i)" in pattern:
        flags |= re.IGNORECASE
    if "(?x)" in pattern:
        flags |= re.VERBOSE
    if "(?s)" in pattern:
        flags |= re.DOTALL
    cleaned = pattern.replace("(?i)", "").replace("(?x)", "").replace("(?s)", "").replace("(?m)", "")
    return cleaned.replace("\\z", "\\Z").replace("\\A", "^"), flags


def rule_values(patterns: list[tuple[str, int]], per_rule: int, seed: int) -> Iterator[str]:
    """Secret values sampled from detector rules: ``(pattern, secret group)`` pairs."""
    parser = _parser()
    rng = random.Random(seed)
    for pattern, secret_group in patterns:
        text, flags = _python_pattern(pattern)
        try:
            with warnings.catch_warnings():  # the detectors' own patterns, written for other regex engines
                warnings.simplefilter("ignore", FutureWarning)
                tree = parser.parse(text, flags)
                compiled = re.compile(text, flags)
        except (re.error, ValueError, OverflowError, RecursionError):
            continue
        for _ in range(per_rule):
            try:
                sample = _emit(tree, rng, {})
            except (RecursionError, ValueError, IndexError):
                break
            found = compiled.search(sample)
            if not found:
                continue
            value = _secret_of(found, secret_group)
            if value and len(value) >= 8 and not any(c.isspace() for c in value):
                yield value


def _secret_of(found: re.Match, secret_group: int) -> str:
    if secret_group and secret_group <= (found.re.groups or 0) and found.group(secret_group):
        return found.group(secret_group)
    for value in found.groups():
        if value and len(value) >= 8:
            return value
    return found.group(0)


def kingfisher_patterns() -> list[tuple[str, int]]:
    """Every rule of Kingfisher's bundled catalogue as (pattern, secret group); none when the package is absent."""
    try:
        from kingfisher_sdk import Rules
    except ImportError:  # pragma: no cover - a declared dependency
        return []
    rules = Rules(confidence="low", cache=False)
    out = []
    for row in rules.metadata():
        detail = rules.detail(row["id"])
        out.append((detail["pattern"], int(detail.get("betterleaks_secret_group") or 0)))
    return out


# --- secrets of other shapes ------------------------------------------------------------------------

_ALPHABETS = {
    "hex": "0123456789abcdef", "HEX": "0123456789ABCDEF", "b64": string.ascii_letters + string.digits + "+/",
    "b64url": string.ascii_letters + string.digits + "-_", "b32": string.ascii_uppercase + "234567",
    "b58": "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", "alnum": string.ascii_letters + string.digits,
    "lower": string.ascii_lowercase + string.digits, "upper": string.ascii_uppercase + string.digits,
}
_PREFIX_PARTS = ("sk", "pk", "rk", "api", "key", "tok", "live", "test", "prod", "pat", "app", "svc", "acct", "sec",
                 "auth", "ak", "ghx", "xo", "glx", "npm", "pypi", "hf", "dp", "ya", "az", "ci", "bot", "whsec")
_DJANGO = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"
_SYMBOLS = "!@#$%^&*?_-+=.~"
_LEET = str.maketrans({"a": "@", "o": "0", "e": "3", "i": "1", "s": "$", "l": "1", "t": "7"})
_WALKS = ("qwerty", "asdfgh", "zxcvbn", "1qaz2wsx", "qazwsx", "1q2w3e4r", "qwer1234", "asdf1234", "zaq12wsx", "poiuyt")
_PINYIN = ("zhang", "wang", "li", "liu", "chen", "yang", "huang", "zhao", "wu", "zhou", "xu", "sun", "ma", "zhu", "hu",
           "guo", "he", "lin", "luo", "gao", "xiaoming", "lei", "tao", "jun", "hong", "wei", "fang", "yan", "ping", "qiang")


def random_values(rng: random.Random, count: int) -> Iterator[str]:
    names = list(_ALPHABETS)
    for _ in range(count):
        alphabet = _ALPHABETS[rng.choice(names)]
        length = rng.choice((12, 16, 20, 24, 26, 30, 32, 36, 40, 44, 48, 52, 64, 72, 88, 96))
        body = "".join(rng.choice(alphabet) for _ in range(length))
        shape = rng.random()
        if shape < 0.35:
            prefix = rng.choice(_PREFIX_PARTS) + rng.choice(("_", "-", "_live_", "_test_", "-v1-", ""))
            body = prefix + body
        elif shape < 0.45:
            body = body[: length // 2] + rng.choice("-_.") + body[length // 2:]
        if alphabet in (_ALPHABETS["b64"],) and rng.random() < 0.3:
            body += "=" * rng.randint(1, 2)
        if not excluded(body):
            yield body


def _leet(word: str, rng: random.Random) -> str:
    """Some of a word's letters swapped for their look-alikes (``super$ecret``, ``P@ssw0rd``)."""
    out = [c.translate(_LEET) if rng.random() < 0.5 else c for c in word]
    if out == list(word):
        spots = [i for i, c in enumerate(word) if c.translate(_LEET) != c]
        if spots:
            spot = rng.choice(spots)
            out[spot] = word[spot].translate(_LEET)
    return "".join(out)


def _cased(word: str, rng: random.Random) -> str:
    pick = rng.random()
    return word.capitalize() if pick < 0.5 else word if pick < 0.85 else word.upper()


def password_values(rng: random.Random, words: list[str], count: int) -> Iterator[str]:
    """Passwords people choose, and the generated keys of common frameworks: words with digits,
    years and symbols at the start, inside or at the end, look-alike letters, two words joined,
    keyboard walks, pinyin names with digits, Django's keys."""
    for _ in range(count):
        kind = rng.random()
        word = rng.choice(words)
        number = str(rng.choice((rng.randint(1, 99), rng.randint(1970, 2030), rng.randint(100, 9999))))
        symbol = rng.choice(_SYMBOLS)
        if kind < 0.3:
            parts = [_cased(word, rng), number, symbol if rng.random() < 0.75 else ""]
            rng.shuffle(parts)
            value = "".join(parts)
        elif kind < 0.45:
            value = _cased(_leet(word, rng), rng) + (number if rng.random() < 0.5 else "") + (
                symbol if rng.random() < 0.3 else "")
        elif kind < 0.52:
            value = rng.choice(_WALKS) + (number if rng.random() < 0.7 else "") + (symbol if rng.random() < 0.5 else "")
        elif kind < 0.6:
            value = rng.choice(_PINYIN) + rng.choice(_PINYIN) * (rng.random() < 0.4) + str(rng.choice(
                (rng.randint(100, 999999), rng.randint(1970, 2010))))
        elif kind < 0.66:
            value = "django-insecure-" + "".join(rng.choice(_DJANGO) for _ in range(rng.randint(30, 50)))
        elif kind < 0.74:
            value = "".join(rng.choice(_DJANGO + string.ascii_uppercase) for _ in range(rng.randint(10, 40)))
        elif kind < 0.88:
            second = rng.choice(words)
            joiner = rng.choice((symbol, number, "", symbol + number))
            value = _cased(word, rng) + joiner + _cased(second, rng) + (number if rng.random() < 0.4 else "")
        else:
            value = "".join(rng.choice(string.ascii_letters + string.digits + _SYMBOLS) for _ in range(rng.randint(8, 20)))
        if not excluded(value) and not value.isalpha():
            yield value


# --- ordinary tokens --------------------------------------------------------------------------------

_SPLIT = re.compile(r"[\s\"'`()\[\]{},;<>|]+")
_TRIM = ".,:;!?*"


def text_tokens(text: str) -> Iterator[str]:
    for raw in _SPLIT.split(text):
        token = raw.strip(_TRIM)
        if token and not excluded(token) and not token.startswith("<") and "REDACTED" not in token:
            yield token


def stdlib_tokens(limit: int, rng: random.Random) -> list[str]:
    """Names, numbers and the words of strings in the standard library's own modules (no tests)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "test" not in p.parts and "tests" not in p.parts
                   and "idlelib" not in p.parts and "site-packages" not in p.parts)
    rng.shuffle(files)
    seen: set[str] = set()
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (SyntaxError, UnicodeDecodeError, tokenize.TokenError, IndentationError, OSError):
            continue
        for token in tokens:
            if token.type in (tokenize.NAME, tokenize.NUMBER):
                candidates = [token.string]
            elif token.type == tokenize.STRING and len(token.string) < 400:
                candidates = list(text_tokens(token.string.strip("\"'bBrRuUfF")))
            elif token.type == tokenize.COMMENT:
                candidates = list(text_tokens(token.string))
            else:
                continue
            for candidate in candidates:
                if not excluded(candidate) and candidate not in seen:
                    seen.add(candidate)
        if len(seen) >= limit:
            break
    return sorted(seen)[:limit] if len(seen) > limit else sorted(seen)


def data_files() -> list[Path]:
    return sorted(DATA.glob("*.jsonl"))


def shipped_texts() -> Iterator[str]:
    """The lessons shipped with the hub (the type prototypes, the screen's examples): the benign ones only."""
    for path in data_files():
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("label") == "attack":
                continue
            yield " ".join(str(row.get(k) or "") for k in ("content", "context", "resolution", "text"))


_ACRONYMS = ("SHA256", "Http2", "HTTP", "OAuth2", "UTF8", "X509", "S3", "EC2", "K8s", "V2", "Api", "JSON", "Xml", "Db",
              "Sql", "Tls", "Jwt", "Aes256", "Rsa", "Md5", "Base64", "Int64", "Uint8", "IPv6", "Grpc", "Io", "Url", "Id")


def identifiers(rng: random.Random, words: list[str], count: int) -> Iterator[str]:
    """Names in code: CamelCase and camelCase of words with acronyms and version digits
    (``BCryptSHA256PasswordHasher``, ``getUserById2``), snake_case and dotted names with digits."""
    for _ in range(count):
        parts = [rng.choice(words).capitalize() for _ in range(rng.randint(2, 4))]
        if rng.random() < 0.6:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(_ACRONYMS))
        kind = rng.random()
        if kind < 0.45:
            value = "".join(parts)
        elif kind < 0.75:
            value = parts[0].lower() + "".join(parts[1:])
        elif kind < 0.9:
            value = "_".join(p.lower() for p in parts)
        else:
            value = ".".join(p.lower() for p in parts[:3]) + str(rng.randint(1, 3))
        if rng.random() < 0.3:
            value += str(rng.randint(1, 64))
        if not excluded(value):
            yield value


def public_values(rng: random.Random, words: list[str], count: int) -> Iterator[str]:
    """Technical values that are public: versions, dates, addresses, paths, pins, tags, pod names."""
    for _ in range(count):
        kind = rng.randrange(12)
        a, b, c = rng.randint(0, 30), rng.randint(0, 99), rng.randint(0, 999)
        word, other = rng.choice(words), rng.choice(words)
        value = (
            f"v{a}.{b}.{c}", f"{a}.{b}.{c}-rc.{rng.randint(1, 9)}", f"20{rng.randint(10, 30)}-{rng.randint(1, 12):02d}-"
            f"{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{b % 60:02d}:{c % 60:02d}Z",
            f"{rng.randint(1, 254)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}:{rng.randint(80, 65535)}",
            f"/{word}/{other}/{rng.choice(words)}.{rng.choice(('py', 'ts', 'go', 'rs', 'yaml', 'json', 'log'))}",
            f"{word}=={a}.{b}.{c}", f"{word}-{other}:{a}.{b}-{rng.choice(('alpine', 'slim', 'bookworm'))}",
            f"{word}-{other}-{''.join(rng.choice('0123456789abcdef') for _ in range(rng.choice((9, 10))))}-"
            f"{''.join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))}",
            f"--{word}-{other}", f"{word.upper()}_{other.upper()}", f"{word}{other.capitalize()}{rng.choice(words).capitalize()}",
            f"{word}_{other}_{a}",
        )[kind]
        if not excluded(value):
            yield value


def words_of(texts: list[str]) -> list[str]:
    found = {w.lower() for text in texts for w in re.findall(r"[A-Za-z]{4,12}", text)}
    return sorted(found)


def examples(seed: int = 45) -> tuple[list[str], list[int]]:
    """The model's training examples: tokens and labels (1 secret, 0 ordinary), deduplicated."""
    rng = random.Random(seed)
    texts = list(shipped_texts())
    words = words_of(texts)
    secrets: set[str] = set(rule_values(kingfisher_patterns(), per_rule=12, seed=seed))
    secrets.update(random_values(rng, 6000))
    secrets.update(password_values(rng, words, 6000))
    ordinary: set[str] = set()
    for text in texts:
        ordinary.update(text_tokens(text))
    ordinary.update(stdlib_tokens(30000, rng))
    ordinary.update(public_values(rng, words, 6000))
    ordinary.update(identifiers(rng, words, 6000))
    ordinary -= secrets
    tokens = sorted(secrets) + sorted(ordinary)
    labels = [1] * len(secrets) + [0] * len(ordinary)
    return tokens, labels

