"""Kingfisher's maintained rule catalogue as a redaction detector (memories/redaction/vendors.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memories.redaction import likeness, redact, vendors

ROOT = Path(__file__).resolve().parents[2]

# Random values in the documented shapes of vendors none of our own rules name: a prefix then
# mixed-case hex, hex glued to letters, lower-case letters and digits, or upper-case groups, which
# our entropy rule leaves alone. Generated for these tests; no vendor issued them.
ONLY_THE_CATALOGUE = [
    "sgp_0aFa64b0224323b6fAE0DBda75e6AFbe09E38E43",  # Sourcegraph access token
    "csa_fa2e593ab540f01da0f40fc9e9333ceBaAv5",  # Cloudsmith API key
    "EZTKewshvvaxtprfqoomsh56aysbmhnl07poo960gevvkj2jkc9o8u2ujl",  # EasyPost test API key
    "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",  # Hugging Face organisation token
    "A3-1ASUHI-XZOPX13HDXJ-D0XLU-10QUZ-GFK72",  # 1Password secret key
]

# Identifiers, digests and addresses: no secret detector may take them.
NOT_SECRETS = [
    "Fixed in commit 3f2c9d81e4b7a6c5d0e9f8a7b6c5d4e3f2a1b0c9, see the PR.",
    "X-Request-Id: 15fe4f88-3465-4f4c-b152-23c67fdc9b71",
    "image: python@sha256:4b3f1e2d9c8a7b6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f",
    "Traceback: File /home/ci/work/ultron-hub/memories/redaction/vendors.py, line 61",
    "See https://docs.example.com/api/v2/tokens?page=2#rotate for the rotation steps.",
]


@pytest.mark.parametrize("token", ONLY_THE_CATALOGUE)
def test_vendor_tokens_only_the_catalogue_knows_are_redacted(token, monkeypatch):
    text = f"I pasted {token} into the CI settings and the deploy went green."
    found = vendors.find(text)
    assert [text[f.start : f.end] for f in found] == [token]
    assert token not in redact(text).text
    # Without the catalogue, none of our rules takes it: among the rules, this detector is what
    # catches it (the learned secret-likeness score, which lists no vendor, is left out here).
    monkeypatch.setattr(vendors, "find", lambda text: [])
    monkeypatch.setattr(likeness, "find", lambda text, **_: [])
    assert token in redact(text).text


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_identifiers_digests_paths_and_urls_are_not_flagged(text):
    assert vendors.find(text) == []


def test_a_user_and_password_pair_is_no_identifier():
    text = "curl -u deploy:Xq7Rm2Kp9aLw https://ci.example.com/api/json"
    assert [text[f.start : f.end] for f in vendors.find(text)] == ["deploy:Xq7Rm2Kp9aLw"]


def test_offsets_are_characters_not_bytes():
    token = ONLY_THE_CATALOGUE[0]
    text = f"Clé du déploiement — 部署: {token} (collée hier)"
    assert [text[f.start : f.end] for f in vendors.find(text)] == [token]
    assert redact(text).text.count("<REDACTED_CREDENTIAL>") == 1


@pytest.mark.parametrize("text", [
    # A documentation placeholder in a real vendor's shape: the catalogue's rule matches, the stand-in rule drops it.
    "slack webhook https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    # A vendor's client id beside its name: the catalogue's rule flags it, an identifier is no secret.
    'discord_client_id = "275490457344818328"',
])
def test_what_the_catalogue_flags_but_is_no_secret_is_dropped(text):
    assert [f for f in vendors.load().scan(text) if f.visible], "the catalogue no longer flags this: pick another case"
    assert vendors.find(text) == []


def test_the_catalogue_compiles_once_at_warm_up():
    from ultron_site.warmup import preload_before_fork

    preload_before_fork()
    scanner = vendors.load()
    assert scanner is not None
    vendors.find("nothing to see here, just a sentence")
    assert vendors.load() is scanner


def test_the_catalogue_makes_no_network_call_and_logs_no_secret():
    """A fresh process with every TCP/UDP connection refused: compiling and scanning attempt none,
    and nothing of the secret reaches its output."""
    token = ONLY_THE_CATALOGUE[0]
    script = rf"""
import socket
attempts = []
real_connect = socket.socket.connect
def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        attempts.append(address)
        raise OSError("network disabled in this test")
    return real_connect(self, address)
socket.socket.connect = connect
from memories.redaction import vendors
found = vendors.find("the new one is {token} and the old one is gone")
print("FOUND", len(found), "ATTEMPTS", attempts)
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "FOUND 1 ATTEMPTS []" in result.stdout, result.stdout + result.stderr[-2000:]
    assert token not in result.stdout + result.stderr
