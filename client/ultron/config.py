"""Where the hub's URL, the agent's token and the space its writes go to come from: the
arguments, else ``ULTRON_URL`` / ``ULTRON_TOKEN`` / ``ULTRON_SPACE``, else what ``ultron login``
stored in ``$XDG_CONFIG_HOME/ultron/config.json`` (``~/.config/ultron/config.json`` without
it), a file only its owner can read. Without a space, writes go to the agent's default space
on the hub."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ultron.errors import UsageError

DEFAULT_URL = "http://localhost:8000"


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base.strip() and Path(base).is_absolute() else Path.home() / ".config"
    return root / "ultron" / "config.json"


@dataclass
class Settings:
    url: str
    token: str | None
    url_from: str  # "argument", "ULTRON_URL", the config file's path, or "default"
    token_from: str | None
    space: str | None = None  # where writes go when a call names no space (None: the agent's default)
    space_from: str | None = None


def load_stored() -> dict[str, str]:
    """What ``ultron login`` stored ({} when nothing was)."""
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}; run `ultron login` again") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a JSON object; run `ultron login` again")
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def resolve(url: str | None = None, token: str | None = None, space: str | None = None) -> Settings:
    stored: dict[str, str] | None = None

    def from_file(key: str) -> str | None:
        nonlocal stored
        if stored is None:
            stored = load_stored()
        return stored.get(key) or None

    if url:
        found_url, url_from = url, "argument"
    elif os.environ.get("ULTRON_URL", "").strip():
        found_url, url_from = os.environ["ULTRON_URL"].strip(), "ULTRON_URL"
    elif (value := from_file("url")) is not None:
        found_url, url_from = value, str(config_path())
    else:
        found_url, url_from = DEFAULT_URL, "default"
    token_from: str | None
    if token:
        found_token, token_from = token, "argument"
    elif os.environ.get("ULTRON_TOKEN", "").strip():
        found_token, token_from = os.environ["ULTRON_TOKEN"].strip(), "ULTRON_TOKEN"
    elif (value := from_file("token")) is not None:
        found_token, token_from = value, str(config_path())
    else:
        found_token, token_from = None, None
    found_space: str | None
    space_from: str | None
    if space and space.strip():
        found_space, space_from = space.strip(), "argument"
    elif os.environ.get("ULTRON_SPACE", "").strip():
        found_space, space_from = os.environ["ULTRON_SPACE"].strip(), "ULTRON_SPACE"
    elif (value := from_file("space")) is not None:
        found_space, space_from = value.strip(), str(config_path())
    else:
        found_space, space_from = None, None
    return Settings(url=normalize_url(found_url), token=found_token, url_from=url_from, token_from=token_from,
                    space=found_space, space_from=space_from)


def normalize_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"the hub URL must start with http:// or https://, not {url!r}")
    return url


def store(*, url: str, token: str, space: str | None = None) -> Path:
    """Write the login (with the space writes go to, when one is given): the directory 0700,
    the file 0600 from its creation (never readable by others, even for a moment), replaced
    atomically."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".config-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            data = {"url": normalize_url(url), "token": token}
            if space:
                data["space"] = space
            json.dump(data, out, indent=2)
            out.write("\n")
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def forget() -> bool:
    """Remove the stored login; whether there was one."""
    try:
        config_path().unlink()
    except FileNotFoundError:
        return False
    return True
