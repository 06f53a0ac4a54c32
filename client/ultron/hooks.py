"""``ultron hook AGENT EVENT``: the one command every agent hook runs.

It reads the agent's JSON payload from standard input and answers on standard output with
exactly one JSON envelope of the shape that agent expects for that event, or nothing at all.
Whatever happens it exits 0 and prints nothing else: errors go to
``$XDG_STATE_HOME/ultron/hook.log`` (size-capped), since a stray line on standard output breaks
the agent's session.

- ``session-start``: the hub's context block (``/api/context``, 1,500 tokens unless
  ``ULTRON_HOOK_BUDGET`` says otherwise), already framed by the hub as other agents' notes to
  weigh, not instructions. The whole hook returns within 2 s of the process starting: a hub that
  is slow, down or failing gets a one-line stub instead. An empty block prints nothing.
- ``stop``, ``session-end``, ``pre-compact``: queue the payload's ``transcript_path`` in the spool
  and start the uploader (``ultron.spool``); return at once.

Cursor runs Claude Code's hooks too, with a payload that carries ``cursor_version``; when our
Cursor hooks are installed, the Claude Code hook leaves such events to them (one capture, one
context block per session).
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
import traceback
from typing import Any

from ultron import agents, config, spool
from ultron.localstate import log, process_age

_LOADED = time.monotonic()
TIME_CAP = 2.0  # seconds, from the process's start to its exit
MARGIN = 0.35  # for writing the answer and exiting, on a busy machine too
STDIN_WAIT = 0.5
DEFAULT_BUDGET = 1500
STUB = "Ultron hub unavailable; no shared memories this session."
NO_LOGIN = "Ultron hub: no login on this machine (run `ultron login`); no shared memories this session."
REFUSED = "Ultron hub refused this machine's token (run `ultron login`); no shared memories this session."


def main(argv: list[str]) -> int:
    age = process_age()
    started = time.monotonic() - age if age is not None else _LOADED - 0.3
    answer: dict[str, Any] | None = None
    real = sys.stdout
    try:
        sys.stdout = io.StringIO()  # nothing but the envelope reaches the agent
        answer = run(argv, started=started)
    except BaseException:  # noqa: BLE001 - a hook never fails its agent
        log(f"hook {' '.join(argv)} failed:\n{traceback.format_exc()}")
        answer = _fallback(argv)
    finally:
        sys.stdout = real
    if answer is not None:
        try:
            real.write(json.dumps(answer, ensure_ascii=False) + "\n")
            real.flush()
        except Exception:  # noqa: BLE001 - the agent closed the pipe: nothing to tell it
            pass
    return 0


def _fallback(argv: list[str]) -> dict[str, Any] | None:
    try:
        agent = agents.get(argv[0])
        if agent is not None and agent.event(argv[1]) == agents.SESSION_START:
            return agent.start_envelope(STUB)
        return agent.capture_envelope() if agent is not None else None
    except Exception:  # noqa: BLE001
        return None


def read_payload(stream: Any = None) -> dict[str, Any]:
    """The agent's JSON payload; {} when there is none (a terminal), it is not JSON, or standard
    input stays open (read in a thread, so a hook never hangs on it)."""
    stream = sys.stdin if stream is None else stream
    if stream is None or stream.closed or stream.isatty():
        return {}
    raw = getattr(stream, "buffer", stream)
    box: list[bytes] = []
    reader = threading.Thread(target=lambda: box.append(raw.read()), daemon=True)
    reader.start()
    reader.join(STDIN_WAIT)
    if not box:
        log("hook: standard input was not closed in time; no payload read")
        return {}
    try:
        data = json.loads(box[0].decode("utf-8", errors="replace") or "{}")
    except ValueError as exc:
        log(f"hook: the payload is not JSON ({exc}): {box[0][:200]!r}")
        return {}
    return data if isinstance(data, dict) else {}


def run(argv: list[str], *, started: float, stdin: Any = None) -> dict[str, Any] | None:
    if len(argv) < 2:
        log(f"hook: expected `ultron hook AGENT EVENT`, got {argv!r}")
        return None
    agent = agents.get(argv[0])
    event = agent.event(argv[1]) if agent is not None else None
    if agent is None or event is None:
        log(f"hook: unknown agent or event {argv[:2]!r}; nothing done")
        return None
    payload = read_payload(stdin)
    if agent.name == "claude-code" and payload.get("cursor_version") and cursor_hooked():
        return None  # Cursor replaying Claude Code's hooks: our Cursor hook handles this event
    if event == agents.SESSION_START:
        text = context_text(started)
        _start_uploader()  # sessions a hub that was down could not take, from earlier
        return agent.start_envelope(text) if text else None
    session_id, transcript = agent.session_of(payload)
    if transcript is None:
        log(f"hook: {agent.name} {event}: no transcript_path in the payload; nothing queued")
    elif spool.enqueue(agent=agent.name, event=event, transcript=transcript, session_id=session_id):
        _start_uploader()
    return agent.capture_envelope()


def _start_uploader() -> None:
    try:
        spool.ensure_uploader()
    except Exception:  # noqa: BLE001
        log(f"hook: could not start the uploader:\n{traceback.format_exc()}")


def cursor_hooked() -> bool:
    """Whether Cursor's own hooks file has our hooks (then they capture Cursor's sessions)."""
    from ultron.agents import jsonfiles

    cursor = agents.AGENTS["cursor"]
    try:
        data, _ = jsonfiles.parse(cursor.hooks_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(jsonfiles.our_hooks(data, cursor))


def budget() -> int:
    try:
        return max(50, min(32000, int(os.environ.get("ULTRON_HOOK_BUDGET", DEFAULT_BUDGET))))
    except ValueError:
        return DEFAULT_BUDGET


def context_text(started: float, *, cap: float = TIME_CAP) -> str:
    """The text for the session's start: the hub's block (plus a line with its ``serve_id`` when
    the hub gives one), a one-line stub when the hub cannot answer in time, "" when the hub has
    nothing to say."""
    from ultron.errors import AuthenticationError, UltronError

    try:
        settings = config.resolve()
    except UltronError as exc:
        log(f"hook: session-start: {exc}")
        return NO_LOGIN
    if not settings.token:
        return NO_LOGIN
    remaining = started + cap - MARGIN - time.monotonic()
    if remaining < 0.05:
        log("hook: session-start: no time left for the hub after start-up")
        return STUB
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["data"] = fetch_context(settings.url, settings.token or "", budget(), remaining)
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(remaining)
    if "data" not in box:
        error = box.get("error")
        log(f"hook: session-start: the hub at {settings.url} "
            + (f"failed: {error}" if error is not None else f"did not answer within {cap:g} s"))
        return REFUSED if isinstance(error, AuthenticationError) else STUB
    data = box["data"]
    block = data.get("context") if isinstance(data, dict) else None
    if not isinstance(block, str):
        log(f"hook: session-start: the hub's answer has no context block: {str(data)[:200]}")
        return STUB
    if not block.strip():
        return ""
    serve_id = data.get("serve_id")
    line = (f"\n(Ultron serve_id {serve_id}: give it to the `feedback` tool when one of these memories helped or "
            "misled you.)") if serve_id else ""
    return block.rstrip() + line


def fetch_context(url: str, token: str, token_budget: int, timeout: float) -> Any:
    """``POST /api/context``'s JSON answer: one attempt (no retries), every wait bounded by
    ``timeout``. The raw answer, because newer hubs add fields (``serve_id``) to it."""
    import httpx

    from ultron._protocol import Http, Operation, Request, RetryPolicy, drive
    from ultron.client import __version__

    def operation() -> Operation[Any]:
        return (yield Request("POST", "/api/context", json={"query": "", "token_budget": token_budget}))

    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json",
               "User-Agent": f"ultron-client/{__version__} (hook)"}
    limit = httpx.Timeout(timeout, connect=min(timeout, 1.0))
    with httpx.Client(headers=headers, timeout=limit) as http:
        steps = drive(operation(), base_url=url, policy=RetryPolicy(retries=0), slow_timeouts=False)
        sent: Any = None
        error: Exception | None = None
        while True:
            try:
                step = steps.throw(error) if error is not None else steps.send(sent)
            except StopIteration as stop:
                return stop.value
            sent, error = None, None
            if isinstance(step, Http):
                try:
                    sent = http.request(**step.kwargs)
                except httpx.TransportError as exc:
                    error = exc
