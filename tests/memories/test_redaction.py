from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse

from memories.redaction import analyze_many, redact, redact_many
from memories.redaction.chinese import cjk_share, id_checksum_ok
from memories.redaction.numbers import iban_ok, luhn_ok
from memories.redaction.patterns import secret_like

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SECRET_CASES = [json.loads(line) for line in (DATA / "secret_cases.jsonl").read_text().splitlines() if line.strip()]
ORDINARY_LINES = [line for line in (DATA / "ordinary_lines.txt").read_text().splitlines() if line.strip()]
# Tags that mark an identifier (kept as a tag by design) or personal data found by the NER
# model, not a secret detector's judgement.
_NOT_SECRET_TAGS = ("<UUID>", "<PERSON>", "<PHONE_NUMBER>", "<USER>", "<EMAIL_ADDRESS>")

# (text, tag that must appear); every secret below is fake but has the real format.
POSITIVES = [
    ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", "LLM_API_KEY"),
    ("OPENAI=sk-proj-Xi8tdMjHV6pmbBbwilTeT3BlbkFJ3UDnpdEwNNm6wVBpYM0o", "LLM_API_KEY"),
    ("dashscope key sk-0123456789abcdef0123456789abcdef", "LLM_API_KEY"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "GITHUB_TOKEN"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU", "GITHUB_TOKEN"),
    ("glpat-hellOworld380_testin", "GITLAB_TOKEN"),
    ("AKIAZ7Q2XKLMN3PRST4V in the env", "AWS_ACCESS_KEY"),
    ('aws_secret_access_key = "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"', "AWS_SECRET_KEY"),
    ("maps key AIzaSyA1234567890abcdefghijklmnopqrstuv", "GOOGLE_API_KEY"),
    ("xoxb-1234567890-abcdefghijkl", "SLACK_TOKEN"),
    ("sk_live_ReTllpYQYfIZu2Jnf2lAPFjD", "STRIPE_KEY"),
    ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "NPM_TOKEN"),
    ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "JWT"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----", "PRIVATE_KEY"),
    ("Authorization: Bearer abc.def.ghijklmnopqrstuv", "REDACTED_TOKEN"),
    ("postgres://app:hunter2secret@db:5432/app", "REDACTED_CREDENTIAL"),
    ("DB_PASSWORD=s3cr3t-value", "REDACTED_CREDENTIAL"),
    ('api_key: "Zx81kLmN0pQ"', "REDACTED_CREDENTIAL"),
    ("SECRET_TOKEN=Abc123xyz789", "REDACTED_CREDENTIAL"),
    # Secrets nobody wrote a rule for: named in a sentence, random anywhere, hashes, key bodies.
    ("The staging password is hunter2x, don't paste it", "REDACTED_CREDENTIAL"),
    ("数据库密码是 hunter2x，别发到群里", "REDACTED_CREDENTIAL"),
    ("I set the credential `q7Lm2VxR9tKp4WsZ8nB3cJ6h` in the CI settings", "REDACTED_CREDENTIAL"),
    ("docker login with zq8Xw3Lk2Vn7Rt5Yp1Hs9Gd4Bf6Jm0Ca and it worked", "REDACTED_CREDENTIAL"),
    ("root:$6$rounds=5000$saltsaltsalt$Q1w2E3r4T5y6U7i8O9p0AsDfGhJkLzXcVbNm:19700:0:99999:7:::", "PASSWORD_HASH"),
    ("Administrator:500:aad3b435b51404eeaad3b435b51404ee:31d6cfe0d16ae931b73c59d7e0c089c0:::", "PASSWORD_HASH"),
    ("> Q1w2E3r4T5y6U7i8O9p0AsDfGhJkLzXcVbNm\n> A1b2==\n> -----END PRIVATE KEY-----", "PRIVATE_KEY"),
    ("I found j8$k2^zq#4m)v9!xw%7t(pL3&nB6*cR1 in the old settings", "REDACTED_CREDENTIAL"),
    ("riot key RGAPI-7c9e6679-7425-40de-944b-e07fc1f90ae7 for the bot", "REDACTED_CREDENTIAL"),
    ("registry.npmjs.org/:_authToken=743b294a-cd03-11ec-9d64-0242ac120002", "REDACTED_CREDENTIAL"),
    ("the VPN password changed, it's now Kestrel-88 for everyone", "REDACTED_CREDENTIAL"),
    ("see /home/alice/project/x.py", "USER"),
    (r"C:\Users\bob\AppData\Local", "USER"),
    ("mail alice@example.org", "EMAIL_ADDRESS"),
    ("Call me at +1-415-555-2671", "PHONE_NUMBER"),
    ("card 4111 1111 1111 1111", "CREDIT_CARD"),
    ("IBAN DE89 3704 0044 0532 0130 00", "IBAN_CODE"),
    ("server 8.8.8.8 answered", "IP_ADDRESS"),
    ("the database is at 192.168.1.10:5432", "IP_ADDRESS"),
    ("ssh deploy@10.0.3.7", "IP_ADDRESS"),
    ("My SSN is 536-90-4399", "US_SSN"),
    ("Please ask Maria Garcia about it", "PERSON"),
    ("我的手机号是13812345678，请联系", "PHONE_NUMBER"),
    ("联系电话 +86 138-1234-5678", "PHONE_NUMBER"),
    ("座机 010-12345678", "PHONE_NUMBER"),
    ("身份证号 110101199003074578", "CN_RESIDENT_ID"),
]

