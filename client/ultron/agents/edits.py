"""The log of the files ``ultron setup`` changed, so ``ultron setup --uninstall`` can put each
back: ``$XDG_STATE_HOME/ultron/installed.json`` (0600, in a 0700 directory), one record per file
with the bytes it held before our first edit (or that it did not exist), the directories we
created for it, and a digest of what we last wrote.

At uninstall a file that still holds exactly what we wrote gets its old bytes back (or is
removed, with the directories we made); a file someone changed since keeps their changes and
loses only our entries. A record stops promising the old bytes (``exact`` false) once we rewrite
a file someone else had changed after our previous write.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ultron.errors import UsageError
from ultron.localstate import ensure_state_dir, state_dir

VERSION = 1


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


@dataclass
class FileRecord:
    path: str
    agent: str
    kind: str  # "hooks", "mcp-json" or "mcp-toml": how to take our entries out again
    existed: bool
    prior: str | None  # base64 of the bytes before our first edit
    mode: int | None
    written: str = ""  # sha256 of what we last wrote
    exact: bool = True
    created_dirs: list[str] = field(default_factory=list)

    def prior_bytes(self) -> bytes | None:
        return base64.b64decode(self.prior) if self.prior is not None else None


class EditLog:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_dir() / "installed.json"
        self.files: dict[str, FileRecord] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except ValueError as exc:
            raise UsageError(f"{self.path} is not valid JSON ({exc}); move it aside to start again") from exc
        try:
            for raw in (data.get("files") or {}).values():
                record = FileRecord(**raw)
                self.files[record.path] = record
        except (AttributeError, TypeError) as exc:
            raise UsageError(f"{self.path} is not a log `ultron setup` wrote ({exc})") from exc

    def save(self) -> None:
        if not self.files:
            self.path.unlink(missing_ok=True)
            return
        ensure_state_dir()
        data = {"version": VERSION, "files": {k: asdict(v) for k, v in sorted(self.files.items())}}
        atomic_write(self.path, (json.dumps(data, indent=2) + "\n").encode(), mode=0o600)

    def write(self, path: Path, new: bytes, *, agent: str, kind: str) -> None:
        """Write ``new`` to ``path`` after logging what the file held before."""
        key = str(path)
        current = read_bytes(path)
        record = self.files.get(key)
        if record is None:
            created = [str(p) for p in reversed(path.parents) if not p.exists()]
            record = FileRecord(path=key, agent=agent, kind=kind, existed=current is not None,
                                prior=base64.b64encode(current).decode() if current is not None else None,
                                mode=_mode(path) if current is not None else None, created_dirs=created)
            self.files[key] = record
        elif record.written and (current is None or digest(current) != record.written):
            record.exact = False  # someone changed it after our last write: their edits must survive
        self.save()  # the old bytes are on disk before the file changes
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, new, mode=_mode(path) if current is not None else None)
        record.written = digest(new)
        self.save()

    def forget(self, path: str) -> None:
        self.files.pop(path, None)
        self.save()


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` at once (never half-written). A symbolic link (dotfiles kept in a
    repository) stays a link: its target is written."""
    target = path.resolve() if path.is_symlink() else path
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def restore(record: FileRecord) -> str:
    """Put the file back as it was before our first edit: ``restored``, ``removed`` or
    ``gone`` (it is already missing). The caller checked that it still holds what we wrote."""
    path = Path(record.path)
    prior = record.prior_bytes()
    if prior is None:
        if path.exists() or path.is_symlink():
            path.unlink()
        return "removed"
    if not path.parent.exists():
        return "gone"
    atomic_write(path, prior, mode=record.mode)
    return "restored"


def remove_created_dirs(records: list[FileRecord]) -> None:
    """The folders setup created, deepest first, each only if empty: another tool may have put
    something there since."""
    for folder in sorted({d for r in records for d in r.created_dirs}, key=lambda d: -len(Path(d).parts)):
        try:
            Path(folder).rmdir()
        except OSError:
            pass


def unchanged_since_written(record: FileRecord) -> bool:
    current = read_bytes(Path(record.path))
    return current is not None and record.exact and digest(current) == record.written


def as_dict(record: FileRecord) -> dict[str, Any]:
    return asdict(record)
