"""Local session files for ``ingest``: which files a path yields, the name each is sent under,
and how they are split into requests the hub accepts.

The rules mirror the hub's own walk of server paths: a file named explicitly may end in
``.jsonl``, ``.json``, ``.traj`` or ``.md``; a directory is walked recursively, skipping hidden
files and directories (Aider's ``.aider.chat.history.md`` excepted) and symlinks, and yields
``.jsonl``, ``.traj`` and ``*.aider.chat.history.md`` files, plus the ``.json`` files whose first
bytes look like a session (a project holds many ``.json`` files that are not). The directory
you name may itself be hidden (``~/.claude/projects``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ultron.errors import UsageError

SESSION_EXTENSIONS = (".jsonl", ".json", ".traj", ".md")
AIDER_HISTORY = ".aider.chat.history.md"
_WALKED = (".jsonl", ".traj", AIDER_HISTORY)
_SNIFF_BYTES = 4096
_SNIFF_MARKERS = (b'"role"', b'"sessionId"', b'"trajectory"', b'"observation"', b'"action"', b'"parts"',
                  b'"payload"', b'"messages"', b'"kind"')

# The hub's defaults: 200 MiB per request (ULTRON_INGEST_MAX_REQUEST_BYTES) and Django's 100
# files per multipart request. Requests are kept well under both; a hub configured lower
# answers 413, and the batch is then split (see ``ingest`` in _ops).
DEFAULT_BATCH_BYTES = 32 * 1024 * 1024
DEFAULT_BATCH_FILES = 100


@dataclass(frozen=True)
class LocalFile:
    path: Path
    name: str  # the session's identity on the hub: its absolute path, the home directory as ~
    size: int


def _hidden(name: str) -> bool:
    return name.startswith(".") and name not in (".", "..")


def looks_like_session(head: bytes) -> bool:
    body = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
    return body.lstrip()[:1] in (b"[", b"{") and any(marker in body for marker in _SNIFF_MARKERS)


def walk_includes(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith(_WALKED):
        return True
    if not name.endswith(".json"):
        return False
    try:
        with path.open("rb") as handle:
            return looks_like_session(handle.read(_SNIFF_BYTES))
    except OSError:
        return False


def identity(path: Path) -> str:
    absolute = os.path.abspath(path)
    home = os.path.expanduser("~")
    if home not in ("", "/") and (absolute == home or absolute.startswith(home + os.sep)):
        return "~" + absolute[len(home):]
    return absolute


def collect(paths: Iterable[str | os.PathLike[str]]) -> list[LocalFile]:
    """The session files under ``paths``, each once, in a stable order."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: dict[str, LocalFile] = {}
    for raw in paths:
        given = Path(raw).expanduser()
        if given.is_dir():
            for directory, dirnames, filenames in os.walk(given, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not _hidden(d)
                                     and not os.path.islink(os.path.join(directory, d)))
                for name in sorted(filenames):
                    full = Path(directory) / name
                    if (not _hidden(name) or name == AIDER_HISTORY) and not full.is_symlink() and walk_includes(full):
                        _add(found, full)
        elif given.is_file():
            if not given.name.lower().endswith(SESSION_EXTENSIONS):
                raise UsageError(f"{raw}: only .jsonl, .json, .traj or .md session files are ingested")
            _add(found, given)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    return list(found.values())


def _add(found: dict[str, LocalFile], path: Path) -> None:
    name = identity(path)
    if name not in found:
        found[name] = LocalFile(path=path, name=name, size=path.stat().st_size)


def batches(files: list[LocalFile], *, max_bytes: int = DEFAULT_BATCH_BYTES,
            max_files: int = DEFAULT_BATCH_FILES) -> list[list[LocalFile]]:
    """Consecutive groups of at most ``max_files`` files and ``max_bytes`` bytes; a file larger
    than ``max_bytes`` goes alone."""
    out: list[list[LocalFile]] = []
    current: list[LocalFile] = []
    size = 0
    for item in files:
        if current and (len(current) >= max_files or size + item.size > max_bytes):
            out.append(current)
            current, size = [], 0
        current.append(item)
        size += item.size
    if current:
        out.append(current)
    return out