NEGATIVES = [
    "Set max_connections=200 and restart; see the password reset docs.",
    "connect to 127.0.0.1:5432, bind 0.0.0.0, netmask 255.255.255.0, docs use 192.0.2.10",
    "build 20240315138123456 at 2024-03-15 13:45:12.138123456",
    "epoch 1712345678901 and version 1.2.3.4.5",
    "primary_key = 42 and sort_key=created_at",
    'password = "${DB_PASSWORD}" and token=$TOKEN and api_key="%s"',
    "Django raised an error inside the Kubernetes pod; Redis was fine.",
    "mail noreply@github.com for notifications",
    "the request took 1 234 ms",
    "订单号 20240315138123456789 已发货",
    # Identifiers and digests stay readable wherever they stand.
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "Fixed by commit 3f9c2d71a8e4b05c6d7e8f9a0b1c2d3e4f5a6b7c; see the blame.",
    "FROM python:3.12-slim@sha256:f0f0e6563ed27a3843adf966fc50769e55ec5624259e66be67c7add8106ce581",
    "/var/lib/docker/overlay2/8f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4/merged",
    "https://github.com/example/ultron-hub/blob/27819768829210a9fd7d45e2f98f2b34f3d379cd/memories/redaction/patterns.py",
    "The password is required; the token expired, so pass the --no-cache flag.",
    "passlib.hash.bcrypt.hash(password) and PASSWORD_HASHERS = ['Argon2PasswordHasher']",
    "The API key header is X-Api-Key; the token count is 4096.",
    "github.com/stretchr/testify v1.9.0/go.mod h1:HZ2TXARmJGZ2vOlkW5Bnz5+z1p7x8S32qbb+wJMzjNc=",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq2x7y8z9aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456 deploy@build-02",
]


@pytest.mark.parametrize(("text", "tag"), POSITIVES)
def test_each_recognizer_finds_its_kind(text, tag):
    result = redact(text)
    assert f"<{tag}>" in result.text, result.text
    assert result.counts[tag] >= 1


@pytest.mark.parametrize(("text", "tag"), POSITIVES)
def test_redacting_redacted_text_changes_nothing(text, tag):
    once = redact(text).text
    twice = redact(once)
    assert twice.text == once
    assert not twice.counts


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_technical_text_is_left_alone(text):
    assert redact(text).text == text


def test_only_the_secret_part_of_an_assignment_or_url_goes():
    assert redact("DB_PASSWORD=s3cr3t-value").text == "DB_PASSWORD=<REDACTED_CREDENTIAL>"
    assert redact("postgres://app:hunter2x@db/app").text == "postgres://<REDACTED_CREDENTIAL>@db/app"
    assert redact("/home/alice/src/app.py").text == "/home/<USER>/src/app.py"


def test_overlaps_go_to_the_strongest_finding():
    # The e-mail inside a URL credential, the digits inside an API key: one tag each.
    text = "key sk-0123456789abcdef13812345678abcdef and mail bob.smith@example.com"
    result = redact(text)
    assert result.text == "key <LLM_API_KEY> and mail <EMAIL_ADDRESS>"


