"""Shell commands as the offline judgements compare them: the step of a compound command that
does the work, what it does without its arguments (``git push``, ``npm run build``), whether it
only looks (``ls``, ``git status``) or verifies (tests, builds, linters), and how a later run
differs from an earlier one."""

from __future__ import annotations

import posixpath
import re
import shlex

from memories.text import normalise_space

_SUBCOMMAND_PROGRAMS = {"git", "npm", "pnpm", "yarn", "npx", "mix", "cargo", "go", "docker", "kubectl", "helm",
                        "pip", "pip3", "uv", "poetry", "make", "bd", "gh", "dotnet", "gradle", "mvn", "bundle",
                        "rails", "rake", "terraform", "systemctl", "brew", "apt", "apt-get", "conda", "bun",
                        "deno", "composer", "php", "flutter", "swift", "nvm", "rustup", "manage.py"}
_RUN_PROGRAMS = {"npm", "pnpm", "yarn", "bun"}  # ``npm run build``: the script name matters too
# Commands that only look: they belong to the investigation, never to the fix.
_LOOK_PROGRAMS = {"ls", "cat", "head", "tail", "grep", "rg", "find", "pwd", "echo", "which", "whereis", "type",
                  "less", "more", "wc", "stat", "file", "tree", "env", "printenv", "ps", "lsof", "df", "du",
                  "sleep", "true", "date", "whoami", "id", "uname", "diff", "jq", "sort"}
_LOOK_SUBCOMMANDS = {"status", "log", "diff", "show", "list", "ls", "view", "info", "search", "describe", "get",
                     "outdated", "version", "--version", "-v", "-V", "config", "branch", "remote", "ready", "images", "ps"}
VERSION_RE = re.compile(r"(?:^|\s)(--version|-v|-V|version)\b")
_VERIFY_RE = re.compile(r"\b(?:test|tests|pytest|jest|vitest|mocha|rspec|check|lint|build|compile|credo|dialyzer"
                        r"|vet|tsc|mypy|ruff|eslint|flake8|pylint|clippy|tox|nox|ci|verify|validate|typecheck)\b")


