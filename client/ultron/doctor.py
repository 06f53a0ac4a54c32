"""``ultron doctor``: what ``ultron setup`` installed where, and whether it works.

Per agent: the MCP server entry and the hooks (in the user's files, and a project's with
``--project``), hooks registered more than once, and for Codex whether each hook has a trust
entry. Then whether the hub answers (and how fast), how long the session-start hook takes when
run as the agent runs it, and whether the spool drains. Exit 0 when nothing needs attention,
1 otherwise."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

from ultron import config, hooks, spool
from ultron.agents import AGENTS, Agent, jsonfiles, tomlfile
from ultron.localstate import display, last_error, ultron_argv

HOOK_BUDGET = hooks.TIME_CAP


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return jsonfiles.parse(path.read_text(encoding="utf-8"))[0]
    except (OSError, ValueError):
        return None


def _program(command: str) -> str:
    try:
        return shlex.split(command)[0]
    except (ValueError, IndexError):
        return command


def hook_files(agent: Agent, project: Path | None) -> list[Path]:
    files = [agent.hooks_file(None)]
    if agent.name == "claude-code":
        files.append(agent.home() / "settings.local.json")
    if project is not None:
        files.append(agent.hooks_file(project))
        if agent.name == "claude-code":
            files.append(project / ".claude" / "settings.json")
    return list(dict.fromkeys(files))


def mcp_state(agent: Agent, path: Path) -> dict[str, Any] | None:
    if agent.mcp_format == "toml":
        try:
            data = tomlfile.read(path.read_text(encoding="utf-8"))
        except OSError:
            return None
        entry = ((data or {}).get("mcp_servers") or {}).get("ultron")
    else:
        entry = ((_json(path) or {}).get("mcpServers") or {}).get("ultron")
    if not isinstance(entry, dict):
        return None
    command = str(entry.get("command", ""))
    return {"path": str(path), "command": command, "args": entry.get("args") or [],
            "program_exists": Path(command).is_file() if Path(command).is_absolute() else None,
            "token_in_clear": any("TOKEN" in str(k).upper() and not str(v).startswith("$")
                                  for k, v in (entry.get("env") or {}).items())}


def codex_trust(hooks_path: Path, found: list[tuple[str, int, int, str]]) -> dict[str, Any]:
    """Codex keeps its trust per hook in config.toml, ``[hooks.state."<hooks.json path>:<event>:
    <group>:<handler>"]`` with a ``trusted_hash``; the hash is Codex's own, so a recorded trust
    may still be for an older definition (Codex then asks again)."""
    config_path = hooks_path.with_name("config.toml")
    try:
        data = tomlfile.read(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
    except OSError:
        data = None
    if data is None:
        return {"known": False, "why": f"cannot read {display(config_path)}"
                + (" (needs Python 3.11's tomllib)" if tomlfile.tomllib is None else "")}
    states = (data.get("hooks") or {}).get("state") or {}
    untrusted, disabled = [], []
    for event, group, handler, _ in found:
        label = "".join("_" + c.lower() if c.isupper() else c for c in event).lstrip("_")
        keys = {f"{p}:{label}:{group}:{handler}" for p in (str(hooks_path), str(hooks_path.resolve()))}
        state = next((states[k] for k in keys if isinstance(states.get(k), dict)), None)
        if state is None or not state.get("trusted_hash"):
            untrusted.append(event)
        elif state.get("enabled") is False:
            disabled.append(event)
    return {"known": True, "untrusted": untrusted, "disabled": disabled}


def inspect_agent(agent: Agent, project: Path | None) -> dict[str, Any]:
    report: dict[str, Any] = {"agent": agent.name, "found": agent.found(), "home": str(agent.home()),
                              "mcp": [], "hooks": [], "twice": [], "trust": None}
    for path in dict.fromkeys([agent.mcp_file(None)] + ([agent.mcp_file(project)] if project else [])):
        state = mcp_state(agent, path)
        if state:
            report["mcp"].append(state)
    counts: dict[str, list[str]] = {}
    for path in hook_files(agent, project):
        data = _json(path)
        found = jsonfiles.our_hooks(data, agent) if data else []
        if not found:
            continue
        programs = {_program(c) for *_, c in found}
        report["hooks"].append({"path": str(path), "events": [e for e, *_ in found],
                                "programs_exist": all(Path(p).is_file() for p in programs)})
        start = [c for e, _, _, c in found if agent.event(e) == "session-start"]
        report.setdefault("start_command", start[0] if start else None)
        for event, *_ in found:
            counts.setdefault(event, []).append(str(path))
        if agent.name == "codex" and path == agent.hooks_file(None):
            report["trust"] = codex_trust(path, found)
    report["twice"] = [{"event": e, "files": files} for e, files in counts.items() if len(files) > 1]
    return report


def check_hub() -> dict[str, Any]:
    from ultron.client import Ultron
    from ultron.errors import AuthenticationError, UltronError

    settings = config.resolve()
    out: dict[str, Any] = {"url": settings.url, "url_from": settings.url_from, "token": bool(settings.token)}
    with Ultron(retries=0, timeout=5.0) as client:
        started = time.perf_counter()
        try:
            out["health"] = client.health().status
        except UltronError as exc:
            out["health"], out["error"] = "unreachable", str(exc)
            return out
        out["latency_ms"] = round((time.perf_counter() - started) * 1000)
        if settings.token:
            try:
                client.stats()
                out["token_accepted"] = True
            except AuthenticationError:
                out["token_accepted"] = False
            except UltronError as exc:
                out["error"] = str(exc)
    return out


def time_hook(agent: str, command: str | None = None) -> dict[str, Any]:
    """Run the session-start hook once as the agent would (its installed command line, through
    the shell), and time the whole process."""
    argv: str | list[str] = command or [*ultron_argv(), "hook", agent, "session-start"]
    payload = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "ultron-doctor",
                          "cwd": str(Path.cwd()), "transcript_path": None})
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, input=payload.encode(), capture_output=True, timeout=15,
                              shell=isinstance(argv, str))  # noqa: S602 - the command setup wrote
    except subprocess.TimeoutExpired:
        return {"seconds": time.perf_counter() - started, "ok": False, "said": "did not end within 15 s"}
    seconds = time.perf_counter() - started
    out = done.stdout.decode("utf-8", errors="replace").strip()
    if not out:
        said = "printed nothing (the hub had no memories to give)"
        ok = True
    else:
        try:
            envelope = json.loads(out)
            text = json.dumps(envelope)
            ok = len(out.splitlines()) == 1 and isinstance(envelope, dict)
            said = ("printed the stub: " + hooks.STUB) if hooks.STUB in text or "no login" in text \
                or "refused" in text else f"printed one envelope ({len(out)} bytes)"
        except ValueError:
            ok, said = False, f"printed something that is not JSON: {out[:80]!r}"
    return {"seconds": round(seconds, 3), "ok": ok and done.returncode == 0 and seconds <= HOOK_BUDGET,
            "exit": done.returncode, "said": said}


def diagnose(*, project: Path | None, stale_minutes: float, run_hook: bool = True) -> dict[str, Any]:
    agents = [inspect_agent(a, project) for a in AGENTS.values()]
    installed = [a for a in agents if a.get("start_command")]
    report = {"agents": agents, "hub": check_hub(), "spool": spool.status(stale_minutes=stale_minutes),
              "last_error": last_error()}
    if run_hook:
        report["hook"] = time_hook(installed[0]["agent"], installed[0]["start_command"]) if installed \
            else time_hook("claude-code")
    return report


def problems(report: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for a in report["agents"]:
        label = AGENTS[a["agent"]].label
        found += [f"{label}: {t['event']} is registered {len(t['files'])} times "
                  f"({', '.join(display(f) for f in t['files'])})" for t in a["twice"]]
        found += [f"{label}: the hooks in {display(h['path'])} run a program that does not exist (run "
                  "`ultron setup` again)" for h in a["hooks"] if not h["programs_exist"]]
        found += [f"{label}: {display(m['path'])} has a token in clear" for m in a["mcp"] if m["token_in_clear"]]
        trust = a["trust"]
        if trust and trust.get("known") and trust["untrusted"]:
            found.append(f"Codex: not trusted yet: {', '.join(trust['untrusted'])} (open /hooks in Codex and "
                         "trust them; Codex skips them silently until then)")
    hub = report["hub"]
    if hub.get("health") != "ok" or hub.get("token_accepted") is False or not hub.get("token"):
        found.append("the hub: " + ("no token (run `ultron login`)" if not hub.get("token") else
                                    "refused the token" if hub.get("token_accepted") is False else
                                    str(hub.get("error") or hub.get("health"))))
    if report.get("hook") and not report["hook"]["ok"]:
        found.append(f"the session-start hook: {report['hook']['said']}, {report['hook']['seconds']} s")
    if report["spool"]["stuck"]:
        found.append(f"the spool is not draining: {len(report['spool']['stuck'])} waiting for more than "
                     f"{report['spool']['oldest'] / 60:.0f} min")
    return found


def render(report: dict[str, Any]) -> list[str]:
    lines = []
    hub = report["hub"]
    latency = f" in {hub['latency_ms']} ms" if "latency_ms" in hub else ""
    token = "" if not hub.get("token") else ", token accepted" if hub.get("token_accepted") else \
        ", token refused" if hub.get("token_accepted") is False else ""
    lines.append(f"hub         {hub['url']} (from {display(hub['url_from'])}): {hub.get('health')}{latency}{token}"
                 + (f" ({hub['error']})" if hub.get("error") else ""))
    for a in report["agents"]:
        agent = AGENTS[a["agent"]]
        if not a["found"] and not a["hooks"] and not a["mcp"]:
            lines.append(f"{agent.label:<12}{display(a['home'])} not found")
            continue
        lines.append(f"{agent.label:<12}{display(a['home'])}" + ("" if a["found"] else " (missing)"))
        for m in a["mcp"]:
            exists = "" if m["program_exists"] is not False else " (the program does not exist)"
            lines.append(f"  MCP       {display(m['path'])}: {m['command']} {' '.join(m['args'])}{exists}")
        if not a["mcp"]:
            lines.append("  MCP       not registered")
        for h in a["hooks"]:
            lines.append(f"  hooks     {display(h['path'])}: {', '.join(h['events'])}")
        if not a["hooks"]:
            lines.append("  hooks     none")
        for t in a["twice"]:
            lines.append(f"  ! {t['event']} registered {len(t['files'])} times")
        trust = a["trust"]
        if trust is not None:
            if not trust.get("known"):
                lines.append(f"  trust     cannot tell: {trust['why']}")
            elif trust["untrusted"]:
                lines.append(f"  trust     not trusted yet: {', '.join(trust['untrusted'])}: open /hooks in Codex")
            else:
                lines.append("  trust     every hook has a trust entry (Codex asks again if a hook changed)"
                             + (f"; disabled: {', '.join(trust['disabled'])}" if trust["disabled"] else ""))
    if report.get("hook"):
        h = report["hook"]
        lines.append(f"hook        session-start took {h['seconds']:.2f} s (budget {HOOK_BUDGET:g} s), {h['said']}")
    s = report["spool"]
    uploader = s["uploader"]
    running = "uploader running" if uploader and not uploader["stale"] else "no uploader running"
    lines.append(f"spool       {s['count']} waiting" + (f", oldest {s['oldest'] / 60:.0f} min" if s["count"] else "")
                 + f"; {running}" + (f"; {len(s['stuck'])} not draining" if s["stuck"] else ""))
    if report.get("last_error"):
        lines.append(f"last error  {report['last_error']}")
    return lines


def run(args: argparse.Namespace) -> int:
    project = Path(args.project).expanduser().resolve() if args.project else None
    report = diagnose(project=project, stale_minutes=args.stale_minutes, run_hook=not args.no_hook)
    found = problems(report)
    if args.json:
        print(json.dumps({**report, "problems": found}, indent=2, default=str))
    else:
        print("\n".join(render(report)))
        print("\n".join(["", "Needs attention:", *(f"- {p}" for p in found)]) if found else "\nAll good.")
    return 1 if found else 0