def test_cjk_heavy_text_takes_the_chinese_path():
    text = "张伟的邮箱是 zhang.wei@example.cn，他的手机号码是 +86 13912345678，身份证号码是 11010119900307457X，请大家注意保密。"
    assert cjk_share(text) > 0.2
    out = redact(text).text
    assert "<EMAIL_ADDRESS>" in out and "<PHONE_NUMBER>" in out
    assert "13912345678" not in out and "zhang.wei" not in out


def test_mobile_numbers_inside_longer_digit_runs_are_not_phones():
    for text in ("流水号 1381234567890", "ts=20231113812345678", "id 913812345678"):
        assert "<PHONE_NUMBER>" not in redact(text).text, text


def test_validators():
    assert id_checksum_ok("11010519491231002X")
    assert not id_checksum_ok("110105194912310021")
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("GB82WEST12345698765432") and not iban_ok("GB82WEST12345698765433")
    assert secret_like("hunter2") is True
    assert secret_like("insert_key_here") is False
    assert secret_like("${TOKEN}") is False


def test_batch_and_single_agree():
    texts = [t for t, _ in POSITIVES[:10]] + NEGATIVES[:3] + ["", "   "]
    assert [r.text for r in redact_many(texts)] == [redact(t).text for t in texts]
    assert len(analyze_many(texts)) == len(texts)


def test_no_network_while_building_and_using_the_analyzer():
    """A fresh process counts every outgoing TCP/UDP connection attempt; there must be none."""
    script = r"""
import socket, sys, os
attempts = []
real_connect = socket.socket.connect
def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        attempts.append(address)
        raise OSError("network disabled in this test")
    return real_connect(self, address)
socket.socket.connect = connect
real_cc = socket.create_connection
def create_connection(address, *a, **k):
    attempts.append(address)
    raise OSError("network disabled in this test")
socket.create_connection = create_connection
real_gai = socket.getaddrinfo
def getaddrinfo(host, *a, **k):
    if host not in (None, "localhost", "127.0.0.1", "::1"):
        attempts.append(("dns", host))
    return real_gai(host, *a, **k)
socket.getaddrinfo = getaddrinfo
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ultron_site.settings")
import django
django.setup()
from memories.redaction import redact
out = redact("Write to jane.doe@example.co.uk or visit https://sub.example.com/x, Jane Doe said.").text
assert "<EMAIL_ADDRESS>" in out, out
print("ATTEMPTS", attempts)
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ATTEMPTS []" in result.stdout, result.stdout + result.stderr[-2000:]


# --- every entry point ----------------------------------------------------------------------

SECRET = "sk-proj-" + "Q9rZx81kLmN0pQw2E4rT6y" + "T3BlbkFJ" + "zz8xkW2mN4vB7cL1pR6tY0uI3oP5aS8dF2gH"
PERSON_EMAIL = "grace.hopper@navy.example.mil"
TAG_SECRET = "sk-0a1b2c3d4e5f60718293a4b5c6d7e8f9"  # DashScope-shaped, short enough to be a tag


def _table_texts() -> dict[str, str]:
    """Every row of every table as text, per table; binary columns decoded (a bytea column's
    ``::text`` is hex, which would hide a secret from a substring check)."""
    texts: dict[str, list[str]] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND data_type = 'bytea'"
        )
        binary = cursor.fetchall()
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT t::text FROM "{table}" t')
            texts.setdefault(table, []).extend(row[0] for row in cursor.fetchall())
        for table, column in binary:
            cursor.execute(f'SELECT encode("{column}", \'escape\') FROM "{table}" WHERE "{column}" IS NOT NULL')
            texts.setdefault(table, []).extend(row[0] for row in cursor.fetchall())
    return {table: "\n".join(rows) for table, rows in texts.items()}


def _all_table_text() -> str:
    return "\n".join(_table_texts().values())


def _session_with_a_secret() -> bytes:
    """A debugging session the offline scorer keeps and the offline extractor learns from, with
    the secret in the failing command's output and in the fix."""
    rows = [
        {"role": "user", "content": f"The deploy script fails with 401 Unauthorized; the key is {SECRET}, "
                                    f"ask {PERSON_EMAIL} if needed. Please fix it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                           "input": {"command": f"OPENAI_API_KEY={SECRET} ./deploy.sh"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                      "content": f"Error: 401 Unauthorized: invalid api key {SECRET}"}]},
        {"role": "assistant", "content": f"The key {SECRET} was revoked. The fix was to read the key from the "
                                         "vault instead of the environment; I changed deploy.sh."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash",
                                           "input": {"command": "./deploy.sh"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "Deployed successfully"}]},
        {"role": "assistant", "content": "Fixed: the deploy succeeds now."},
        {"role": "user", "content": f"great, thanks. From now on always rotate keys like {SECRET} in the vault."},
    ]
    return ("\n".join(json.dumps(row) for row in rows) + "\n").encode()