def _clean_part(command: str) -> str:
    command = re.sub(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+", "", command.strip())
    command = re.sub(r"^(?:sudo|time|timeout\s+\d+\w?|nohup|exec)\s+", "", command)
    command = re.sub(r"\$\(cat <<'?(\w+)'?.*", "…", command, flags=re.S)  # a heredoc commit message
    return re.split(r"\s*\|\s*", command, maxsplit=1)[0]  # ``| head``: the output, not the command


def _split_unquoted(command: str) -> list[str]:
    """``a && b; c`` → its steps, leaving separators inside quotes alone."""
    parts: list[str] = []
    current: list[str] = []
    quote, i = "", 0
    while i < len(command):
        char = command[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif command.startswith("&&", i) or command.startswith("||", i) or char in ";\n":
            parts.append("".join(current))
            current = []
            i += 2 if char in "&|" else 1
            continue
        current.append(char)
        i += 1
    parts.append("".join(current))
    return [p.strip() for p in parts]


# ``<<'EOF'`` and its body up to the closing ``EOF`` line, or to the end when the text was clipped.
_HEREDOC = re.compile(r"(<<-?\s*['\"]?(\w+)['\"]?[^\n]*)\n(?:.*?\n\s*\2\s*(?=\n|$)|(.*))", re.S)


def command_parts(command: str) -> list[str]:
    """The steps of a compound command (``a && b; c``), each cleaned (no environment prefix,
    ``sudo`` or output filter; a heredoc commit message elided), without the ``cd`` steps."""
    command = re.sub(r"\$\(cat <<'?(\w+)'?.*?\n\s*\1\s*\)", "…", command.strip(), flags=re.S)
    command = re.sub(r"\$\(cat <<'?(\w+)'?.*", "…\"", command, flags=re.S)  # clipped before its end
    # A here-document's body is data, not steps: ``tee f <<'EOF'`` … ``EOF`` keeps only its first line.
    command = _HEREDOC.sub(r"\1", command)
    parts = [_clean_part(p) for p in _split_unquoted(command) if p.strip()]
    # Where a step runs is not what it does: `cd app && npm test` and `npm test` are one command.
    return [p for p in parts if p and not re.match(r"^cd\s", p)]


def _sets_environment(part: str) -> bool:
    return bool(re.match(r"^(?:export|source|\.)\s", part))


def strip_shell(command: str) -> str:
    """The part of a compound command that does the work: the last step of ``a && b`` that is not
    a ``cd`` or a look (``cd app && npm test`` → ``npm test``; ``git add x && git commit`` → the
    commit, which is what a pre-commit hook fails)."""
    parts = [p for p in command_parts(command) if not _sets_environment(p)]
    if not parts:
        return ""
    doing = [p for p in parts if not _is_look_part(p)]
    return (doing or parts)[-1]


def split_words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def command_key(command: str) -> str:
    """What a command does, without its arguments: ``git push``, ``npm run build``, ``pytest``."""
    return part_key(strip_shell(command))


def part_key(part: str) -> str:
    """:func:`command_key` of one step of a compound command."""
    tokens = [t for t in split_words(part) if not re.match(r"^\d?>&?\d?|^2>", t)]
    if not tokens:
        return ""
    program = posixpath.basename(tokens[0])
    # `python -m pytest` and `uv run pytest` run pytest: a re-run that switches launcher is the same command.
    if program in ("python", "python3", "uv", "poetry", "pipenv") and len(tokens) > 2 and tokens[1] in ("-m", "run"):
        tokens = tokens[2:]
        program = posixpath.basename(tokens[0])
    # A script is the program (`python manage.py migrate` → `manage.py migrate`), so its sub-command counts.
    if program in ("python", "python3") and len(tokens) > 1 and tokens[1].endswith(".py"):
        program = posixpath.basename(tokens[1])
        tokens = tokens[1:]
    words = [program]
    if program in _SUBCOMMAND_PROGRAMS:
        rest = [t for t in tokens[1:] if not t.startswith("-")]
        if rest:
            words.append(rest[0])
            if program in _RUN_PROGRAMS and rest[0] == "run" and len(rest) > 1:
                words.append(rest[1])
    return " ".join(words)


def runs_again(command: str, failed: str) -> tuple[str, list[str]] | None:
    """Whether ``command`` runs the step that ``failed`` ran, in any of its parts: that part, and the
    steps before it that change something (``go mod tidy && go build`` → ``go build``, with
    ``go mod tidy`` done first; ``source ~/.nvm/nvm.sh && nvm use 20`` keeps the ``source``)."""
    key, looked = command_key(failed), is_look(failed)  # a version check is no re-run of a build
    parts = command_parts(command)
    for index, part in enumerate(parts):
        if part_key(part) == key and (looked or not _is_look_part(part)):
            before = [p for p in parts[:index] if _sets_environment(p)
                      or not (_is_look_part(p) or _VERIFY_RE.search(part_key(p)))]
            return part, before
    return None


def short_command(command: str, limit: int = 120) -> str:
    text = normalise_space(strip_shell(command) or command)
    # What only quiets a command is noise in a memory: ``pip install -q x 2>&1`` → ``pip install x``.
    text = re.sub(r"\s+(?:-qq?|--quiet|-y|--yes|2>&1|[12]?>\s*/dev/null)(?=\s|$)", "", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_look(command: str) -> bool:
    return _is_look_part(strip_shell(command))


def is_verify(command: str) -> bool:
    """Builds, tests and linters: they show whether the fix worked, they are not the fix."""
    return bool(_VERIFY_RE.search(command_key(command)))


def _is_look_part(part: str) -> bool:
    tokens = split_words(part)
    if not tokens:
        return True
    program = posixpath.basename(tokens[0])
    if program in _LOOK_PROGRAMS:
        return True
    # Version flags are kept: `node --version` looks, it does not run node.
    rest = [t for t in tokens[1:] if not t.startswith("-") or t in ("--version", "-v", "-V")]
    return bool(rest) and rest[0] in _LOOK_SUBCOMMANDS or bool(VERSION_RE.search(" ".join(tokens[1:3])))


def arguments(command: str) -> list[str]:
    return [t for t in split_words(strip_shell(command)) if not re.match(r"^\d?>&?\d?$|^\d?>>?$|^2>", t)]


def command_change(failed: str, passed: str) -> str:
    """How the passing run differs from the failing one: the flags or arguments added or
    dropped, or the whole command when most of it changed."""
    before, after = arguments(failed), arguments(passed)
    if before == after:
        return ""
    added = [t for t in after if t not in before]
    dropped = [t for t in before if t not in after]
    if 0 < len(added) + len(dropped) <= 6 and len(after) > 1:
        parts = []
        if added:
            parts.append(f"with `{' '.join(added)}`")
        if dropped:
            parts.append(f"without `{' '.join(dropped)}`")
        return f"ran `{part_key(passed)}` again {' and '.join(parts)}"
    return f"then `{short_command(passed)}` passed"
