"""The sentences the context model learns from: how people write around a credential, and around
a public value of the same shape, composed from templates written for this model (not taken from a
test set) and the values around the shipped lessons' own tokens.

A template holds ``{V}`` where the value stands and slots filled at random: ``{S}`` a noun that
names a secret, ``{P}`` a noun that names a public value, ``{SYS}`` a system, ``{X}`` a thing in
general. Both sides share most of their words ("set", "the", "to", "in the CI settings"), so what
the model learns is which words make the difference, not which sentences it has seen.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

SECRET_NOUNS = (
    "password", "passphrase", "token", "API key", "api key", "secret", "signing key", "HMAC key", "private key",
    "client secret", "webhook secret", "access key", "secret key", "session cookie", "bearer token", "PIN",
    "recovery code", "backup code", "seed phrase", "master password", "encryption key", "license key", "OTP seed",
    "2FA secret", "TOTP secret", "shared key", "pre-shared key", "credential", "credentials", "app password",
    "deploy key", "service account key", "refresh token", "access token", "auth token", "personal access token",
    "root password", "admin password", "DB password", "vault token", "keystore password", "wifi password",
    "SMTP password", "SNMP community string", "salt", "JWT secret", "cookie secret", "mnemonic", "login",
    "passcode", "unlock code", "decryption key", "AES key", "symmetric key", "master key", "bot token",
    "verification code", "one-time code", "SMS code", "login code", "seed words", "recovery words", "wallet words",
    "recovery phrase", "secret phrase", "security answer", "door code", "alarm code", "vault password",
)
PUBLIC_NOUNS = (
    "commit", "revision", "SHA", "tag", "release", "version", "build", "image digest", "digest", "checksum",
    "file hash", "trace id", "span id", "request id", "correlation id", "job id", "run id", "pipeline", "pod",
    "container id", "node", "instance id", "snapshot", "object id", "ETag", "key fingerprint", "key id",
    "public key", "issue", "ticket", "pull request", "branch", "migration", "record id", "user id", "order id",
    "customer id", "blob", "artifact", "cache key", "block hash", "transaction hash", "UUID", "device id",
    "build number", "changeset", "merge base", "base image", "layer", "manifest digest", "event id", "message id",
    "workspace id", "project id", "tenant id", "invoice number", "test run", "lock file hash", "content hash",
)
SYSTEMS = (
    "the CI", "GitHub", "the registry", "Jenkins", "the staging cluster", "Vault", "the payment gateway", "Stripe",
    "the mail relay", "Postgres", "Redis", "the VPN", "the router", "Grafana", "Kibana", "the bastion", "S3",
    "the webhook endpoint", "the mobile app", "Sentry", "the LDAP server", "Kafka", "the build agent", "Okta",
    "the helm chart", "Terraform", "the cron job", "the deploy script", "the old laptop", "the NAS",
)
THINGS = (
    "the settings page", "the env file", "the secrets store", "the runner", "the config map", "the dashboard",
    "the CI variables", "the compose file", "the ticket", "the chat", "the wiki", "the logs", "the README",
    "the password manager", "the team vault", "the pipeline settings", "the shell history",
)
SECRET_TEMPLATES = (
    "the {S} is {V}", "the {S} was {V}", "{S}: {V}", "{S} = {V}", "our {S} for {SYS} is {V}",
    "set the {S} to {V}", "set the {S} to {V} in {X}", "rotated the {S} to {V}", "changed the {S} to {V}",
    "the new {S} is {V}", "the old {S} {V} still works", "{V} is the {S}", "{V} is the {S} for {SYS}",
    "used {V} as the {S}", "used {V} as {SYS}'s {S}", "log in with {V}", "logged in to {SYS} with {V}",
    "authenticate with {V}", "authenticated against {SYS} with {V}", "sign the payload with {V}",
    "signing requests with {V}", "HMAC the body with {V}", "encrypt the backups with {V}", "decrypt it with {V}",
    "unlock the keystore with {V}", "unlock {SYS} with {V}", "the {S} that finally worked was {V}",
    "the {S} that {SYS} accepted was {V}", "pasted {V} into {X}", "pasted the {S} {V} into {X}",
    "{SYS} rejected {V} as invalid credentials", "{V} was rejected by {SYS} after the rotation",
    "{V} got leaked in {X}", "revoke {V} today, it was in {X}", "the leaked {S} {V} must be rotated",
    "someone committed {V} to {X}", "{SYS} accepts {V} again", "the {S} for {SYS}: {V}",
    "export the {S} {V} before running the script", "{SYS} wants {V} as the {S}", "try {V}, that is the {S}",
    "I typed {V} at the prompt and it let me in", "the prompt asked for the {S} and {V} worked",
    "it only works with {V} as the {S}", "the {S} is still {V} on {SYS}", "{SYS} {S}: {V}",
    "hand the {S} {V} to the on-call", "shared the {S} {V} in {X} by mistake", "{V} — the {S} for {SYS}",
    "the {S}, {V}, expires next week", "gave the contractor {V} to get into {SYS}", "the login for {SYS} is {V}",
    "auth with {V} failed twice then passed", "the bot connects with {V}", "{SYS} is reachable with {V}",
    "keep {V} out of {X}, it grants admin", "whoever has {V} can push to {SYS}", "the {S} {V} grants write access",
    "after resetting the {S} to {V} the job went green", "the client config points at {V} for auth",
    "swap {V} for the new {S}", "store {V} in {X}, it is the {S}", "the {S} I generated is {V}",
    "{SYS} was re-keyed to {V}", "the keystore is protected by {V}", "{V} protects the {S}", "{V} guards the deploy key",
    "the backup is encrypted with {V}", "the archive is wrapped with {V}", "the table is keyed by {V}",
    "tokens are signed by {V}", "the JWTs are issued with {V} (HS256)", "{V}, which authenticates the links, moved to {X}",
    "entering {V} opened the account", "typing {V} unlocked {SYS}", "{SYS} now uses {V} as the {S}",
    "openssl enc -d -K {V} -in backup.enc", "derived the wallet from {V}", "restored the wallet from {V}",
    "the wallet words are {V}", "imported {V} into the wallet", "{SYS} only opens with {V}", "the vault opens with {V}",
    "whoever knows {V} can decrypt {X}", "lose {V} and the data is gone", "{V} decrypts the backups",
    "the HMAC over the body uses {V}", "webhooks are verified against {V}", "the cookie is signed with {V}",
    "the phone PIN was changed to {V}", "the door opens with {V}", "connect to the wifi with {V}",
    "the router accepted {V} after the reset", "I reset it to {V}", "my login is {V}", "the admin logs in with {V}",
)
PUBLIC_TEMPLATES = (
    "the {P} is {V}", "the {P} was {V}", "{P}: {V}", "{P} = {V}", "the {P} for {SYS} is {V}",
    "set the {P} to {V}", "set the {P} to {V} in {X}", "bumped the {P} to {V}", "changed the {P} to {V}",
    "the new {P} is {V}", "the old {P} {V} still builds", "{V} is the {P}", "{V} is the {P} of the failing build",
    "reverted {V}", "reverted {P} {V}", "git checkout {V}", "cherry-picked {V} onto the release branch",
    "the bug came in with {P} {V}", "bisect points at {V}", "pinned the image to {V}", "pinned {SYS} to {P} {V}",
    "the {P} {V} did not match", "deployed {V} to staging", "rolled back to {V}", "grep the logs for {V}",
    "{SYS} reported {P} {V} as failed", "{V} failed on {SYS} again", "see {P} {V} for the fix",
    "rebased onto {V}", "the fix landed in {V}", "compare {V} with the previous {P}", "{V} broke {SYS}",
    "the {P} that finally passed was {V}", "the {P} that {SYS} built was {V}", "pasted the {P} {V} into {X}",
    "{SYS} rejected {P} {V} as malformed", "{V} was skipped by {SYS} after the rebase", "look up {V} in {X}",
    "the stale {P} {V} must be cleaned up", "someone merged {V} without review", "{SYS} rebuilt {V} overnight",
    "the {P} for {SYS}: {V}", "tag {V} before running the script", "{SYS} wants {V} as the {P}",
    "try {V}, that is the last good {P}", "the {P} is still {V} on {SYS}", "{SYS} {P}: {V}", "{V} — the {P} of {SYS}",
    "the {P}, {V}, was garbage collected", "the trace shows {V} as the slow span", "the request {V} timed out",
    "the job {V} ran out of memory", "the migration {V} is not applied", "the cache was keyed on {V}",
    "the checksum of the tarball is {V}", "blame shows {V} touched this line", "the hash {V} changed after the upgrade",
    "squashed {V} into the previous commit", "the {P} {V} belongs to the mobile team", "verify the {P} {V} on download",
    "the key fingerprint {V} matches the one on the website", "imported the public key {V}", "the key id {V} expired",
    "the password reset ticket {V} is closed", "the token refresh job {V} failed", "the secret rotation run {V} passed",
    "the auth service {P} {V} is healthy", "the credential scanner flagged {P} {V} as clean",
    "hashed the password with argon2; the {P} is {V}", "the login page build {V} shipped", "signed release {V} is out",
    "{SYS} was moved to {V}", "the branch is protected by {P} {V}", "{V} fixed the deploy key rotation",
    "the backup job {V} finished", "the archive {V} was uploaded", "the table is partitioned by {V}",
    "the tokens endpoint returned {V} as the request id", "the links are generated by {V}", "{V}, which renders the page, moved to {X}",
    "entering {V} in the search box found the ticket", "typing {V} in the filter showed the build", "{SYS} now uses {V} as the {P}",
    "docker run --name {V} -d postgres", "derived the schema from {V}", "restored the database from {V}",
    "the container names are {V}", "imported {V} into the project", "{SYS} only builds with {V}", "the image opens with {V}",
    "the feature flag {V} is on", "lose {V} and the cache rebuilds", "{V} renders the invoices",
    "the HMAC middleware lives in {V}", "webhooks are routed to {V}", "the cookie banner ships in {V}",
    "the phone model was changed to {V}", "the namespace is {V}", "connect to the cluster with context {V}",
    "the router picked {V} after the reset", "I renamed it to {V}", "my branch is {V}", "the admin page lives at {V}",
    "heroku app {V} was scaled down", "the k8s deployment {V} rolled out", "the volume {V} is full",
    # what git prints: a commit id opening a line of history, a blame line, a bisect verdict
    "{V} Use the new retry helper in the worker", "[{V}] Fix the flaky upload test", "* {V} Merge branch 'main' into {X}",
    "{V} (HEAD -> main, origin/main) Bump the base image", "{V} is the first bad commit", "^{V} (Dana 2024-03-02) return None",
    "{V} Revert \"Use select_for_update in the {P} query\"", "commit {V}", "Merge: {V} 4f2a1bc",
)
ZH_SECRET_NOUNS = ("密码", "口令", "密钥", "令牌", "凭证", "私钥", "授权码", "助记词", "恢复码", "验证码", "访问密钥", "API 密钥")
ZH_PUBLIC_NOUNS = ("提交", "版本", "镜像摘要", "校验和", "请求 ID", "追踪 ID", "任务", "构建号", "标签", "分支", "工单", "哈希")
ZH_SECRET_TEMPLATES = (
    "{S}换成了 {V}", "由 {V} 签发的令牌", "用 {V} 解锁", "把{S}设成 {V} 之后就能登录了", "{V} 保护着私钥", "输入 {V} 才能打开",
    "{S}是{V}", "{S}是 {V}", "{S}：{V}", "把{S}改成了 {V}", "新的{S}为 {V}", "用 {V} 登录了 {SYS}", "{SYS} 的{S}是 {V}",
    "{V} 是{S}", "最后能用的{S}是 {V}", "{S}已经泄露了：{V}", "在 {X} 里填了{S} {V}", "拿 {V} 签名请求",
)
ZH_PUBLIC_TEMPLATES = (
    "{S}换成了 {V}", "由 {V} 生成的报告", "用 {V} 构建", "把{S}设成 {V} 之后就能部署了", "{V} 修复了登录页", "输入 {V} 才能搜到工单",
    "{S}是{V}", "{S}是 {V}", "{S}：{V}", "把{S}改成了 {V}", "新的{S}为 {V}", "回滚到 {V} 之后 {SYS} 正常了", "{SYS} 的{S}是 {V}",
    "{V} 是{S}", "最后通过的{S}是 {V}", "问题出在{S} {V}", "在 {X} 里搜了{S} {V}", "{V} 引入了这个问题",
)
_SLOT_RE = re.compile(r"\{(S|P|SYS|X)\}")
VALUE = "{V}"


def _fill(template: str, nouns: tuple[str, ...], rng: random.Random) -> str:
    def one(match: re.Match[str]) -> str:
        slot = match.group(1)
        return rng.choice(nouns if slot in ("S", "P") else SYSTEMS if slot == "SYS" else THINGS)

    return _SLOT_RE.sub(one, template)


_OPENERS = ("", "", "", "Fixed: ", "Note: ", "After the outage ", "Heads up, ", "Yesterday ", "FYI ", "On staging ")
_CLOSERS = ("", "", "", ".", " and it worked.", " before the deploy.", "; restart the worker after.", " (see the runbook).",
            " — took an hour to find.", ", then the 401s stopped.")


def sentences(seed: int) -> Iterator[tuple[str, int]]:
    """(sentence holding ``{V}``, label): 1 where the value is a secret, 0 where it is public."""
    rng = random.Random(seed)
    sides = ((SECRET_TEMPLATES, SECRET_NOUNS, 1), (PUBLIC_TEMPLATES, PUBLIC_NOUNS, 0),
             (ZH_SECRET_TEMPLATES, ZH_SECRET_NOUNS, 1), (ZH_PUBLIC_TEMPLATES, ZH_PUBLIC_NOUNS, 0))
    for templates, nouns, label in sides:
        for template in templates:
            for noun in nouns:  # every noun in every template, the other slots drawn at random
                text = _fill(template.replace("{S}", noun).replace("{P}", noun), nouns, rng)
                if nouns in (SECRET_NOUNS, PUBLIC_NOUNS):
                    text = rng.choice(_OPENERS) + text + rng.choice(_CLOSERS)
                yield text, label