@pytest.mark.django_db
def test_a_secret_sent_through_every_entry_point_is_in_no_table_and_no_log(api, caplog, django_capture_on_commit_callbacks):
    """Memory upload (new, merged and as a batch), plain-text ingest, a session file (segmented, scored and
    extracted), search and context: the secret is in no table, the raw archive included (by
    default it keeps the redacted text), and in no log line."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from ingestion.models import RawUpload, SegmentMemory, TaskSegment
    from memories.models import Memory, Source

    caplog.set_level(logging.DEBUG)
    payload = {
        "content": f"Calls failed with 401: key {SECRET} was revoked; mail {PERSON_EMAIL}",
        "context": f"export OPENAI_API_KEY={SECRET}",
        "resolution": f"rotate {SECRET} and tell {PERSON_EMAIL}",
        "tags": ["openai", TAG_SECRET, PERSON_EMAIL],
    }
    with django_capture_on_commit_callbacks(execute=True):
        first = api.post(reverse("memory-upload"), payload, format="json")
        # a near-duplicate: its text is kept as a contribution
        second = api.post(reverse("memory-upload"), {**payload, "content": payload["content"] + " again"}, format="json")
        text = api.post(reverse("ingest-text"), {"text": f"Error: 401 Unauthorized from the billing API with key "
                                                         f"{SECRET}\nCause: the key was revoked by {PERSON_EMAIL}\n"
                                                         f"Fix: rotate {SECRET} and store it in the vault"},
                        format="json")
        batch = api.post(reverse("memory-upload"), {"memories": [
            {"content": f"Billing webhook rejected key {SECRET}", "resolution": f"page {PERSON_EMAIL}",
             "tags": [TAG_SECRET]},
            {"content": f"Staging deploy kept {SECRET} in its build log", "context": f"ask {PERSON_EMAIL}"}]},
            format="json")
        upload = SimpleUploadedFile("deploy.jsonl", _session_with_a_secret(), content_type="application/jsonl")
        session = api.post(reverse("ingest"), {"files": [upload]}, format="multipart")
    assert first.status_code == 201 and second.status_code == 200
    assert batch.status_code == 200 and batch.json()["failed"] == 0, batch.json()
    assert text.status_code == 201, text.json()
    assert session.status_code == 202 and session.json()["files"][0]["status"] == "new", session.json()
    assert Memory.objects.filter(source=Source.INGEST_TEXT).exists()
    assert TaskSegment.objects.exists() and SegmentMemory.objects.exists()
    assert Memory.objects.filter(source=Source.SEGMENT).exists()
    search = api.post(reverse("memory-search"), {"query": f"what about {SECRET}?"}, format="json")
    context = api.post(reverse("context"), {"query": f"{SECRET} {PERSON_EMAIL}"}, format="json")
    assert search.status_code == 200 and search.json()["results"], search.json()
    assert context.status_code == 200, context.json()
    details = api.post(reverse("memory-details"), {"ids": [first.json()["id"]]}, format="json")
    assert details.status_code == 200
    record = details.json()["memories"][0]
    assert record["redactions"]["LLM_API_KEY"] >= 4 and record["redactions"]["EMAIL_ADDRESS"] >= 2
    tables = _table_texts()
    # The default raw archive holds the redacted text (read from its binary column: the
    # placeholder is there, so the check reads binary columns too).
    assert RawUpload.objects.filter(redacted=True).exists() and not RawUpload.objects.filter(redacted=False).exists()
    assert "<LLM_API_KEY>" in tables[RawUpload._meta.db_table]
    everything = "\n".join(tables.values())
    for value in (SECRET, PERSON_EMAIL, TAG_SECRET):
        assert value not in everything
    assert "<LLM_API_KEY>" in everything
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert SECRET not in logged and PERSON_EMAIL not in logged
    for response in (search, context, details, text, session, batch):
        assert SECRET not in response.content.decode() and PERSON_EMAIL not in response.content.decode()


@pytest.mark.django_db
def test_secrets_never_reach_the_llm(openai_llm, agent, django_capture_on_commit_callbacks):
    from memories.services import memory_upload

    openai_llm.script('{"memory_type": "security"}', '{"summary_l0": "s", "overview_l1": "o"}')
    with django_capture_on_commit_callbacks(execute=True):
        memory_upload(content=f"leaked {SECRET} in CI logs; contact {PERSON_EMAIL}", agent=agent)
    sent = json.dumps([r["body"] for r in openai_llm.requests])
    assert openai_llm.requests and SECRET not in sent and PERSON_EMAIL not in sent


@pytest.mark.django_db
def test_tags_are_redacted_before_they_are_lower_cased(agent):
    from memories.services import memory_upload

    result = memory_upload(content="Pairing session notes on flaky tests", tags=["Grace Hopper", "CI"], agent=agent)
    assert result.memory.tags == ["<PERSON>", "ci"]


def test_every_labelled_secret_shape_is_redacted():
    """Recall first: each family of credential shapes (short passwords after a key word in any
    syntax, HTTP auth schemes, vendor prefixes, provider keys of any length, private-key bodies
    without their BEGIN line, internal addresses, licence keys, JWK members, unnamed
    high-entropy values) — every case, not a rate."""
    results = redact_many([case["line"] for case in SECRET_CASES])
    leaks = [(case["family"], case["line"], result.text) for case, result in zip(SECRET_CASES, results, strict=True)
             if case["secret"] in result.text]
    assert len(SECRET_CASES) >= 150
    assert not leaks, leaks


def test_ordinary_technical_lines_stay_readable():
    """The cost of recall, on stack traces, git output, versions, hashes, SQL and shell lines:
    no secret detector fires on them, and fewer than 5 % change at all."""
    results = redact_many(ORDINARY_LINES)
    changed = [(line, r.text) for line, r in zip(ORDINARY_LINES, results, strict=True) if r.text != line]
    secret_flags = [(line, text) for line, text in changed
                    if set(re.findall(r"<[A-Z][A-Z0-9_]*>", text)) - set(re.findall(r"<[A-Z][A-Z0-9_]*>", line))
                    - set(_NOT_SECRET_TAGS)]
    assert len(ORDINARY_LINES) >= 200
    assert not secret_flags, secret_flags
    assert len(changed) / len(ORDINARY_LINES) <= 0.03, changed


def test_technical_words_are_no_names_but_names_on_technical_lines_are():
    """The guard on the model's PERSON spans: identifiers, log labels and code stay; real names,
    also in code and in a speaker's line, still go."""
    kept = ["Login Succeeded", "Require stack:", "ETag: W/\"e137471a05afb9f27aecf46701f4058f\"",
            "    repo Spotter.Repo", "const liveSocket = new LiveSocket(\"/live\", Socket, {",
            "the user asked for reproducible builds, so I pinned every dependency.", "# Settings here from settings.py"]
    assert [r.text for r in redact_many(kept)] == kept
    named = ['author = "Grace Hopper"', "Nicole: Remember me, Mary? When I called", "Please ask Maria Garcia about it"]
    for result in redact_many(named):
        assert "<PERSON>" in result.text and "Hopper" not in result.text and "Garcia" not in result.text, result.text


