"""Session files in the formats agents produce, normalised to ``Message`` rows.

The entry point of ``ingestion.formats``: ``parse_session(data, name="")`` detects the format from
the content (``name`` only sharpens the reason for a file in no known format) and parses it;
``parse_jsonl`` is the same function under the name its first callers use.

Formats: plain ``{role, content}`` rows; OpenAI chat; Anthropic content blocks; Claude Code
session exports; Codex CLI rollouts; SWE-agent and mini-SWE-agent trajectories; OpenHands event
streams; Aider chat histories; Gemini CLI logs, saved chats and session recordings (each module of
``ingestion.formats`` names the source describing its shape). Malformed rows are counted by reason
and never abort the file; a file in no known format yields no messages and ``reason`` says what was
found instead.
"""

from __future__ import annotations

from ingestion.formats.base import MAX_MESSAGE_CHARS, ROLES, Message, ParsedSession
from ingestion.formats.chat import normalise_row
from ingestion.formats.detect import parse_session


def parse_jsonl(data: bytes, name: str = "") -> ParsedSession:
    return parse_session(data, name)


__all__ = ["MAX_MESSAGE_CHARS", "ROLES", "Message", "ParsedSession", "normalise_row", "parse_jsonl", "parse_session"]
