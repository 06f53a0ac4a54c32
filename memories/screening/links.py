"""Links in a memory, against the space's allow-list (docs/flow.md#screening).

A link to a host on the list passes, and so does a link elsewhere that is only there to be read
(a team's dashboard, a ticket). A link elsewhere is held when it is what the memory asks the
reader to fetch, install, run or send to, or when the host is one attacks favour whatever the words: a raw public IP address, a tunnel, paste or request
catcher, a URL shortener, or a look-alike of an allowed host (``docs.pyth0n.org``)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator

from memories.screening.rules import HOLD, Finding, prohibited
from memories.screening.text import Folded

# Explicit schemes, and bare "www." hosts.
_URL = re.compile(r"\b(?:(?:https?|ftp|wss?|git\+https?|git\+ssh|ssh)://|www\.)[^\s<>\"'`)\]}，。；]+", re.IGNORECASE)
_HOST = re.compile(r"^(?:[a-z+]+://)?(?:[^@/\s]*@)?(\[[0-9a-f:.]+\]|[^:/?#\s]+)", re.IGNORECASE)

# Hosts that exist to receive, relay or hide traffic: a memory has no reason to send agents there.
CATCHER_HOSTS = (
    "ngrok.io", "ngrok-free.app", "ngrok.app", "ngrok.dev", "trycloudflare.com", "loca.lt", "localtunnel.me",
    "serveo.net", "localhost.run", "pipedream.net", "requestbin.com", "requestbin.net", "webhook.site",
    "hookbin.com", "beeceptor.com", "mockbin.org", "requestcatcher.com", "interact.sh", "oast.fun", "oast.pro",
    "oast.live", "oast.site", "oast.online", "oast.me", "burpcollaborator.net", "canarytokens.com", "dnslog.cn",
    "ceye.io", "pastebin.com", "paste.ee", "hastebin.com", "ghostbin.com", "transfer.sh", "file.io", "0x0.st",
    "termbin.com", "temp.sh", "bit.ly", "tinyurl.com", "t.co", "is.gd", "goo.gl", "rb.gy", "cutt.ly", "ow.ly",
    "shorturl.at", "tiny.cc", "discord.com/api/webhooks", "hooks.slack.com",
)
# What a memory asks of a link it wants used: fetch, install, run, send. (Reading documentation
# at an unknown host is marked only.)
_ACTION = re.compile(
    r"\b(?:curl|wget|iwr|irm|invoke-webrequest|fetch|download|install|pip|pip3|uv|npm|pnpm|yarn|gem|cargo|go\s+get|"
    r"apt(?:-get)?|brew|choco|winget|docker\s+pull|helm\s+repo\s+add|git\s+clone|clone|source|run|execute|exec|eval|"
    r"import|load|post|send|upload|submit|forward|report\s+to|webhook|exfil\w*|index-url|extra-index-url|registry|"
    r"mirror|proxy|replace|point\s+\w+\s+(?:at|to)|set\s+\w+\s+to|add\s+\w+\s+(?:as|to))\b"
    r"|下载|安装|运行|执行|发送|上传|提交|镜像|替换",
    re.IGNORECASE,
)

ALLOWED_DEFAULT = (
    # documentation, standards and answers
    "docs.python.org", "python.org", "djangoproject.com", "developer.mozilla.org", "mozilla.org", "w3.org",
    "whatwg.org", "ietf.org", "rfc-editor.org", "stackoverflow.com", "stackexchange.com", "serverfault.com",
    "superuser.com", "askubuntu.com", "wikipedia.org", "readthedocs.io", "readthedocs.org", "rtfd.io",
    "learn.microsoft.com", "docs.microsoft.com", "microsoft.com", "kubernetes.io", "docker.com", "postgresql.org",
    "mysql.com", "mariadb.org", "sqlite.org", "redis.io", "mongodb.com", "nginx.org", "apache.org", "gnu.org",
    "kernel.org", "debian.org", "ubuntu.com", "archlinux.org", "fedoraproject.org", "redhat.com", "rust-lang.org",
    "go.dev", "golang.org", "nodejs.org", "npmjs.com", "typescriptlang.org", "react.dev", "reactjs.org", "vuejs.org",
    "angular.dev", "angular.io", "svelte.dev", "nextjs.org", "vitejs.dev", "webpack.js.org", "babeljs.io",
    "eslint.org", "prettier.io", "jestjs.io", "vitest.dev", "playwright.dev", "pytest.org", "numpy.org",
    "pandas.pydata.org", "scipy.org", "scikit-learn.org", "pytorch.org", "tensorflow.org", "huggingface.co",
    "jupyter.org", "oracle.com", "java.com", "openjdk.org", "gradle.org", "maven.apache.org", "spring.io",
    "kotlinlang.org", "swift.org", "developer.apple.com", "android.com", "developer.android.com", "flutter.dev",
    "dart.dev", "ruby-lang.org", "rubyonrails.org", "rubygems.org", "php.net", "laravel.com", "getcomposer.org",
    "packagist.org", "dotnet.microsoft.com", "nuget.org", "aws.amazon.com", "docs.aws.amazon.com",
    "cloud.google.com", "developers.google.com", "firebase.google.com", "azure.microsoft.com", "terraform.io",
    "hashicorp.com", "ansible.com", "helm.sh", "prometheus.io", "grafana.com", "elastic.co", "kafka.apache.org",
    "openssl.org", "letsencrypt.org", "owasp.org", "cve.org", "mitre.org", "nist.gov", "semver.org",
    "json-schema.org", "yaml.org", "graphql.org", "swagger.io", "openapis.org", "cppreference.com",
    "isocpp.org", "llvm.org", "gcc.gnu.org", "cmake.org", "mesonbuild.com", "bazel.build", "nixos.org",
    "man7.org", "die.net", "tldp.org", "git-scm.com", "atlassian.com", "jetbrains.com", "visualstudio.com",
    "code.visualstudio.com", "anthropic.com", "openai.com", "platform.openai.com", "aliyun.com",
    "alibabacloud.com", "mdn.io", "caniuse.com", "regex101.com", "sentry.io", "datadoghq.com", "cloudflare.com",
    "vercel.com", "netlify.com", "heroku.com", "digitalocean.com", "fastapi.tiangolo.com", "tiangolo.com",
    "pydantic.dev", "sqlalchemy.org", "celeryq.dev", "palletsprojects.com", "astral.sh", "python-poetry.org",
    "pypa.io", "peps.python.org", "mypy-lang.org", "mypy.readthedocs.io",
    # code and packages
    "github.com", "raw.githubusercontent.com", "gist.github.com", "githubusercontent.com", "github.io",
    "gitlab.com", "bitbucket.org", "pypi.org", "files.pythonhosted.org", "pythonhosted.org", "npmjs.org",
    "registry.npmjs.org", "yarnpkg.com", "crates.io", "docs.rs", "pkg.go.dev", "proxy.golang.org", "hub.docker.com",
    "docker.io", "ghcr.io", "quay.io", "gcr.io", "conda.io", "anaconda.org", "anaconda.com", "conda-forge.org",
    "mvnrepository.com", "repo1.maven.org", "search.maven.org", "pub.dev", "cocoapods.org", "hex.pm",
    "hexdocs.pm", "elixir-lang.org", "haskell.org", "hackage.haskell.org", "cran.r-project.org", "r-project.org",
    "cpan.org", "metacpan.org", "sourceforge.net", "launchpad.net", "snapcraft.io", "flathub.org", "brew.sh",
    "formulae.brew.sh", "chocolatey.org",
    # the official installers agents meet: "curl … | sh" from these is documented, not an attack
    "sh.rustup.rs", "rustup.rs", "get.docker.com", "deno.land", "deno.com", "bun.sh", "ollama.com", "nvm.sh",
    "install.python-poetry.org", "get.helm.sh", "get.k3s.io", "k3s.io", "sdkman.io", "get.sdkman.io",
    "pyenv.run", "starship.rs", "fnm.vercel.app", "volta.sh", "get.pnpm.io", "pnpm.io", "install.determinate.systems",
    # package mirrors and repositories teams use in place of the main registries
    "tsinghua.edu.cn", "ustc.edu.cn", "npmmirror.com", "goproxy.cn", "goproxy.io", "huaweicloud.com",
    "tencent.com", "bitnami.com", "artifacthub.io", "k8s.io", "nodesource.com", "yarnpkg.com", "jsdelivr.net",
    "unpkg.com", "cdnjs.cloudflare.com", "maven.google.com", "dl.google.com", "gradle.org", "jitpack.io",
    "packages.microsoft.com", "download.visualstudio.microsoft.com", "apt.llvm.org", "ppa.launchpadcontent.net",
    "golang.google.cn", "download.pytorch.org", "developer.download.nvidia.com", "nvidia.com", "repo.anaconda.com",
    # local addresses are the reader's own machine
    "localhost",
)


def host_of(url: str) -> str:
    found = _HOST.match(url)
    host = (found.group(1) if found else url).strip("[]").rstrip(".").lower()
    return host


def _registered(host: str, allowed: str) -> bool:
    allowed = allowed.lstrip(".").lower()
    return host == allowed or host.endswith("." + allowed)


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _skeleton(name: str) -> str:
    """A host's first label as it looks: digits and doubled letters read as the letters they imitate."""
    return name.translate(str.maketrans("0134578", "oleastb")).replace("rn", "m").replace("vv", "w").replace("-", "")


