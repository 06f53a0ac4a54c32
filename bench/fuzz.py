"""API fuzzing: schemathesis over the hub's own OpenAPI schema, against a running server.

    .venv/bin/python bench/fuzz.py [--examples 100] [--seed 16] [--json]

Starts gunicorn (one worker, 4 threads) on a loopback port against a throw-away database,
stores a few memories, a cluster with its skill and an ingest job, then sends every operation
in ``/api/schema/`` generated requests — valid ones (positive) and ones that break the schema
(negative) — as a curator's token and as an ordinary agent's. Path parameters are drawn both at
random and from the stored rows, so the detail endpoints are reached past their 404. Every
response is checked: no status >= 500, the status declared for the operation, the body and
content type as declared, and every error in the API's shape ``{error, message, field?}``.

``tests/site/test_fuzz.py`` runs the same checks with a few examples per operation.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, bench_database, django_setup, print_table, progress, write_results  # noqa: E402

ERROR_KEYS = {"error", "message", "field", "details"}
# Generated requests go one at a time; a slow one (an upload embeds, an ingest segments) gets this long.
REQUEST_TIMEOUT = 120.0


def error_shape(ctx: Any, response: Any, case: Any) -> bool | None:
    """A schemathesis check: a 4xx or 5xx JSON body is the API's error object."""
    if response.status_code < 400 or not response.headers.get("Content-Type", [""])[0].startswith("application/json"):
        return None
    body = json.loads(response.content or b"null")
    problems = []
    if not isinstance(body, dict):
        problems.append("not a JSON object")
    else:
        if not isinstance(body.get("error"), str) or not body["error"]:
            problems.append("no 'error' code")
        if not isinstance(body.get("message"), str) or not body["message"]:
            problems.append("no 'message'")
        if "field" in body and not isinstance(body["field"], str):
            problems.append("'field' is not a string")
        details = body.get("details")
        if isinstance(details, dict) and set(details) - {"non_field_errors"} and not body.get("field"):
            problems.append("bad input does not name its field")
        if set(body) - ERROR_KEYS:
            problems.append(f"unexpected keys {sorted(set(body) - ERROR_KEYS)}")
    if problems:
        raise AssertionError(f"error body is not {{error, message, field}}: {', '.join(problems)}: {body!r:.300}")
    return None


def _checks() -> list:
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
            error_shape]


@dataclass
class Finding:
    check: str
    status: int
    message: str
    curl: str


@dataclass
class OperationResult:
    operation: str
    role: str
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)

    def distinct_findings(self) -> dict[tuple[str, int], Finding]:
        """One finding per (check, status): the same failure found again adds nothing."""
        first: dict[tuple[str, int], Finding] = {}
        for finding in self.findings:
            first.setdefault((finding.check, finding.status), finding)
        return first


def _failures(error: BaseException) -> list[BaseException]:
    return list(getattr(error, "exceptions", None) or [error])


def _failure_name(failure: BaseException) -> str:
    if "error body is not" in str(failure):
        return "error_shape"
    return getattr(failure, "title", None) or type(failure).__name__


def load_schema(base_url: str, token: str):
    import schemathesis

    return schemathesis.openapi.from_url(f"{base_url}/api/schema/", headers={"Authorization": f"Bearer {token}"})


def _coverage_cases(operation: Any) -> Iterator[Any]:
    """Schemathesis's coverage cases: each parameter and body field at its boundaries and just
    past them (a number one over its maximum, a string one too long, a wrong type, a missing
    required field), deterministic. Other HTTP methods on the path are left out: they are 405s,
    not this operation."""
    from schemathesis import GenerationMode

    schema = operation.schema
    config = schema.config.generation_for(operation=operation, phase="coverage")
    for case in schema.iter_coverage_cases(operation, generation_modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                                           generation_config=config):
        if case.method.upper() == operation.method.upper():
            yield case


# Values past what generators reach in a few examples: integers past PostgreSQL's bigint, numbers
# JSON cannot carry, NUL (which PostgreSQL refuses in text), very long strings, wrong types.
HOSTILE_PARAMETERS = {
    "integer": [2**63, -(2**63) - 1, 10**30, -1, "x", "1.5", ""],
    "number": ["nan", "inf", "-inf", "1e400", "x", ""],
    # 2,000 characters: gunicorn refuses a request line over 4 KB (a 414 before the hub sees it).
    "string": ["\x00", "a\x00b", "x" * 2_000, "../../../etc/passwd", "%ff", "<script>alert(1)</script>", ""],
    "boolean": ["maybe", ""],
}
HOSTILE_FIELDS = [None, True, 2**63, 10**30, -1, 1e308, "\x00", "x" * 100_000, "<script>", [], {}, [None],
                  [[["deep"]]], [{"a": 1}], [2**63]]


