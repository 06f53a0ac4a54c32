"""How the CLI prints: aligned tables for people, JSON for scripts, and a progress line on
standard error (redrawn in place on a terminal, one line per change otherwise)."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Sequence
from typing import Any, TextIO


def emit_json(data: Any, stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    json.dump(data, out, indent=2, ensure_ascii=False, default=str)
    out.write("\n")


def one_line(text: Any) -> str:
    return " ".join(str(text if text is not None else "").split())


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], stream: TextIO | None = None,
          width: int | None = None) -> None:
    """Columns padded to their widest cell; the last column is cut to the terminal's width."""
    out = stream or sys.stdout
    cells = [[one_line(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    total = width or shutil.get_terminal_size((120, 24)).columns
    fixed = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = max(len(headers[-1]), min(widths[-1], total - fixed)) if total > fixed else widths[-1]

    def line(values: Sequence[str]) -> str:
        parts = []
        for i, value in enumerate(values):
            if len(value) > widths[i]:
                value = value[: max(widths[i] - 1, 0)] + "…"
            parts.append(value if i == len(values) - 1 else value.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    out.write(line(list(headers)) + "\n")
    for row in cells:
        out.write(line(row) + "\n")


def size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class Progress:
    """A progress bar on standard error; silent when ``quiet``."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = ""

    def show(self, label: str, done: int, total: int, extra: str = "") -> None:
        if self.quiet:
            return
        fraction = done / total if total else 0.0
        bar = "#" * int(fraction * 24)
        text = f"{label} [{bar:<24}] {done}/{total}" + (f"  {extra}" if extra else "")
        if text == self._last:
            return
        self._last = text
        if self.tty:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def end(self) -> None:
        if self.tty and self._last and not self.quiet:
            self.stream.write("\n")
            self.stream.flush()
        self._last = ""