def _distance(a: str, b: str) -> int:
    """Levenshtein distance (short strings)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _lookalike(host: str, allowed: Iterable[str]) -> str | None:
    """The allowed host that ``host`` imitates (one or two characters off, or the same once
    digits read as letters), or None."""
    labels = host.split(".")
    if len(labels) < 2:
        return None
    name = labels[-2] if len(labels[-2]) > 3 or len(labels) < 3 else labels[-3]
    for candidate in allowed:
        parts = candidate.lstrip(".").split(".")
        if len(parts) < 2:
            continue
        other = parts[-2]
        if len(other) < 5 or other == name or (abs(len(other) - len(name)) > 2 and other not in name):
            continue
        if _skeleton(name) == _skeleton(other) or (len(name) >= 5 and _distance(name, other) <= (1 if len(other) < 8 else 2)):
            return candidate
        # The allowed name joined to another word: "github-com.io", "pypi-mirror.net", "docs-python.org"
        # (not "githubstatus.com": a name that merely contains a brand is somebody's own)
        if len(other) >= 5 and re.search(rf"(?:^|-){re.escape(other)}(?:-|$)", name) and not _registered(host, candidate):
            return candidate
    return None


def _catcher(host: str, url: str) -> bool:
    for catcher in CATCHER_HOSTS:
        name, _, path = catcher.partition("/")
        if _registered(host, name) and (not path or f"/{path}" in url):
            return True
    return False


_LOCAL_NETS = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"))


def allowed_checker(hosts: Iterable[str]) -> Callable[[str], bool]:
    listed = tuple(h.lstrip(".").lower() for h in hosts if h)

    def allowed(host: str) -> bool:
        address = _ip(host)
        if address is not None:  # the reader's own machine or network; documentation ranges are not
            return address.is_loopback or address.is_link_local or any(address in net for net in _LOCAL_NETS)
        if host.endswith((".local", ".localhost", ".internal", ".lan", ".home.arpa", ".corp", ".intranet",
                          ".localdomain", ".home")) or "." not in host:
            return True  # the reader's own network: nothing an attacker on the internet serves
        return any(_registered(host, entry) for entry in listed)

    return allowed


def link_findings(field: str, folded: Folded, allowed: Callable[[str], bool], listed: Iterable[str]) -> Iterator[Finding]:
    text = folded.text
    listed = tuple(listed)
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?")
        host = host_of(url)
        start, end = folded.span(match.start(), match.start() + len(url))
        stored = folded.original[start:end]
        if _catcher(host, url.lower()):
            yield Finding("link", f"links to {host}, a tunnel, paste or request-catching service", field, start, end, stored, HOLD)
            continue
        if allowed(host):
            continue
        imitated = _lookalike(host, listed)
        if imitated:
            yield Finding("link", f"links to {host}, which looks like {imitated}", field, start, end, stored, HOLD)
            continue
        if _ip(host) is not None:
            yield Finding("link", f"links to a public IP address ({host})", field, start, end, stored, HOLD)
            continue
        # What the sentence around the link asks of it (the words before it, on its line).
        line_start = max(text.rfind("\n", 0, match.start()) + 1, match.start() - 160)
        before = text[line_start:match.start()]
        after = text[match.start() + len(url):match.start() + len(url) + 40]
        asked = _ACTION.search(before) or re.match(r"\s*\|\s*\w", after)
        if asked and not prohibited(text, match.start()):
            yield Finding("link", f"asks the reader to fetch from or send to {host}, outside this space's allowed hosts",
                          field, start, end, stored, HOLD)
        # A link to read (a team's dashboard, a ticket, a blog) is not a finding: the hosts of a
        # team's own tools cannot all be listed, and a false flag on each would teach people to
        # approve without reading.