def _baseline_path(operation: Any, known: dict[str, Any] | None) -> dict[str, Any]:
    values = {}
    for parameter in operation.path_parameters:
        schema = parameter.definition.get("schema", {})
        values[parameter.name] = ("00000000-0000-4000-8000-000000000000" if schema.get("format") == "uuid"
                                  else 1 if schema.get("type") == "integer" else "x")
    return {**values, **(known or {})}


def _hostile_cases(operation: Any, known: dict[str, Any] | None) -> Iterator[Any]:
    """Each path and query parameter, then each top-level JSON body field, set to each hostile
    value of its kind, one at a time (the rest valid where a valid value is known)."""
    path = _baseline_path(operation, known)
    for parameter in [*operation.path_parameters, *operation.query]:
        kind = parameter.definition.get("schema", {}).get("type", "string")
        for value in HOSTILE_PARAMETERS.get(kind, HOSTILE_PARAMETERS["string"]):
            if parameter.location == "path":
                if isinstance(value, str) and "/" in value:
                    continue  # the client resolves ../ before sending: another URL, not this operation
                yield operation.Case(path_parameters={**path, parameter.name: value})
            else:
                yield operation.Case(path_parameters=path, query={parameter.name: value})
    bodies = [case.body for case in itertools.islice(_coverage_cases(operation), 200)
              if isinstance(case.body, dict) and case.media_type == "application/json"]
    if not bodies:
        return
    base = next((body for body in bodies if body), bodies[0])
    for key in dict.fromkeys(key for body in bodies for key in body):
        for value in HOSTILE_FIELDS:
            yield operation.Case(path_parameters=path, body={**base, key: value}, media_type="application/json")


def fuzz_operation(operation: Any, *, base_url: str, token: str, role: str, examples: int, seed: int,
                   coverage: int | None = None, path_parameters: dict[str, Any] | None = None) -> OperationResult:
    """Send the operation's coverage cases (the first ``coverage`` of them; all with None), the
    hostile values (``HOSTILE_PARAMETERS``, ``HOSTILE_FIELDS``), then ``examples`` generated valid (positive) and ``examples`` invalid (negative) requests — and as
    many again on real rows when ``path_parameters`` are known — recording what every check says."""
    import requests

    result = OperationResult(operation=operation.label, role=role)
    session = requests.Session()
    headers = {"Authorization": f"Bearer {token}"}
    checks = _checks()

    def send(case: Any) -> None:
        response = case.call(base_url=base_url, session=session, headers=headers, timeout=REQUEST_TIMEOUT)
        result.requests += 1
        result.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except (AssertionError, BaseExceptionGroup) as error:
            for failure in _failures(error):
                result.findings.append(Finding(
                    check=_failure_name(failure), status=response.status_code, message=str(failure).strip()[:600],
                    curl=case.as_curl_command(headers={"Authorization": "Bearer $TOKEN"})[:600]))

    # Closed at the end: a kept-alive connection holds a server thread and its database connection.
    with session:
        _generate(operation, send, examples=examples, seed=seed, coverage=coverage, path_parameters=path_parameters)
    return result


def _generate(operation: Any, send: Any, *, examples: int, seed: int, coverage: int | None,
              path_parameters: dict[str, Any] | None) -> None:
    import hypothesis
    from hypothesis import HealthCheck, Phase
    from schemathesis import GenerationMode

    for case in itertools.islice(_coverage_cases(operation), coverage):
        send(case)
    for case in _hostile_cases(operation, path_parameters):
        send(case)
    variants: list[tuple[GenerationMode, dict[str, Any] | None]] = [
        (GenerationMode.POSITIVE, None), (GenerationMode.NEGATIVE, None)]
    if path_parameters:
        variants += [(GenerationMode.POSITIVE, path_parameters), (GenerationMode.NEGATIVE, path_parameters)]
    for mode, known in variants:
        strategy = operation.as_strategy(generation_mode=mode, path_parameters=known)
        run = hypothesis.seed(seed)(hypothesis.settings(
            max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
            suppress_health_check=list(HealthCheck), print_blob=False)(hypothesis.given(case=strategy)(send)))
        try:
            run()
        except hypothesis.errors.Unsatisfiable:
            continue  # a negative mode with nothing to break (no parameters, no body)


def fuzz(*, base_url: str, tokens: dict[str, str], examples: int, seed: int, coverage: int | None = None,
         path_parameters: dict[str, Any] | None = None, log: Any = None) -> list[OperationResult]:
    """Every operation of the schema, as each role in ``tokens``."""
    schema = load_schema(base_url, next(iter(tokens.values())))  # the schema needs a token too
    results = []
    for operation in schema.get_all_operations():
        operation = operation.ok()
        names = {p.name for p in operation.path_parameters}
        known = {k: v for k, v in (path_parameters or {}).items() if k in names} or None
        if known is not None and set(known) != names:
            known = None
        for role, token in tokens.items():
            started = time.perf_counter()
            outcome = fuzz_operation(operation, base_url=base_url, token=token, role=role, examples=examples,
                                     seed=seed, coverage=coverage, path_parameters=known)
            if log:
                log(f"{operation.label:55s} {role:6s} {outcome.requests:5d} requests, "
                    f"{len(outcome.distinct_findings())} findings ({time.perf_counter() - started:.1f} s)")
            results.append(outcome)
    return results


