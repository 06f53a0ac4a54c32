"""What a sentence calls a value decides over the guessing detectors, in both directions: an
identifier named as one stays readable, a credential named as one goes — whatever its shape."""

import pytest

from memories.redaction import naming, redact_many

KEPT = [
    ("The token endpoint returned a 500 for client_id 0oa1b2c3d4e5f6g7h8i9.", "0oa1b2c3d4e5f6g7h8i9"),
    ("Correlation-ID: 4bf92f3577b34da6a3ce929d0e0e4736 appears in both logs.", "4bf92f3577b34da6a3ce929d0e0e4736"),
    ("令牌过期后，trace id 0af7651916cd43dd8448eb211c80319c 对应的请求失败了。", "0af7651916cd43dd8448eb211c80319c"),
    ("密钥 ID 6b1e2f3a-9c8d-4e7f-a1b2-c3d4e5f60718 是备份使用的 KMS 密钥。", "6b1e2f3a-9c8d-4e7f-a1b2-c3d4e5f60718"),
    ("The API key name prod-ingest-2024 was revoked; its id is kid_7Hq2Lm9Xp4.", "kid_7Hq2Lm9Xp4"),
    ("Sent the refund to the receiving address bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq.",
     "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"),
    ("The peer's public key 3huoeQIpzdngDTUgFFgaUP7SwjOTq2UU0asmu/gEKUc= was missing from the server config.",
     "3huoeQIpzdngDTUgFFgaUP7SwjOTq2UU0asmu/gEKUc="),
    ("Added the WireGuard peer with PublicKey = /P3P7sTWQojBvTRjF6ed/WbICNLg/TiY5dS3YqxyE9I= to wg0.conf.",
     "/P3P7sTWQojBvTRjF6ed/WbICNLg/TiY5dS3YqxyE9I="),
    ("Deployment ID dpl_9Hq3Lm2Xp7Kc4Vb8Nz1 on Vercel is the one that broke.", "dpl_9Hq3Lm2Xp7Kc4Vb8Nz1"),
    ("The docs use AKIAIOSFODNN7EXAMPLE as the example access key id.", "AKIAIOSFODNN7EXAMPLE"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY is the documented pair's secret half.",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("The cache key 90a586c8cf3fee5287d22349406f3bed was stale after the deploy.", "90a586c8cf3fee5287d22349406f3bed"),
    ("The password is stored in the vault and rotated monthly.", "stored in the vault and rotated"),
]

REDACTED = [
    ("The session id 7Hq2Lm9Xp4Kc8Vb1Nz3Rt6Yw was copied from the browser.", "7Hq2Lm9Xp4Kc8Vb1Nz3Rt6Yw"),
    ("Vault token id hvs_9Hq3Lm2Xp7Kc4Vb8Nz1Rt6Yw2 worked for the renewal.", "hvs_9Hq3Lm2Xp7Kc4Vb8Nz1Rt6Yw2"),
    ("aliyun AccessKeyId: LTAI5t9tknG0ACEeUG5a4YIM and the OSS upload worked.", "LTAI5t9tknG0ACEeUG5a4YIM"),
    ("RAZORPAY_KEY_ID=rzp_live_MJGhiXoTHYtbb8", "rzp_live_MJGhiXoTHYtbb8"),
    ("The HMAC key 3f9a1c7e5b2d8f4a6c0e9b1d3f5a7c9e was rotated after the leak.", "3f9a1c7e5b2d8f4a6c0e9b1d3f5a7c9e"),
    ("pagerduty integration key 90a586c8cf3fee5287d22349406f3bed routes to the on-call service.",
     "90a586c8cf3fee5287d22349406f3bed"),
    ("Login worked once I typed the passphrase: purple monkey dishwasher seven.", "monkey dishwasher"),
    ("Fix: passphrase lantern nimble staple glacier unlocks ~/.ssh/id_ed25519 on the build box", "nimble staple"),
    ("The Wi-Fi password is maple orbit tulip.", "orbit tulip"),
    ("密码是 copper lantern river sleep，输入时注意空格。", "lantern river"),
    ('ssh-keygen -p -P "old horse battery" -N "new staple river glass" changed the passphrase.', "staple river"),
    ('$pw = ConvertTo-SecureString "chen520" -AsPlainText -Force fixed the binding error.', "chen520"),
    ("Fix: xfreerdp /u:jenkins /p:Autumn2026@ /v:db-stg-08.example.org got past the NLA error.", "Autumn2026@"),
    ("ldapsearch -x -D cn=admin,dc=example,dc=com -w sun123456 -b dc=example,dc=com returned the groups.", "sun123456"),
    ("Used backup code 67575411 after losing the phone; it's consumed now.", "67575411"),
    ("GitHub recovery codes for the bot account: e37b4-700fd a3bc5-2d67d f955e-0e0b5", "f955e-0e0b5"),
    ("The old Jenkins admin used Dr@gon1 as its password; found it in the init script.", "Dr@gon1"),
    ("secret key django-insecure-%*f691n*%uj3+8x5!=t5kutq0q_4m3it3b#z@!+i)74b0qjzku was missing.", "uj3+8x5"),
    ("REDIS_URL was redis://:UFTa4j!dsQ3p@mq-stg-10.corp.example.net:6379/0 but the client ignored it.", "dsQ3p"),
]


@pytest.mark.parametrize(("text", "value"), KEPT)
def test_a_value_named_an_identifier_or_a_documented_example_stays(text, value):
    [result] = redact_many([text])
    assert value in result.text, result.text


@pytest.mark.parametrize(("text", "value"), REDACTED)
def test_a_value_named_a_credential_goes_whatever_its_shape(text, value):
    [result] = redact_many([text])
    assert value not in result.text, result.text
    assert "<REDACTED_CREDENTIAL>" in result.text or "<" in result.text


def test_the_redis_host_after_a_password_stays_readable():
    [result] = redact_many(["REDIS_URL was redis://:UFTa4j!dsQ3p@mq-stg-10.corp.example.net:6379/0 today"])
    assert "mq-stg-10.corp.example.net" in result.text, result.text


def test_the_noun_is_the_nearest_word_and_modifiers_turn_it():
    text = "trace id X"
    assert naming.named_public(text, text.index("X"))
    for text in ("session id X", "the secret id X", "private key X", "the key X"):
        assert not naming.named_public(text, text.index("X")), text
    for text in ("the HMAC key X", "webhook secret: X", "密钥 X", "the password is X"):
        assert naming.named_secret(text, text.index("X")), text
    for text in ("the cache key X", "the key X", "trace id X", "the idempotency key X"):
        assert not naming.named_secret(text, text.index("X")), text


def test_only_a_whole_example_token_is_documented():
    assert naming.documented_example("AKIAIOSFODNN7EXAMPLE")
    assert not naming.documented_example("$krb5tgs$23$*sqlsvc$CORP.EXAMPLE$MSSQLSvc/db01")
    assert not naming.documented_example("EXAMPLE")
