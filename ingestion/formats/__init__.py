"""Session file formats: one module per format family (``chat``: plain, OpenAI, Anthropic and
Claude Code rows; ``codex``; ``swe_agent``; ``openhands``; ``aider``; ``gemini``), ``detect``
choosing among them by content, and ``base`` for what they all produce.

Which files are sessions by name: uploads and explicitly named paths may end in any of
``SESSION_EXTENSIONS`` (their content decides the format, and a file in none is skipped with the
reason); a directory walk collects ``.jsonl``, ``.traj`` and ``*.aider.chat.history.md`` files,
and ``.json`` files whose first bytes look like a session, since a project directory holds many
``.json`` files that are not (``package.json``, ``tsconfig.json``), nor Markdown other than
Aider's histories.
"""

from __future__ import annotations

from pathlib import Path

from ingestion.formats.base import Message, ParsedSession
from ingestion.formats.detect import looks_like_session, parse_session

SESSION_EXTENSIONS = (".jsonl", ".json", ".traj", ".md")
ACCEPTED = ".jsonl, .json, .traj or .md"
AIDER_HISTORY = ".aider.chat.history.md"  # aider's default name: the one hidden file a path may name
_WALKED = (".jsonl", ".traj", ".aider.chat.history.md")
_SNIFF_BYTES = 4096


def accepted_name(name: str) -> bool:
    """Whether a file named so may be offered as a session (its content decides the rest)."""
    return name.lower().endswith(SESSION_EXTENSIONS)


def walk_includes(path: Path) -> bool:
    """Whether a directory walk collects this file (see the module's docstring)."""
    name = path.name.lower()
    if name.endswith(_WALKED):
        return True
    if not name.endswith(".json"):
        return False
    try:
        with path.open("rb") as handle:
            return looks_like_session(handle.read(_SNIFF_BYTES))
    # An unreadable file is left out of the walk instead of failing the whole request.
    except OSError:
        return False


__all__ = ["ACCEPTED", "AIDER_HISTORY", "SESSION_EXTENSIONS", "Message", "ParsedSession", "accepted_name", "parse_session",
           "walk_includes"]