def report(results: list[OperationResult]) -> str:
    """The findings, one block per distinct (operation, role, check, status)."""
    lines = []
    for result in results:
        for (check, status), finding in result.distinct_findings().items():
            lines.append(f"{result.operation} as {result.role}: {check} (status {status})\n"
                         f"  {finding.message[:400]}\n  {finding.curl[:400]}")
    return "\n".join(lines)


def _seed_rows(agent: Any) -> dict[str, Any]:
    """Memories on one subject (so a cluster forms), its crystallization when the cluster is
    large enough, and an ingest job: ids that reach the detail endpoints past their 404."""
    from clusters import selectors as cluster_selectors
    from clusters.services import cluster_crystallize
    from ingestion.services import files_ingest
    from memories.services import memories_upload

    fixes = ["add a healthcheck to the db service", "use depends_on with condition service_healthy",
             "retry the connection with exponential backoff", "set CONN_MAX_AGE and health checks",
             "start the web container after migrations run", "check pg_isready in the entrypoint",
             "pin the postgres image version", "log the database host on start-up"]
    memories_upload(agent=agent, items=[
        {"content": f"Django cannot reach PostgreSQL when docker compose starts the web service ({fix})",
         "resolution": fix, "tags": ["docker", "postgres"]} for fix in fixes])
    known: dict[str, Any] = {}
    clusters = list(cluster_selectors.cluster_list(min_members=1).order_by("-member_count")[:1])
    if clusters:
        known["cluster_id"] = clusters[0].pk
        version = cluster_crystallize(cluster_id=clusters[0].pk)
        if version is not None:
            known.update(slug=version.skill.slug, version=version.version)
    job, _ = files_ingest(agent=agent, files=[("notes.md", b"# Notes\n\nThe build failed; pinning setuptools fixed it.\n")])
    known["job_id"] = str(job.pk)
    return known


@contextlib.contextmanager
def _server(database_url: str) -> Iterator[str]:
    """gunicorn (one worker, 4 threads) on a free loopback port, rate limit off; its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "DATABASE_URL": database_url, "ULTRON_API_RATE": "0", "ULTRON_LOG_LEVEL": "error"}
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "ultron_site.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--threads", "4", "--timeout", "300"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/health", timeout=30).close()
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("gunicorn did not come up") from None
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=50,
                        help="generated requests per operation, role and mode (positive, negative)")
    parser.add_argument("--coverage", type=int, default=None, help="coverage cases per operation (default: all)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from django.conf import settings
    from django.db import connection

    from agents.services import agent_create, token_issue

    with bench_database():
        curator, agent = agent_create(name="fuzz-curator", staff=True), agent_create(name="fuzz-agent")
        tokens = {"curator": token_issue(agent=curator).token, "agent": token_issue(agent=agent).token}
        known = _seed_rows(agent)
        parts = urlsplit(settings.DATABASE_URL)
        database_url = urlunsplit(parts._replace(path="/" + quote(connection.settings_dict["NAME"])))
        started = time.perf_counter()
        with _server(database_url) as base:
            results = fuzz(base_url=base, tokens=tokens, examples=args.examples, seed=args.seed,
                           coverage=args.coverage, path_parameters=known, log=progress)
        seconds = time.perf_counter() - started
    _print(results, seconds, args)


def _print(results: list[OperationResult], seconds: float, args: argparse.Namespace) -> None:
    for result in results:
        statuses = " ".join(f"{status}:{n}" for status, n in sorted(result.statuses.items()))
        print(f"{result.operation:55s} {result.role:8s} {result.requests:5d}  {statuses}"
              f"{'  FINDINGS ' + str(len(result.distinct_findings())) if result.findings else ''}")
    found = report(results)
    if found:
        print("\n" + found)
    figures = {
        "operations": len({r.operation for r in results}), "requests": sum(r.requests for r in results),
        "server_errors": sum(r.server_errors for r in results),
        "schema_violations": sum(1 for r in results for f in r.findings if f.status < 500),
        "distinct_findings": sum(len(r.distinct_findings()) for r in results),
        "examples": args.examples, "seed": args.seed, "seconds": round(seconds, 1),
    }
    print_table("API fuzzing", [(key, str(value)) for key, value in figures.items()])
    write_results("fuzz", figures, as_json=args.json)


if __name__ == "__main__":
    main()
