"""The learned secret-likeness score (memories/redaction/likeness): credentials named in an agent's
own words are redacted whatever their shape, ordinary technical values stay readable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from memories.redaction import likeness, redact
from memories.redaction.likeness.context import context_model
from memories.redaction.likeness.model import likeness_model

TUNE = Path(__file__).resolve().parent.parent / "data" / "secret_sentences.jsonl"

SECRETS = [
    ("The deploy failed until I set the credential super$ecret in the CI settings", "super$ecret"),
    ("The deploy failed until I set the credential d37a8b9e09642cb73cfcf4e1a9 in the CI settings",
     "d37a8b9e09642cb73cfcf4e1a9"),
    ("Auth kept returning 401; the token that finally worked was django-insecure-_du9e^cm0x!3@2kq",
     "django-insecure-_du9e^cm0x!3@2kq"),
    ("Fixed the webhook by switching the client config to d37a8b9e09642cb73cfcf4e1 and restarting",
     "d37a8b9e09642cb73cfcf4e1"),
    ("d37a8b9e09642cb73cfcf4e1 was rejected by the registry after the rotation", "d37a8b9e09642cb73cfcf4e1"),
    ("Pasted Xk29fLq0Zp3Vb7NmQw81 into the runner's settings and the job went green", "Xk29fLq0Zp3Vb7NmQw81"),
    ("mysql -u root -pS3cr3tPass! -h db.local", "S3cr3tPass!"),
    ("redis-cli -h cache.local -a yangxin123 ping", "yangxin123"),
    ('$cred = ConvertTo-SecureString "Pa55w0rd!2024" -AsPlainText -Force', "Pa55w0rd!2024"),
    ("celery broker redis://:Redis2024!@cache.example.net:6379/0 kept dropping", "Redis2024!"),
    ("2FA backup code 4038-8762 got me back into the registry account", "4038-8762"),
    ("Authenticator setup key: jeep urt6 5i6t 3lb3 wrvr ykzr", "jeep urt6 5i6t 3lb3 wrvr ykzr"),
    ("把令牌改成了 Zq8wLm2Rt5Yp 之后就好了", "Zq8wLm2Rt5Yp"),
    ("恢复码：4e9b4-4ef70 0e5c6-f8ca6，已存到密码管理器", "4e9b4-4ef70"),
    ("My KeePass master passphrase was correct-orbit-violet-quartz, changed it after the screen share",
     "correct-orbit-violet-quartz"),
]

ORDINARY = [
    "git checkout 3f2a9c1 and rebased onto 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "Request 123e4567-e89b-12d3-a456-426614174000 timed out after 30s",
    "Upgraded to 4.2.17 and set $API_KEY from the vault; <token> stays a placeholder",
    "Pinned the image to acme/worker@sha256:3f1f404cec8f31898de0d2f374a459383624924860f78793195675d785ade260",
    "gpg: key 3AA5C34371567BD2: public key imported",
    "echo aGVsbG8gZnJvbSBzdGFnaW5n | base64 -d prints 'hello from staging'",
    "The JWT header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 only decodes to alg and typ",
    "Windows returned 0x80070005 (E_ACCESSDENIED); run the installer elevated",
    "tokenizer = AutoTokenizer.from_pretrained(\"bert-base-uncased\")",
    "PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']",
    "Twilio message SM7762ee7f457d6c2e3498da055c833bd9 was undelivered with error 30007",
    "The bot authenticated with its token instead of the app id 849a34e8-19af-4227-8525-aeead2782e99",
    "SECRET_KEY={{ vault_django_secret }} is rendered by Ansible",
    "Set password: ${DB_PASSWORD} in docker-compose.yml and define the real value in .env",
    "Chrome crashed in pod web-7d9f8b6c4-x2x5z after the v1.29.3 upgrade",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_a_credential_named_in_a_sentence_is_redacted(text, secret):
    out = redact(text).text
    assert secret not in out and "<REDACTED_CREDENTIAL>" in out, out


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_technical_values_stay(text):
    assert [text[f.start : f.end] for f in likeness.find(text)] == []


@pytest.mark.parametrize("text", [
    "Set GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the example env file.",
    "Connect with postgres://<user>:<password>@<host>:5432/<db> from the runbook.",
    "export OPENAI_API_KEY=sk-...  then restart the shell.",
])
def test_a_credentials_shape_with_nothing_secret_in_it_stays(text):
    """A prefix and a filler, placeholders in a URL: whichever detector knows the shape, a stand-in."""
    assert redact(text).text == text


def test_the_score_separates_random_and_human_secrets_from_names_and_words():
    model = likeness_model()
    assert model.examples > 20000
    for secret in ("Xk29fLq0Zp3Vb7NmQw81", "P@ssw0rd", "Winter#2024", "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"):
        assert model.score(secret) >= 0.9, secret
    for ordinary in ("README.md", "getUserById", "node_modules", "en_core_web_sm", "CHANGELOG", "pytest-xdist"):
        assert model.score(ordinary) < 0.35, ordinary


def test_a_cue_makes_a_modest_score_enough_and_its_absence_asks_for_a_high_one():
    value = "hunter22x"
    score = likeness_model().score(value)
    assert likeness.STRONG_CUE_SCORE <= score < likeness.BARE_SCORE, score
    assert likeness.find(f"the password that worked was {value}")
    assert not likeness.find(f"we renamed the branch to {value} yesterday")


CONTEXT_SECRETS = [  # shapes the characters cannot tell: the clause decides
    ("signing requests with 0d4c1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d as the shared key",
     "0d4c1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d"),
    ("the Wi-Fi passphrase is maple river quantum lantern and it works on the new router",
     "maple river quantum lantern"),
    ("unlocked the disk with lantern oyster gravel mint", "lantern oyster gravel mint"),
    ("password was tiger.lemon.anchor", "tiger.lemon.anchor"),
    ("Imported the wallet from (abandon ability able absent absorb abstract absurd abuse access accident), "
     "balances match", "abandon ability able absent absorb abstract absurd abuse access accident"),
    ("the SMS verification code was 4821 9930", "4821 9930"),
    # after a strong cue that binds it, a modest clause score is enough
    ("刚收到的短信验证码 899274 五分钟就过期了", "899274"),
    ("Set the secret to maple.river.quantum.lantern and restarted the worker", "maple.river.quantum.lantern"),
    # a seed phrase written inside a sentence: the run is cut at the words of grammar around it
    ("I derived the account from witty crystal canyon muffin sandal crater marble damp shovel trumpet planet "
     "ember and got exactly the key the indexer uses",
     "witty crystal canyon muffin sandal crater marble damp shovel trumpet planet ember"),
    # curly quotes end a value as straight ones do
    ("The token was \u2018Xk29-pq81-Lm77-zz\u2019 until Friday", "Xk29-pq81-Lm77-zz"),
    # codes of four or more digits where the clause speaks of a code, a sentence's full stop after them
    ("Your one-time passcode: 318 774", "318 774"),
    ("For the shared iPad the unlock PIN is now 024681.", "024681"),
    ("The alarm panel disarms with 90317.", "90317"),
    ("机房门禁码改成 8812 了，别外传。", "8812"),
    # one word, after a cue, where the clause reads as a password's
    ("The printer's admin PIN is violet.", "violet"),
    ("Log into the lab router as admin with the password lantern.", "lantern"),
    ("路由器管理密码改成了 cobalt-river。", "cobalt-river"),
    ("The SIM's PUK is 61093385 if the phone locks again.", "61093385"),
    ("Duo pushed 584 120 and the login went through.", "584 120"),
    # openssl's key and password arguments
    ("Decrypt with openssl enc -d -aes-128-cbc -K 9b1f0c2d7e4a5b6c8d9e0f1a2b3c4d5e -in logs.enc",
     "9b1f0c2d7e4a5b6c8d9e0f1a2b3c4d5e"),
    ("openssl pkcs12 -export -in cert.pem -out bundle.p12 -passout pass:Hunter2Secret", "Hunter2Secret"),
    # words no lesson strings together, whatever the clause around them
    ("Switch the restic repository to cobweb tulip walrus marmot before Friday's handover.",
     "cobweb tulip walrus marmot"),
    ("Mounted the old share after typing lobster.walnut.pigeon.quiver at the prompt", "lobster.walnut.pigeon.quiver"),
    # a cue later in the clause names the word; Chinese connectors ("换成了") start a run
    ("The kiosk opens with pumice_lantern since we enabled the alphanumeric passcode.", "pumice_lantern"),
    ("家里的 WiFi 换成了 marmot tulip cobweb hazel，记得重连。", "marmot tulip cobweb hazel"),
]
CONTEXT_ORDINARY = [
    "the bug came from 9fceb02d0ae598e95dc970b74767f19372d61af8 which touched auth",
    "Fixed after the token expiry change; build 20240611 passed and ticket 48213977 was closed",
    "The PIN reset flow sends 6 digits; our test account uses 482913 as a fixture id",
    'aws_secret_access_key = "<AWS_SECRET_KEY>" stays as the name it is',
    'secret = keyring.get_password("ultron-hub", username)',
    '"password_reset_timeout": 259200,',
    'WWW-Authenticate: Bearer realm="api", error="invalid_token"',
    "switched the scheduler to round robin mode.",
    "the branch is feature-login-rate-limit now",
    "the job finished in 1048576 ms",
    "from django.contrib.auth.hashers import make_password",
    # numbers where a code is spoken of, and words after a cue, that are what they look like
    "The SMB server returned error code 4417 on every write.",
    "Postgres listens on 5432 and the login service on 6432.",
    "The OTP length is 6 and the code expires after 300 seconds.",
    "In 2024 the password policy moved to passphrases.",
    "The password expired on Monday, so the job failed.",
    "The token is rotated by the nightly job.",
    "[7ffcc09a754ef5094bce9801ddfbb273e2a01ffd] Use select_for_update in cluster assignment",
    "**Description** (this is what goes into the task):",
    "The dashboard ran with skip-login enabled and a cluster-admin service account behind it.",
]


@pytest.mark.parametrize(("text", "secret"), CONTEXT_SECRETS)
def test_a_value_the_characters_cannot_tell_is_redacted_where_its_clause_names_a_secret(text, secret):
    out = redact(text).text
    assert secret not in out and "<REDACTED_CREDENTIAL>" in out, out


@pytest.mark.parametrize("text", CONTEXT_ORDINARY)
def test_the_same_shapes_in_ordinary_clauses_stay(text):
    assert redact(text).text == text


def test_the_context_model_reads_the_clause_not_the_value():
    model = context_model()
    secret = "pasted VALUE into the runner settings and auth worked again"
    public = "cherry-picked VALUE onto the release branch"
    assert model.score(secret, secret.index("VALUE"), secret.index("VALUE") + 5) >= 0.7
    assert model.score(public, public.index("VALUE"), public.index("VALUE") + 5) < 0.2


def test_a_clause_of_rare_words_with_grammar_between_is_no_passphrase():
    text = "Her favourite breakfast is masala dosa with coconut chutney."
    assert "REDACTED_CREDENTIAL" not in redact(text).text


def test_a_redaction_marker_is_no_cue_for_the_word_after_it():
    """Redaction runs again over text it has already redacted (a command line read whole): the
    marker's own word ("CREDENTIAL") does not make the next word a password."""
    text = "mysql -u root -p<REDACTED_CREDENTIAL> appdb"
    assert redact(text).text == text


