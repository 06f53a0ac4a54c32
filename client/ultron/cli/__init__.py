"""The ``ultron`` command: argument parsing and exit codes (see ``EXIT_CODES``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ultron.cli import commands
from ultron.cli.output import emit_json
from ultron.client import __version__
from ultron.errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RequestTooLargeError,
    ServerError,
    UltronConnectionError,
    UltronError,
    UsageError,
)

OK, FAILED, USAGE, AUTH, NOT_FOUND, UNAVAILABLE = 0, 1, 2, 3, 4, 5
EXIT_CODES = f"""exit codes:
  {OK}  success
  {FAILED}  any other failure (e.g. --wait gave up before the job was done)
  {USAGE}  usage error: bad arguments, a missing file, an unsafe skill slug, or input the hub
     refused as invalid or too large (400, 413)
  {AUTH}  no token, a token the hub refused (401), or an operation it forbids (403): a curator-only
     one, or a space you may not write to or read
  {NOT_FOUND}  not found (404): no such memory, skill or ingest job
  {UNAVAILABLE}  the hub is unreachable, overloaded or failing (connection errors, 429, 5xx after
     retries), or `status` found it degraded
"""


def exit_code(error: UltronError) -> int:
    if isinstance(error, (UsageError, InvalidRequestError, RequestTooLargeError)):
        return USAGE
    if isinstance(error, (AuthenticationError, PermissionDeniedError)):
        return AUTH
    if isinstance(error, NotFoundError):
        return NOT_FOUND
    if isinstance(error, (UltronConnectionError, ServerError, RateLimitError)):
        return UNAVAILABLE
    return FAILED


def _positive(value: str) -> float:
    number = float(value)
    if number < 0:
        raise argparse.ArgumentTypeError("must be zero or more")
    return number


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", help="the hub's URL (default: ULTRON_URL, the stored login, http://localhost:8000)")
    common.add_argument("--token", help="the agent's token (default: ULTRON_TOKEN, the stored login)")
    common.add_argument("--space", action="append", metavar="SLUG", help=(
        "the space to work in: where uploads and ingests go (default: ULTRON_SPACE, the stored login, "
        "else the agent's default space), and the only space searches, context, stats and skills "
        "read (default: every space you may read); repeatable for reads"))
    common.add_argument("--json", action="store_true", help="print JSON for scripts instead of tables")

    parser = argparse.ArgumentParser(
        prog="ultron", description="Talk to an Ultron Hub: search and share memories, ingest sessions, "
        "install skills, serve the hub over MCP.", epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"ultron-client {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, handler, help: str) -> argparse.ArgumentParser:  # noqa: A002
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    p = command("login", commands.login, "store the hub's URL and your token (checked first) in your config directory")
    p.add_argument("--no-verify", action="store_true", help="store without checking the token against the hub")
    # --space (from the common options) is stored too: the space later writes go to.
    command("logout", commands.logout, "forget the stored login")
    command("status", commands.status, "the hub's health, where the URL and token come from, memory counts")
    command("spaces", commands.spaces, "your spaces on the hub: your role in each, and the default one for writes")

    p = command("search", commands.search, "search memories")
    p.add_argument("query")
    p.add_argument("--type", choices=["error", "security", "correction", "pattern", "preference", "life"])
    p.add_argument("--tier", choices=["hot", "warm", "cold"])
    p.add_argument("--tag", action="append", help="only memories with this tag (repeatable)")
    p.add_argument("--limit", type=int, default=10, help="1-100 (default 10)")
    p.add_argument("--mode", choices=["hybrid", "semantic", "keyword"], help="default: the hub's (hybrid)")
    p.add_argument("--detail", choices=["l0", "l1"], default="l1")

    p = command("details", commands.details, "the full text of memories by id")
    p.add_argument("ids", nargs="+", metavar="ID")

    p = command("feedback", commands.feedback, "say how a memory a search or context call served you turned out")
    p.add_argument("memory_id", metavar="MEMORY_ID")
    p.add_argument("rating", choices=["helpful", "not_helpful", "wrong", "outdated", "clear"],
                   help="helpful / not_helpful move its rank a little; wrong / outdated send it to the curators; "
                        "clear takes your vote back")
    p.add_argument("--serve-id", required=True, help="the serve_id the search or context call printed")
    p.add_argument("--reason", default="", help="why (curators read it)")

    p = command("upload", commands.upload, "share one memory (the hub decides its type and merges duplicates)")
    p.add_argument("--content", required=True, help="what happened: the error, the rule, the fact")
    p.add_argument("--context", help="where it happened")
    p.add_argument("--resolution", help="what fixed it")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")

    p = command("ingest", commands.ingest, "upload session files and directories for the hub to learn from")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--agent", help="the agent the sessions belong to (another agent needs a curator token)")
    p.add_argument("--wait", action="store_true", help="follow the ingest job until it is done")
    p.add_argument("--timeout", type=_positive, help="with --wait: give up after this many seconds (exit 1)")
    p.add_argument("--interval", type=_positive, default=2.0, help="with --wait: seconds between polls")

    p = command("ingest-text", commands.ingest_text, "extract memories from plain text (a file, or - for stdin)")
    p.add_argument("file", metavar="FILE")

    p = command("watch", commands.watch, "re-upload the session files under DIR as they grow")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--interval", type=_positive, default=2.0, help="seconds between scans (default 2)")
    p.add_argument("--settle", type=_positive, default=5.0,
                   help="upload a changed file once it has not changed for this many seconds (default 5)")
    p.add_argument("--agent", help="as for ingest")
    p.add_argument("--once", action="store_true", help="upload what is there, then exit")

    p = command("context", commands.context, "a prompt-ready block of shared knowledge within a token budget")
    p.add_argument("query", nargs="?", default="")
    p.add_argument("--budget", type=int, default=2000, help="tokens, 50-32000 (default 2000)")
    p.add_argument("--type", choices=["error", "security", "correction", "pattern", "preference", "life"])
    p.add_argument("--tag", action="append")

    p = command("export", commands.export, "the current knowledge of your spaces as one file (MEMORY.md)")
    p.add_argument("--format", choices=["md"], default="md", help="md: Markdown, grouped by topic and type")
    p.add_argument("--out", metavar="FILE", help="write FILE (default: standard output)")

    skills = sub.add_parser("skills", help="list, read and install skills", description="list, read and install skills")
    skills_sub = skills.add_subparsers(dest="skills_command", metavar="ACTION", required=True)
    p = skills_sub.add_parser("list", parents=[common], help="published skills")
    p.set_defaults(handler=commands.skills_list)
    p = skills_sub.add_parser("show", parents=[common], help="print a skill's SKILL.md")
    p.add_argument("slug", metavar="SLUG")
    p.set_defaults(handler=commands.skills_show)
    p = skills_sub.add_parser("install", parents=[common], help="write DIR/SLUG/SKILL.md")
    p.add_argument("slug", metavar="SLUG")
    p.add_argument("--dir", required=True, help="the skills directory, e.g. .claude/skills")
    p.set_defaults(handler=commands.skills_install)

    p = command("mcp", commands.mcp, "serve the hub to MCP clients (stdio; --http for streamable HTTP)")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp instead")
    p.add_argument("--host", default="127.0.0.1", help="with --http (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="with --http (default 8765)")

    agent_names = ["claude-code", "codex", "cursor"]
    p = sub.add_parser("setup", help="register the hub (MCP server and hooks) with Claude Code, Codex and Cursor",
                       description="Register the hub with the coding agents found on this machine (~/.claude, "
                       "~/.codex, ~/.cursor): the MCP server `ultron mcp` and hooks that run `ultron hook`. No "
                       "token is written; every edit is logged so --uninstall restores the files.")
    p.set_defaults(handler=commands.setup)
    p.add_argument("--agent", choices=[*agent_names, "all"], help="only this agent, even if not found (default: "
                   "every agent found)")
    p.add_argument("--project", metavar="DIR", help="write the project-level config of DIR instead of your own")
    p.add_argument("--uninstall", action="store_true", help="undo every edit setup made and stop the uploader")
    p.add_argument("--executable", metavar="PATH", help="the ultron program the agents run (default: the one "
                   "installed beside this Python)")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")

    p = sub.add_parser("hook", help="what the agents' hooks run (reads the payload on stdin; always exits 0)",
                       description="Run one agent hook: session-start prints the hub's context block in the "
                       "agent's envelope; stop, session-end and pre-compact queue the session for upload.")
    p.set_defaults(handler=commands.hook)
    p.add_argument("agent", metavar="AGENT", help=", ".join(agent_names))
    p.add_argument("event", metavar="EVENT", help="session-start, stop, session-end or pre-compact")

    p = command("doctor", commands.doctor, "what setup installed where, and whether the hub, the hooks and the "
                "spool work")
    p.add_argument("--project", metavar="DIR", help="also check the project-level config of DIR")
    p.add_argument("--stale-minutes", type=_positive, default=30.0,
                   help="a queued session older than this is not draining (default 30)")
    p.add_argument("--no-hook", action="store_true", help="do not run the session-start hook to time it")

    spool = sub.add_parser("spool", help="sessions waiting to be uploaded by the hooks",
                           description="sessions waiting to be uploaded by the hooks")
    spool_sub = spool.add_subparsers(dest="spool_command", metavar="ACTION", required=True)
    p = spool_sub.add_parser("list", help="what waits, with each record's attempts and last error")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=commands.spool_list)
    p = spool_sub.add_parser("drain", help="upload what waits now (exit 5 if the hub failed some)")
    p.add_argument("--background", action="store_true", help=argparse.SUPPRESS)  # the hooks' detached uploader
    p.set_defaults(handler=commands.spool_drain)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["hook"] and not {"-h", "--help"} & set(args_list):
        # An agent's hook: no parser (whatever the arguments, it exits 0 and prints one envelope at most).
        from ultron.hooks import main as hook_main

        return hook_main(args_list[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:
        return int(exit.code or 0) if isinstance(exit.code, int) else USAGE
    try:
        return int(args.handler(args))
    except UltronError as error:
        if getattr(args, "json", False):
            emit_json(error.to_dict(), stream=sys.stderr)
        else:
            print(f"ultron: {error}", file=sys.stderr)
        return exit_code(error)
    except OSError as error:
        print(f"ultron: {error}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:
        return 130