@pytest.mark.django_db
def test_every_credential_family_is_kept_out_of_every_table_whatever_the_way_in(
        api, settings, django_capture_on_commit_callbacks):
    """One case of each family through each way in: a memory's fields and tags, plain-text
    ingest, and a session file (segmented, scored and extracted), with the raw archive redacted."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.ULTRON_RAW_ARCHIVE_REDACT = True
    one_per_family = list({case["family"]: case for case in SECRET_CASES}.values())
    lines = [case["line"] for case in one_per_family]
    session = "\n".join(json.dumps(row) for row in [
        {"role": "user", "content": "The deploy fails with 401, here is the config:\n" + "\n".join(lines)},
        {"role": "assistant", "content": "The credentials were rotated; put the new ones in the vault. Fixed."},
        {"role": "user", "content": "Thanks, that worked."},
    ])
    with django_capture_on_commit_callbacks(execute=True):
        for case in one_per_family:
            response = api.post(reverse("memory-upload"), {
                "content": f"Login failed until the config was fixed: {case['line']}",
                # The tag: the line when it is short (a prose secret is one only beside its cue word).
                "resolution": case["line"],
                "tags": [case["line"] if len(case["line"]) <= 60 else case["secret"][:60]]}, format="json")
            # A new memory, or one merged into an alike one (two families' lines can read alike
            # once redacted: "<PRIVATE_KEY>" lines); either way the secret must be in no table.
            assert response.status_code in (200, 201, 202), response.json()
        response = api.post(reverse("ingest-text"), {"text": "Error: 401 Unauthorized\nCause: " + "\n".join(lines)
                                                     + "\nFix: rotate the credentials"}, format="json")
        assert response.status_code == 201, response.json()
        upload = SimpleUploadedFile("run.jsonl", session.encode(), content_type="application/jsonl")
        response = api.post(reverse("ingest"), {"files": [upload]}, format="multipart")
        assert response.status_code == 202, response.json()
    from ingestion.models import RawUpload, TaskSegment

    assert TaskSegment.objects.exists() and RawUpload.objects.filter(redacted=True).count() >= 2
    everything = _all_table_text()
    leaked = [(case["family"], case["secret"]) for case in one_per_family if case["secret"] in everything]
    assert not leaked, leaked


def test_concurrent_redactions_share_one_spacy_pass(monkeypatch):
    """Requests redacting at the same moment (gunicorn threads) wait for the one spaCy pass in
    progress, then go through the model together; each gets its own findings."""
    import threading
    import time

    from memories.redaction import presidio_engine

    texts = [f"Ask Maria Gonzalez about deploy {i}, she owns the staging box" for i in range(6)]
    expected = [redact(text).text for text in texts]
    batcher = presidio_engine._spacy_pass
    real, release, calls = batcher._encode, threading.Event(), []

    def held(batch):
        calls.append(len(batch))
        if len(calls) == 1:
            release.wait(10)  # the first pass is slow: the others queue behind it
        return real(batch)

    monkeypatch.setattr(batcher, "_encode", held)
    results: dict[int, str] = {}
    first = threading.Thread(target=lambda: results.__setitem__(0, redact(texts[0]).text))
    first.start()
    deadline = time.monotonic() + 10
    while not calls and time.monotonic() < deadline:
        time.sleep(0.005)
    others = [threading.Thread(target=lambda i=i: results.__setitem__(i, redact(texts[i]).text)) for i in range(1, 6)]
    for thread in others:
        thread.start()
    while batcher.waiting() < 5 and time.monotonic() < deadline:
        time.sleep(0.005)
    release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert [results[i] for i in range(6)] == expected
    assert calls == [1, 5]


def test_each_occasion_redacts_as_its_policy_says():
    from memories.redaction.policy import POLICIES, Occasion, redact_for

    assert set(POLICIES) == set(Occasion)  # every occasion has a policy
    text = "Alice Johnson rotated the key AKIAZ7Q2XKLMN3PRST4V yesterday"
    memory, archive, hub = (redact_for(occasion, [text])[0].text
                            for occasion in (Occasion.MEMORY, Occasion.ARCHIVE, Occasion.HUB_TEXT))
    assert "AKIA" not in memory and "AKIA" not in archive and "AKIA" not in hub
    assert "Alice" not in memory and "<PERSON>" in memory
    assert "Alice Johnson" in archive  # the archive runs the pattern recognizers only
    assert "Alice Johnson" in hub  # a skill's own subjects were redacted in its memories already


def test_a_cue_and_colon_before_a_sentence_redact_the_value_not_the_article():
    """``secret: the Kibana admin password is …``: "the" starts the sentence; the password goes."""
    result = redact("secret: the Kibana admin password is kb-Adm1n!2024 and must be rotated")
    assert result.text.startswith("secret: the Kibana admin password is <") and "Adm1n" not in result.text
    assert redact("token: the one in the CI settings expired yesterday").text == (
        "token: the one in the CI settings expired yesterday")