def test_the_written_sentences_each_hold_one_value_and_a_label():
    from memories.redaction.likeness import context

    rows = list(context.written_sentences())
    assert len(rows) >= 1500
    assert {label for _, label in rows} == {0, 1}
    assert all(sentence.count("{V}") == 1 for sentence, _ in rows)


def test_the_tuning_set_leaks_little_and_keeps_what_must_stay():
    """The labelled tuning set (tests/data/secret_sentences.jsonl, the thresholds were chosen on
    it): at most 6 % of its credentials come back, at most 10 % of its kept values are lost."""
    rows = [json.loads(line) for line in TUNE.read_text(encoding="utf-8").splitlines() if line.strip()]
    outputs = [redact(row["text"]).text for row in rows]
    secrets = [(s, out) for row, out in zip(rows, outputs, strict=True) for s in row["secrets"]]
    kept = [(v, out) for row, out in zip(rows, outputs, strict=True) for v in row["keep"]]
    leaked = sum(1 for secret, out in secrets if secret in out)
    lost = sum(1 for value, out in kept if value not in out)
    assert leaked / len(secrets) <= 0.06, leaked
    assert lost / len(kept) <= 0.10, lost


@pytest.mark.django_db
def test_a_credential_in_an_uploaded_lesson_never_comes_back_from_the_details_call(api, reader_api):
    content = "Deploy kept failing with 401 until I set the credential super$ecret in the CI settings"
    resolution = "The token that finally worked was django-insecure-_du9e^cm0x!3@2kq; commit 3f2a9c1 has the fix"
    response = api.post(reverse("memory-upload"), {"content": content, "resolution": resolution}, format="json")
    assert response.status_code == 201, response.content
    details = reader_api.post(reverse("memory-details"), {"ids": [response.json()["id"]]}, format="json")
    record = details.json()["memories"][0]
    text = record["content"] + record["resolution"]
    assert "super$ecret" not in text and "django-insecure" not in text
    assert "3f2a9c1" in text and "401" in text
