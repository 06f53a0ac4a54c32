"""API fuzzing: schemathesis over the hub's own OpenAPI schema, against a running server.

    .venv/bin/python bench/fuzz.py [--examples 100] [--seed 16] [--json]

Starts gunicorn (one worker, 4 threads) on a loopback port against a throw-away database,
stores a few memories, a cluster with its skill and an ingest job, then sends every operation
in ``/api/schema/`` generated requests — valid ones (positive) and ones that break the schema
(negative) — as a curator's token and as an ordinary agent's. Path parameters are drawn both at
random and from the stored rows, so the detail endpoints are reached past their 404. Every
response is checked: no status >= 500, the status declared for the operation, the body and
content type as declared, and every error in the API's shape ``{error, message, field?}``.

A second space (``FOREIGN_SPACE``) holds rows of every kind the tokens may not read, each carrying
a canary word: the requests are sent with its ids and slugs as path parameters too, and every
response must hold none of its data (``no_foreign_data``: the canary, its slugs, its ids).

``tests/site/test_fuzz.py`` runs the same checks with a few examples per operation.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
import zipfile
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


FOREIGN_SPACE = "team-a"
CANARY = "zebraquartz"  # in every text of the foreign space, nowhere else
FOREIGN_IDS_FROM = 9_100_000  # the foreign space's integer ids are at least this: far above any count


@dataclass
class ForeignData:
    """What the tokens may not read: texts (the canary, slugs, UUIDs) and integer ids."""

    strings: list[str]
    ints: set[int]

    def found(self, body: bytes, content_type: str = "", *, sent: str = "") -> list[str]:
        """What of it ``body`` shows: a string as text (a zip's files read), an integer as a JSON
        number (in a JSON body or JSON lines) or a number standing alone in text. ``sent``: the
        request itself, whose strings an answer may repeat (a 404 naming the slug asked for)."""
        if content_type.startswith("application/zip"):
            try:
                with zipfile.ZipFile(io.BytesIO(body)) as archive:
                    body = b"\n".join(name.encode() + b"\n" + archive.read(name) for name in archive.namelist())
            except zipfile.BadZipFile:
                pass
        text = body.decode("utf-8", "replace")
        lowered = text.lower()
        found = [s for s in self.strings if s.lower() in lowered and s.lower() not in sent.lower()]
        numbers = {int(n) for n in re.findall(r"(?<![\w.])\d{7,}(?![\w.])", text)}
        for chunk in [text, *text.splitlines()]:
            try:
                numbers |= _integers(json.loads(chunk))
            except ValueError:
                continue
        return found + [f"integer id {n}" for n in sorted(numbers & self.ints) if str(n) not in sent]


def _integers(value: Any) -> set[int]:
    if isinstance(value, bool):
        return set()
    if isinstance(value, int):
        return {value}
    if isinstance(value, dict):
        return set().union(*map(_integers, value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*map(_integers, value)) if value else set()
    return set()


def no_foreign_data(foreign: ForeignData):
    """A schemathesis check: the response holds no datum of a space the token cannot read."""

    def check(ctx: Any, response: Any, case: Any) -> bool | None:
        sent = json.dumps([case.path_parameters, case.query, case.body], default=str)
        content_type = (response.headers.get("Content-Type") or [""])[0]
        if found := foreign.found(response.content or b"", content_type, sent=sent):
            raise AssertionError(f"foreign data in the response: {found[:5]}")
        return None

    check.__name__ = "no_foreign_data"
    return check


ALL_CHECKS = False  # --all-checks: every check schemathesis has, as its ``--checks all``


def _checks(foreign: ForeignData | None = None) -> list:
    """The checks each response gets; with ``ALL_CHECKS`` every one schemathesis has (also that
    a request the schema allows is accepted and one it forbids refused, required headers,
    methods, auth), ours besides."""
    import schemathesis.specs.openapi.checks  # noqa: F401 - registers the OpenAPI checks
    from schemathesis.checks import CHECKS, not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = (CHECKS.get_all() if ALL_CHECKS else
              [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance])
    return [*checks, error_shape, *([no_foreign_data(foreign)] if foreign else [])]


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
    if "foreign data in the response" in str(failure):
        return "no_foreign_data"
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
                   coverage: int | None = None, path_parameters: dict[str, Any] | None = None,
                   foreign: ForeignData | None = None,
                   foreign_path_parameters: dict[str, Any] | None = None) -> OperationResult:
    """Send the operation's coverage cases (the first ``coverage`` of them; all with None), the
    hostile values (``HOSTILE_PARAMETERS``, ``HOSTILE_FIELDS``), then ``examples`` generated valid
    (positive) and ``examples`` invalid (negative) requests — as many again on real rows when
    ``path_parameters`` are known, and ``examples`` valid ones on the rows of a space the token
    cannot read (``foreign_path_parameters``) — recording what every check says (with
    ``foreign``: also that no response shows that space's data)."""
    import requests

    result = OperationResult(operation=operation.label, role=role)
    session = requests.Session()
    headers = {"Authorization": f"Bearer {token}"}
    checks = _checks(foreign)

    def send(case: Any) -> None:
        meta = getattr(case, "meta", None)
        if case.headers and "Idempotency-Key" in case.headers and meta is not None and meta.generation.mode.is_positive:
            # A client sends a new key for each logical request (the schema says so); the generator reuses
            # its few values across different bodies, which the hub rightly refuses (422, key reused).
            case.headers["Idempotency-Key"] = uuid.uuid4().hex
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
        _generate(operation, send, examples=examples, seed=seed, coverage=coverage, path_parameters=path_parameters,
                  foreign_path_parameters=foreign_path_parameters)
    return result


def _generate(operation: Any, send: Any, *, examples: int, seed: int, coverage: int | None,
              path_parameters: dict[str, Any] | None, foreign_path_parameters: dict[str, Any] | None = None) -> None:
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
    if foreign_path_parameters:
        variants.append((GenerationMode.POSITIVE, foreign_path_parameters))
    for mode, known in variants:
        strategy = operation.as_strategy(generation_mode=mode, path_parameters=known)
        run = hypothesis.seed(seed)(hypothesis.settings(
            max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
            suppress_health_check=list(HealthCheck), print_blob=False)(hypothesis.given(case=strategy)(send)))
        try:
            run()
        except hypothesis.errors.Unsatisfiable:
            continue  # a negative mode with nothing to break (no parameters, no body)


def _known(operation: Any, values: dict[str, Any] | None) -> dict[str, Any] | None:
    """``values`` for every path parameter of ``operation``, or None when some are missing."""
    names = {p.name for p in operation.path_parameters}
    known = {k: v for k, v in (values or {}).items() if k in names} or None
    return known if known is not None and set(known) == names else None


def fuzz(*, base_url: str, tokens: dict[str, str], examples: int, seed: int, coverage: int | None = None,
         path_parameters: dict[str, Any] | None = None, foreign: ForeignData | None = None,
         foreign_path_parameters: dict[str, Any] | None = None, log: Any = None) -> list[OperationResult]:
    """Every operation of the schema, as each role in ``tokens``; with ``foreign``, every response
    is also checked for the data of a space the tokens cannot read, and the operations are called
    with that space's rows (``foreign_path_parameters``) too."""
    schema = load_schema(base_url, next(iter(tokens.values())))  # the schema needs a token too
    results = []
    for operation in schema.get_all_operations():
        operation = operation.ok()
        known = _known(operation, path_parameters)
        foreign_known = _known(operation, foreign_path_parameters)
        for role, token in tokens.items():
            started = time.perf_counter()
            outcome = fuzz_operation(operation, base_url=base_url, token=token, role=role, examples=examples,
                                     seed=seed, coverage=coverage, path_parameters=known, foreign=foreign,
                                     foreign_path_parameters=foreign_known)
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


def sequences_past_every_id(minimum: int = 0) -> int:
    """Every id sequence of a space's table moved past every id any of them handed out (and to
    ``minimum`` at least): the next rows get ids no earlier row of any of those tables has.
    Returns the first of them."""
    from django.apps import apps
    from django.db import connection

    tables = sorted({m._meta.db_table for m in apps.get_models()
                     if any(f.name == "space" and f.is_relation for f in m._meta.get_fields())
                     and m._meta.pk.get_internal_type() in ("AutoField", "BigAutoField")})
    with connection.cursor() as cursor:
        cursor.execute("SELECT max(coalesce(last_value, 0)) FROM pg_sequences WHERE schemaname || '.' || sequencename"
                       " = ANY (SELECT pg_get_serial_sequence(t, 'id') FROM unnest(%s::text[]) t)", [tables])
        start = max(minimum, (cursor.fetchone()[0] or 0) + 1000)
        for table in tables:
            cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s, false)", [table, start])
    return start


def seed_foreign_space() -> tuple[ForeignData, dict[str, Any]]:
    """A space (``FOREIGN_SPACE``) with memories, a cluster with its published skill, merge
    candidates, an ingest job with its session and segments, every text carrying ``CANARY`` and
    every integer id from ``FOREIGN_IDS_FROM``; the ids afterwards move past them (rows stored
    later get ids of their own). Returns what of it no other space's token may see, and its rows
    as path parameters. Run in the hub's upkeep scope (``core.spaces.maintenance``)."""
    from django.conf import settings

    from agents.models import Role
    from agents.scoping import in_space
    from agents.services import agent_create, space_create
    from clusters.models import ClusterMember, KnowledgeCluster, Skill, SkillVersion
    from clusters.services import cluster_crystallize
    from ingestion.models import RawUpload, SessionRecord, TaskSegment
    from ingestion.services import files_ingest, session_process
    from memories.models import Memory, MemoryContribution, MergeCandidate
    from memories.services import memories_upload

    space = space_create(slug=FOREIGN_SPACE, name="Team A")
    start = sequences_past_every_id(FOREIGN_IDS_FROM)
    agent = agent_create(name=f"writer-{FOREIGN_SPACE}", spaces=[(space, Role.WRITER)])
    lessons = [
        (f"Django cannot reach PostgreSQL when the web container of {CANARY} starts", "add a healthcheck to the db service"),
        (f"Django fails to connect to PostgreSQL during docker compose up for {CANARY}",
         "use depends_on with condition service_healthy"),
        (f"the {CANARY} web service starts before postgres is ready in docker compose",
         "retry the connection with exponential backoff"),
        (f"psycopg OperationalError in {CANARY}: connection refused at container start-up",
         "wait for pg_isready in the entrypoint"),
    ]
    threshold = settings.ULTRON_CRYSTALLIZATION_THRESHOLD
    with in_space(space.pk):
        memories_upload(agent=agent, space=space, items=[
            {"content": content, "context": f"docker compose of the {CANARY} project", "resolution": fix,
             "tags": [CANARY, "docker"]} for content, fix in [*lessons, lessons[0]]])  # the last: a duplicate
        cluster = KnowledgeCluster.objects.filter(space=space).order_by("-member_count", "pk").first()
        settings.ULTRON_CRYSTALLIZATION_THRESHOLD = 3  # four memories make a skill here
        try:
            version = cluster_crystallize(cluster_id=cluster.pk)
        finally:
            settings.ULTRON_CRYSTALLIZATION_THRESHOLD = threshold
        session = (f'{{"role": "user", "content": "the {CANARY} build fails: pip cannot reach the index"}}\n'
                   f'{{"role": "assistant", "content": "The {CANARY} build container had no network; '
                   'building with --network host fixed it."}\n'
                   '{"role": "user", "content": "great, it builds now"}\n').encode()
        job, [result] = files_ingest(agent=agent, files=[(f"{CANARY}-session.jsonl", session)], space=space)
        session_process(session_id=result.session_id)
        ints = {result.session_id}
        for model in (KnowledgeCluster, ClusterMember, Skill, SkillVersion, MergeCandidate, MemoryContribution,
                      RawUpload, SessionRecord, TaskSegment):
            ints |= set(model.objects.filter(space=space).values_list("pk", flat=True))
        uuids = [str(pk) for pk in Memory.objects.filter(space=space).values_list("pk", flat=True)]
    sequences_past_every_id()
    assert version is not None and min(ints) >= start, "the foreign space needs a skill and ids of its own"
    foreign = ForeignData(strings=[CANARY, FOREIGN_SPACE, version.skill.slug, str(job.pk), *uuids], ints=ints)
    return foreign, {"cluster_id": cluster.pk, "slug": version.skill.slug, "version": version.version,
                     "job_id": str(job.pk)}


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
    parser.add_argument("--all-checks", action="store_true",
                        help="every schemathesis check (positive data accepted, negative data rejected, ...)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    global ALL_CHECKS
    ALL_CHECKS = args.all_checks
    django_setup()
    from django.conf import settings
    from django.db import connection

    from agents.services import agent_create, token_issue

    with bench_database():
        curator, agent = agent_create(name="fuzz-curator", staff=True), agent_create(name="fuzz-agent")
        tokens = {"curator": token_issue(agent=curator).token, "agent": token_issue(agent=agent).token}
        known = _seed_rows(agent)
        foreign, foreign_known = seed_foreign_space()
        parts = urlsplit(settings.DATABASE_URL)
        database_url = urlunsplit(parts._replace(path="/" + quote(connection.settings_dict["NAME"])))
        started = time.perf_counter()
        with _server(database_url) as base:
            results = fuzz(base_url=base, tokens=tokens, examples=args.examples, seed=args.seed,
                           coverage=args.coverage, path_parameters=known, foreign=foreign,
                           foreign_path_parameters=foreign_known, log=progress)
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
        "foreign_data": sum(1 for r in results for f in r.findings if f.check == "no_foreign_data"),
        "distinct_findings": sum(len(r.distinct_findings()) for r in results),
        "examples": args.examples, "seed": args.seed, "seconds": round(seconds, 1),
    }
    print_table("API fuzzing", [(key, str(value)) for key, value in figures.items()])
    write_results("fuzz", figures, as_json=args.json)


if __name__ == "__main__":
    main()
