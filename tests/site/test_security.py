"""Authentication and authorisation across the whole API, found by walking the URL patterns (a
new endpoint is covered without editing this file): every operation but health refuses a
missing, malformed, unknown, revoked or expired token; a non-staff token cannot reach staff
operations, archived memories, another agent's name or a server path; no answer carries an
embedding."""

from __future__ import annotations

import uuid
from datetime import timedelta
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from agents.models import ApiToken
from agents.services import agent_create, token_issue, token_revoke
from memories.models import Memory, Status
from memories.services import memory_upload

pytestmark = pytest.mark.django_db

PUBLIC = {"health"}
# A fixed id: parallel test workers must collect the same test names.
SAMPLE_UUID = str(uuid.uuid5(uuid.NAMESPACE_URL, "ultron-hub-test"))
SAMPLE_ARGS = {"uuid": lambda: SAMPLE_UUID, "int": lambda: "1", "str": lambda: "some-skill",
               "path": lambda: "x", "slug": lambda: "some-skill"}
METHODS = ("get", "post", "put", "patch", "delete")


def _api_operations() -> list[tuple[str, str, str]]:
    """(name, path, method) for every operation under /api/, from the URL resolver."""
    found: list[tuple[str, str, str]] = []

    def walk(patterns, prefix: str) -> None:
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, route)
            elif isinstance(entry, URLPattern) and route.startswith("api/"):
                view = getattr(entry.callback, "view_class", None) or getattr(entry.callback, "cls", None)
                for method in METHODS:
                    if view is not None and hasattr(view, method):
                        found.append((entry.name or route, "/" + _fill(route), method))

    walk(get_resolver().url_patterns, "")
    return found


def _fill(route: str) -> str:
    import re

    return re.sub(r"<(?:(\w+):)?\w+>", lambda m: SAMPLE_ARGS.get(m.group(1) or "str", SAMPLE_ARGS["str"])(), route)


OPERATIONS = _api_operations()


def test_the_walk_finds_the_api():
    names = {name for name, _, _ in OPERATIONS}
    assert {"memory-upload", "memory-search", "ingest", "cluster-list", "skill-detail", "trajectory-export",
            "context", "health"} <= names, names


def _bad_credentials(agent) -> dict[str, str]:
    revoked = token_issue(agent=agent)
    token_revoke(token=ApiToken.objects.get(prefix=revoked.token.split("_")[1]))
    expired = token_issue(agent=agent, lifetime=timedelta(days=1))
    ApiToken.objects.filter(prefix=expired.token.split("_")[1]).update(expires_at=timezone.now() - timedelta(seconds=1))
    valid = token_issue(agent=agent).token
    return {
        "missing": "",
        "malformed": "Bearer not-a-token",
        "empty bearer": "Bearer ",
        "basic scheme": "Basic YWRtaW46YWRtaW4=",
        "unknown": "Bearer ult_0123456789ab_" + "x" * 43,
        "wrong secret": "Bearer " + valid[: valid.rindex("_") + 1] + "y" * 43,
        "revoked": f"Bearer {revoked.token}",
        "expired": f"Bearer {expired.token}",
    }


@pytest.mark.parametrize("name,path,method", [op for op in OPERATIONS if op[0] not in PUBLIC],
                         ids=[f"{m.upper()} {p}" for n, p, m in OPERATIONS if n not in PUBLIC])
def test_every_operation_refuses_bad_tokens(name, path, method):
    agent = agent_create(name="locked-out", staff=True)  # staff: no operation is refused for rights instead
    for label, header in _bad_credentials(agent).items():
        client = APIClient()
        if header:
            client.credentials(HTTP_AUTHORIZATION=header)
        response = getattr(client, method)(path, {}, format="json")
        assert response.status_code == 401, f"{method.upper()} {path} with a {label} token: {response.status_code}"
        if name != "schema":  # the schema view answers in its own format (YAML), the error too
            assert response.json()["error"] in ("not_authenticated", "authentication_failed"), label
        assert response.headers.get("WWW-Authenticate") == "Bearer", label


def test_an_expired_token_says_so_and_a_live_one_works(settings):
    agent = agent_create(name="short-lived")
    issued = token_issue(agent=agent, lifetime=timedelta(hours=1))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.token}")
    assert client.get(reverse("memory-stats")).status_code == 200
    ApiToken.objects.filter(agent=agent).update(expires_at=timezone.now() - timedelta(minutes=1))
    response = client.get(reverse("memory-stats"))
    assert response.status_code == 401 and "expired" in response.json()["message"].lower()


