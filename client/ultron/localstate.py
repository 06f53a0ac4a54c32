"""Where the client keeps its machine-local state, and the small process helpers the hooks,
the spool uploader, setup and doctor share.

State lives in ``$XDG_STATE_HOME/ultron`` (``~/.local/state/ultron`` without it): the hook log,
the spool of sessions waiting to be uploaded, and the log of the edits ``ultron setup`` made.
The directory is created 0700: the edit log holds copies of agents' config files.
"""

from __future__ import annotations

import datetime
import os
import shlex
import subprocess
import sys
from pathlib import Path

LOG_MAX_BYTES = 256 * 1024  # hook.log is moved to hook.log.1 past this size


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or ""
    root = Path(base) if base.strip() and Path(base).is_absolute() else Path.home() / ".local" / "state"
    return root / "ultron"


def ensure_state_dir() -> Path:
    path = state_dir()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def log_path() -> Path:
    return state_dir() / "hook.log"


def log(message: str) -> None:
    """One line in hook.log (never on standard output, which belongs to the agent). Never raises."""
    try:
        path = ensure_state_dir() / "hook.log"
        try:
            if path.stat().st_size > LOG_MAX_BYTES:
                os.replace(path, path.with_name("hook.log.1"))
        except FileNotFoundError:
            pass
        stamp = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        text = message.rstrip().replace("\n", "\n    ")  # a traceback's lines stay under their entry
        line = f"{stamp} [{os.getpid()}] {text}\n"
        with path.open("a", encoding="utf-8") as out:
            out.write(line)
    except Exception:  # noqa: BLE001 - logging must never break a hook
        pass


def last_error() -> str | None:
    """The last failure hook.log reports since the spool last sent a session (for ``ultron
    doctor``): None when a later upload went through."""
    try:
        lines = log_path().read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if "spool: uploaded" in line:
            return None
        if line.startswith(" "):
            continue  # a traceback's lines: its first line says what failed
        lowered = line.lower()
        if "error" in lowered or "failed" in lowered or "not readable" in lowered:
            return line
    return None


def ultron_argv(executable: str | None = None) -> list[str]:
    """How to run this ``ultron``: the given program, else the ``ultron`` script installed beside
    this Python (the same environment), else ``python -m ultron``. Absolute paths, so an agent
    started with another PATH runs the same client."""
    if executable:
        return [os.path.abspath(os.path.expanduser(executable))]
    here = Path(sys.executable)  # not resolved: a virtual environment's python is a link
    names = ("ultron.exe", "ultron") if os.name == "nt" else ("ultron",)
    for folder in (here.parent, here.parent / "Scripts"):
        for name in names:
            candidate = folder / name
            if candidate.is_file():
                return [str(candidate.absolute())]
    return [str(here.absolute()), "-m", "ultron"]


_PLAIN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")
_UNSAFE_IN_DOUBLE_QUOTES = set('"$`\\!') if os.name != "nt" else set('"')


def quote_arg(arg: str, *, force: bool = False) -> str:
    """One argument for the command line an agent hands to its shell. A path is always in double
    quotes (``force``), which sh, bash, zsh and cmd.exe read alike; a string that double quotes
    cannot carry is quoted as the platform's shell wants it."""
    if not force and arg and all(c in _PLAIN for c in arg):
        return arg
    if not any(c in _UNSAFE_IN_DOUBLE_QUOTES for c in arg):
        return f'"{arg}"'
    return subprocess.list2cmdline([arg]) if os.name == "nt" else shlex.quote(arg)


def command_line(argv: list[str]) -> str:
    """``argv`` as one command line, its program quoted (a home directory with a space works)."""
    return " ".join(quote_arg(arg, force=(i == 0)) for i, arg in enumerate(argv))


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if os.name == "nt":
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        try:
            kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        finally:
            kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_age() -> float | None:
    """Seconds since this process started (Linux), None where that is not known cheaply."""
    try:
        stat = Path("/proc/self/stat").read_text()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def display(path: Path | str) -> str:
    """A path as people read it: the home directory as ~."""
    text = str(path)
    home = str(Path.home())
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home):]
    return text