def test_create_agent_sets_expiry_from_the_option_or_the_setting(settings):
    call_command("create_agent", "temp-bot", "--expires-days", "7", stdout=StringIO(), stderr=StringIO())
    token = ApiToken.objects.get(agent__name="temp-bot")
    assert timedelta(days=6, hours=23) < token.expires_at - timezone.now() <= timedelta(days=7)
    settings.ULTRON_TOKEN_DAYS = 30
    call_command("create_agent", "month-bot", stdout=StringIO(), stderr=StringIO())
    assert ApiToken.objects.get(agent__name="month-bot").expires_at > timezone.now() + timedelta(days=29)
    settings.ULTRON_TOKEN_DAYS = 0
    call_command("create_agent", "forever-bot", stdout=StringIO(), stderr=StringIO())
    assert ApiToken.objects.get(agent__name="forever-bot").expires_at is None
    with pytest.raises(CommandError, match="0 \\(never expires\\) or more"):
        call_command("create_agent", "bad-bot", "--expires-days", "-1", stdout=StringIO(), stderr=StringIO())


def test_unknown_and_known_prefixes_are_checked_the_same_way(monkeypatch):
    """The secret is hashed and compared with hmac.compare_digest whether or not the prefix
    exists, so the time taken does not reveal which prefixes are real."""
    import agents.auth as auth

    compared: list[tuple[str, str]] = []
    real = auth.hmac.compare_digest
    monkeypatch.setattr(auth.hmac, "compare_digest", lambda a, b: compared.append((a, b)) or real(a, b))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer ult_0123456789ab_" + "x" * 43)
    assert client.get(reverse("memory-stats")).status_code == 401
    assert len(compared) == 1 and len(compared[0][1]) == 64


STAFF_ONLY = [
    ("get", "trajectory-export", {}, None),
    ("post", "cluster-crystallize", {"cluster_id": 1}, {}),
    ("post", "skill-publish", {"slug": "some-skill", "version": 1}, {}),
]


@pytest.mark.parametrize("method,name,kwargs,body", STAFF_ONLY, ids=[s[1] for s in STAFF_ONLY])
def test_staff_operations_refuse_an_ordinary_agent(api, method, name, kwargs, body):
    response = getattr(api, method)(reverse(name, kwargs=kwargs), body, format="json")
    assert response.status_code == 403, response.content
    assert response.json()["error"] == "permission_denied"


def test_an_ordinary_agent_cannot_list_archived_memories_or_act_for_another(api, agent, tmp_path, settings):
    archived = memory_upload(content="Old advice: pin setuptools below 58 for legacy builds", agent=agent).memory
    Memory.objects.filter(pk=archived.pk).update(status=Status.ARCHIVED)
    response = api.get(reverse("memory-list"), {"status": "archived"})
    assert response.status_code in (400, 403) and response.json()["field"] == "status", response.content
    agent_create(name="someone-else")
    session = SimpleUploadedFile("a.jsonl", b'{"type":"user","message":{"role":"user","content":"hi"}}\n')
    files = {"files": session, "agent": "someone-else"}
    response = api.post(reverse("ingest"), files, format="multipart")
    assert response.status_code == 403 and "another agent" in response.json()["message"], response.content
    # server paths: off unless configured, and never outside the configured roots
    response = api.post(reverse("ingest"), {"paths": ["/etc/passwd"]}, format="json")
    assert response.status_code == 403
    settings.ULTRON_INGEST_ROOTS = [str(tmp_path)]
    for hostile in ["/etc/passwd", f"{tmp_path}/../../etc/passwd", "~/.ssh/id_rsa", "/proc/self/environ"]:
        response = api.post(reverse("ingest"), {"paths": [hostile]}, format="json")
        body = response.json()
        assert response.status_code in (202, 400, 403), (hostile, body)
        if response.status_code == 202:
            assert body["files"][0]["status"] == "rejected", (hostile, body)
        assert "root:" not in response.content.decode()


def test_no_answer_carries_an_embedding(api, curator_api, agent):
    memory = memory_upload(content="Set PGCONNECT_TIMEOUT when the database host is slow to answer",
                           agent=agent).memory
    answers = [
        api.post(reverse("memory-search"), {"query": "database connect timeout"}, format="json"),
        api.post(reverse("memory-details"), {"ids": [str(memory.pk)]}, format="json"),
        api.get(reverse("memory-list")),
        curator_api.get(reverse("memory-list"), {"status": "archived"}),
        api.post(reverse("context"), {"query": "database timeout"}, format="json"),
        api.get(reverse("memory-stats")),
    ]
    for response in answers:
        assert response.status_code < 400, response.content
        assert not _vectors(response.json()), response.request["PATH_INFO"]


def _vectors(data) -> list:
    """Every list of 32 or more numbers anywhere in a JSON answer (an embedding would be one)."""
    if isinstance(data, dict):
        return [v for value in data.values() for v in _vectors(value)]
    if isinstance(data, list):
        if len(data) >= 32 and all(isinstance(x, (int, float)) for x in data):
            return [data]
        return [v for value in data for v in _vectors(value)]
    return []
