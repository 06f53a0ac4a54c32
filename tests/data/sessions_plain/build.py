#!/usr/bin/env python3
"""Build (or check) the plain-shape labelled session set.

    python build.py           # regenerate every .jsonl and labels.json, then validate
    python build.py --check   # validate the committed files only (and that they are up to date)

Stdlib only and deterministic: ids, uuids and timestamps come from a random.Random seeded by
the session's base name, so v1/v2 pairs share the same prefix byte for byte.

The conversations are written once in a small neutral script (user / say / think / sh / read /
edit / write) and rendered into one of three row formats:

* ``openai``      OpenAI chat messages (``tool_calls`` + ``tool`` rows)
* ``anthropic``   Anthropic Messages rows with content blocks (``tool_use`` / ``tool_result``)
* ``claude_code`` Claude Code project-export envelopes, one assistant block per row, with
                  ``file-history-snapshot``, ``progress`` and ``system`` noise rows

The Session script, the renderers and the --check validation live in ../sessions_kit.py (shared
with ../sessions_plain_heldout/build.py); this file holds only the conversations and labels.

See README.md for what the labels mean.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/data, for sessions_kit

from sessions_kit import Session, SessionList, main, pair  # noqa: E402

# --------------------------------------------------------------------------------------------
# Sessions: OpenAI chat
# --------------------------------------------------------------------------------------------

SYS_CHAT = "You are a helpful assistant for software engineers. Be concise and practical."
SYS_AGENT = ("You are a coding agent working in the user's repository. You can run shell commands with "
             "run_shell and read or change files with read_file, edit_file and write_file. Prefer small, "
             "reversible changes and explain what you did.")

NOT_CONFIRMED = "the user said the fix did not work and the session ends unresolved"


def oa01() -> Session:
    s = Session("oa01_pg_too_many_connections", "openai", system=SYS_CHAT).shape("A")
    s.user("""
        Since we scaled the orders service to 6 replicas (gunicorn, 4 workers each) we get this in bursts:

        sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at "10.0.3.12", port 5432 failed: FATAL:  too many connections for role "orders_app"

        With 2 replicas it never happened. Postgres is a managed instance, the role has CONNECTION LIMIT 100. What's going on?
    """)
    s.say("""
        Every gunicorn worker is its own process with its own SQLAlchemy engine, so each one keeps its own connection pool. With the defaults (`pool_size=5`, `max_overflow=10`) a single worker can open up to 15 connections, and 6 replicas × 4 workers × 15 = 360, far above the role's limit of 100. At 2 replicas the worst case was 120, which you rarely reached.

        To fix it:

        1. Size the pool per worker so the total stays under the limit, e.g. `pool_size=3, max_overflow=0` → 6 × 4 × 3 = 72 connections.
        2. Add `pool_pre_ping=True` so dead connections are replaced instead of raising.
        3. If you expect to scale further, put PgBouncer in transaction mode in front of Postgres and point the app at it; then the app-side pools can stay small and the database sees a fixed number of server connections.

        ```python
        engine = create_engine(
            DATABASE_URL,
            pool_size=3,
            max_overflow=0,
            pool_pre_ping=True,
        )
        ```
    """)
    s.user("""
        Deployed with pool_size=3 and max_overflow=0. Ran the load test at 500 rps for 10 minutes: no connection errors at all, and pg_stat_activity tops out at 72 for orders_app. Great, that fixed it.
    """)
    s.say("""
        Good to hear. Keep the budget in mind when you add replicas or workers: replicas × workers × (pool_size + max_overflow) has to stay below the role limit, and PgBouncer is the next step once it doesn't.
    """)
    s.expect("error", ["pool_size", "max_overflow", "pgbouncer"], ["too many connections"])
    s.forbid("preference", ["replicas"], "'it never happened' describes the past, it is not a rule")
    return s


def oa02() -> Session:
    s = Session("oa02_cors_credentials", "openai").shape("A")
    s.user("""
        Vite dev server on http://localhost:5173 calls our Flask API on :8000 with `credentials: 'include'` and Chrome blocks it:

        Access to fetch at 'http://localhost:8000/api/session' from origin 'http://localhost:5173' has been blocked by CORS policy: Response to preflight request doesn't pass access control check: The value of the 'Access-Control-Allow-Origin' header in the response must not be the wildcard '*' when the request's credentials mode is 'include'.

        I add `Access-Control-Allow-Origin: *` in an after_request hook, so the header IS there. ???
    """)
    s.say("""
        The header is there, but a wildcard is not allowed for credentialed requests. When the browser sends cookies (`credentials: 'include'`), the response has to name the exact origin and also send `Access-Control-Allow-Credentials: true`; the preflight additionally needs `Access-Control-Allow-Headers` for `Content-Type`.

        Rather than maintaining that by hand, drop the after_request hook and let flask-cors do it:

        ```python
        from flask_cors import CORS

        CORS(app, origins=["http://localhost:5173"], supports_credentials=True)
        ```

        `pip install flask-cors` first. Keep the origin list in config so production can list its real frontend domain.
    """)
    s.user("""
        Removed my hook, added flask-cors with the explicit origin and supports_credentials=True. Login goes through and the session cookie is set. That did the trick 👍
    """)
    s.say("Glad it works. Remember to add the production origin to the list before deploying.")
    s.expect("error", ["flask-cors", "flask_cors", "supports_credentials"],
             ["access-control-allow-origin", "wildcard", "cors"])
    return s


def oa03() -> Session:
    s = Session("oa03_go_toolchain", "openai", system=SYS_AGENT).shape("B")
    s.user("I pulled main and `go build ./...` doesn't work anymore. Can you fix my setup?")
    s.sh("go build ./...", "go: go.mod requires go >= 1.22.0 (running go 1.21.6; GOTOOLCHAIN=local)", 1)
    s.sh("go version && go env GOTOOLCHAIN && cat $(go env GOROOT)/go.env | grep TOOLCHAIN && head -5 go.mod", """
        go version go1.21.6 linux/amd64
        local
        GOTOOLCHAIN=local
        module github.com/acme/ledger

        go 1.22.0

        toolchain go1.22.5
    """)
    s.say("""
        go.mod now asks for Go 1.22.0 (and names go1.22.5 as the toolchain), but the installed Go is 1.21.6. Normally Go 1.21+ downloads the requested toolchain by itself, but the distro package ships `GOTOOLCHAIN=local` in `$GOROOT/go.env`, which forbids that. A user setting from `go env -w` overrides go.env, so I'll set it to `auto` and retry.
    """)
    s.sh("go env -w GOTOOLCHAIN=auto && go version", """
        go: downloading go1.22.5 (linux/amd64)
        go version go1.22.5 linux/amd64
    """)
    s.sh("go build ./... && go test ./... 2>&1 | tail -6", """
        ok  	github.com/acme/ledger/internal/accounts	0.214s
        ok  	github.com/acme/ledger/internal/journal	0.388s
        ok  	github.com/acme/ledger/internal/money	0.019s
        ?   	github.com/acme/ledger/cmd/ledgerd	[no test files]
        ok  	github.com/acme/ledger/internal/report	0.142s
        ok  	github.com/acme/ledger/internal/store	1.071s
    """)
    s.say("""
        Fixed. `go env -w GOTOOLCHAIN=auto` lets the local Go 1.21.6 fetch the go1.22.5 toolchain that go.mod asks for; `go build ./...` succeeds and all tests pass. The setting lives in `~/.config/go/env`, so it sticks for future shells.
    """)
    s.expect("error", ["gotoolchain"], ["go.mod requires go", "requires go >= 1.22"])
    return s


def oa04() -> Session:
    s = Session("oa04_pnpm_preference", "openai", system=SYS_AGENT, cwd="/home/dev/projects/shopfront").shape("C")
    s.user("Add dayjs to the web package and replace the moment import in packages/web/src/utils/date.ts.")
    s.sh("cd packages/web && npm install dayjs", """
        added 1 package, and audited 812 packages in 6s

        141 packages are looking for funding
          run `npm fund` for details

        found 0 vulnerabilities
    """)
    s.read("packages/web/src/utils/date.ts", """
        import moment from 'moment'

        export function formatOrderDate(iso: string): string {
          return moment(iso).format('D MMM YYYY')
        }
    """)
    s.edit("packages/web/src/utils/date.ts",
           "import moment from 'moment'\n\nexport function formatOrderDate(iso: string): string {\n  return moment(iso).format('D MMM YYYY')\n}",
           "import dayjs from 'dayjs'\n\nexport function formatOrderDate(iso: string): string {\n  return dayjs(iso).format('D MMM YYYY')\n}")
    s.say("Done: dayjs is installed in packages/web and `formatOrderDate` uses it; the format string is the same in both libraries.")
    s.user("""
        Hm, now there's a package-lock.json next to our pnpm-lock.yaml. Please stop using npm in this repo; use pnpm from now on.
    """)
    s.say("Understood, pnpm from now on for this repo. I'll remove the stray lockfile and redo the install with pnpm.")
    s.sh("rm packages/web/package-lock.json && git checkout packages/web/package.json && pnpm --filter web add dayjs", """
        Progress: resolved 1, reused 0, downloaded 0, added 0
        packages/web                             |   +1 +
        Progress: resolved 846, reused 812, downloaded 1, added 1, done

        dependencies:
        + dayjs 1.11.10

        Done in 3.2s
    """)
    s.say("The npm lockfile is gone, dayjs was added with `pnpm --filter web add dayjs`, and pnpm-lock.yaml is updated.")
    s.expect("preference", ["pnpm"])
    return s


def oa05() -> Session:
    s = Session("oa05_actions_pip_cache", "openai", system=SYS_CHAT).shape("D")
    s.user("""
        Our GitHub Actions test job spends 2+ minutes in `pip install -r requirements.txt` on every push. How can I speed that up?
    """)
    s.say("""
        The quickest win is the built-in pip cache of `actions/setup-python`:

        1. In the setup-python step, add `cache: 'pip'`. It caches pip's download/wheel cache keyed on the hash of your requirements files.
        2. If your requirements live in more than one file, list them in `cache-dependency-path` so the key changes when any of them does.
        3. Keep versions pinned; with loose pins the cache still helps, but pip has to resolve every time.

        ```yaml
        - uses: actions/setup-python@v5
          with:
            python-version: "3.12"
            cache: 'pip'
            cache-dependency-path: |
              requirements.txt
              requirements-dev.txt
        - run: pip install -r requirements.txt -r requirements-dev.txt
        ```

        The first run after the change saves the cache; runs after that restore it.
    """)
    s.user("""
        Added cache: 'pip' plus the dependency path. The first run saved the cache, the second run did the install step in 14s instead of 2m20s. Works, thanks!
    """)
    s.say("Nice. The key follows the requirements files, so it refreshes by itself when you change a pin.")
    s.expect("pattern", ["cache"], ["pip install", "setup-python"])
    return s


def oa06() -> Session:
    s = Session("oa06_nginx_upload_multi", "openai", system=SYS_CHAT).shape("E", "A", "C", "D")
    s.user("""
        Users get `413 Request Entity Too Large` from nginx when they upload PDFs over ~1 MB to our Django app. DATA_UPLOAD_MAX_MEMORY_SIZE is already 20 MB, so it's not Django.
    """)
    s.say("""
        Right, the 413 comes from nginx before the request reaches Django: nginx's `client_max_body_size` defaults to 1m. Set it in the `server` block (or just the upload `location`) a bit above your largest allowed file:

        ```nginx
        server {
            ...
            client_max_body_size 25m;
        }
        ```

        Then `sudo nginx -t && sudo systemctl reload nginx`. Django's upload settings are separate and only matter once the body gets through.
    """)
    s.user("yep, set client_max_body_size 25m in the server block, reloaded, an 18 MB upload went through. all good now")
    s.say("Great. If uploads go through a load balancer as well, check its body size limit too.")
    s.user("""
        In future please never hand me an nginx reload without running `nginx -t` first — last week a typo in a vhost took the whole site down.
    """)
    s.say("""
        Noted. Whenever I suggest an nginx change I'll put `sudo nginx -t` before the reload, so a config error stops there instead of at the reload.
    """)
    s.user("another thing: how do I see which process is holding port 8080? the new gunicorn can't bind after a crash")
    s.say("""
        Two ways:

        - `sudo ss -ltnp 'sport = :8080'` lists the listening socket with the owning process and PID.
        - `sudo lsof -iTCP:8080 -sTCP:LISTEN` gives the same with the command line.

        If it's a leftover of the old service, stop it through systemd if it's a unit (`systemctl stop ...`), otherwise `kill <PID>` and, if it ignores that, `kill -9 <PID>`.
    """)
    s.user("ss -ltnp showed a stale gunicorn master from the old release dir. Killed it, the new one binds fine. Confirmed.")
    s.say("Good. If the old unit is still enabled, disable it so it doesn't come back at the next reboot.")
    s.expect("error", ["client_max_body_size"], ["413", "request entity too large"])
    s.expect("preference", ["nginx -t"])
    s.expect(["pattern", "error"], ["ss -ltnp", "lsof"], ["8080"])
    return s


def oa07_part1(s: Session) -> None:
    s.shape("A", "C", "E", "F")
    s.user("""
        Our Celery workers suddenly fail every task with:

        redis.exceptions.ResponseError: MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.

        Redis 7 on a plain Ubuntu VM. What now?
    """)
    s.say("""
        Redis stops accepting writes because its last background save (BGSAVE) failed. The message is a symptom; the cause is in the Redis log, usually one of:

        - `Failed opening the temp RDB file ... Permission denied` → the data dir (`/var/lib/redis`) is not writable by the redis user; fix ownership with `chown redis:redis /var/lib/redis`.
        - `Write error saving DB on disk: No space left on device` → the volume is full; free disk space.

        Check with `sudo tail -50 /var/log/redis/redis-server.log` and `redis-cli INFO persistence | grep rdb_last_bgsave_status`. After fixing the cause, run `redis-cli BGSAVE`; writes resume once a save succeeds. Don't just set `stop-writes-on-bgsave-error no`, that hides the problem and you lose durability.
    """)
    s.user("""
        Log says "No space left on device". / was at 100%, journald had 6 GB of logs on the 8 GB root volume. I ran `journalctl --vacuum-size=500M`, then BGSAVE, rdb_last_bgsave_status is ok again and the workers are chewing through the queue. 🎉
    """)
    s.say("""
        That's it. To keep it from coming back, set `SystemMaxUse=500M` in /etc/systemd/journald.conf so the journal stays capped, and consider an alert on disk usage for that VM.
    """)
    s.user("Going forward, give me shell commands for fish, not bash — that's the shell on all our boxes.")
    s.say("""
        Noted: fish syntax from now on, e.g. `set -x REDIS_URL redis://localhost:6379/0` instead of `export ...`, and `(command)` instead of `$(command)`.
    """)
    s.expect("error", ["journalctl", "vacuum", "disk space"], ["misconf"])
    s.expect("preference", ["fish"])


def oa07_part2(s: Session) -> None:
    s.shape("D")
    s.user("New question: the Node API image we build is 1.4 GB. How do I get it smaller?")
    s.say("""
        To shrink it, build in one stage and ship only the result in a second, small stage:

        1. Stage 1 (`node:20`): copy package files, `npm ci`, copy the source, `npm run build`.
        2. Stage 2 (`node:20-slim`): copy package files, `npm ci --omit=dev`, then copy only `dist/` from stage 1.
        3. Add a `.dockerignore` with `node_modules`, `.git`, `coverage` so the build context stays small.

        ```dockerfile
        FROM node:20 AS build
        WORKDIR /app
        COPY package*.json ./
        RUN npm ci
        COPY . .
        RUN npm run build

        FROM node:20-slim
        WORKDIR /app
        ENV NODE_ENV=production
        COPY package*.json ./
        RUN npm ci --omit=dev
        COPY --from=build /app/dist ./dist
        CMD ["node", "dist/server.js"]
        ```

        In fish you'd check the result with `docker images api`.
    """)
    s.user("Did the two-stage build on node:20-slim plus the .dockerignore: 212 MB now, container starts and passes the smoke tests. 👌 works")
    s.say("Good result. If you want to go further, `node:20-alpine` saves another ~60 MB, but check native modules first.")
    s.expect("pattern", ["two-stage", "node:20-slim", "slim"], ["1.4 gb", "shrink", "smaller"])


def oa08() -> Session:
    s = Session("oa08_ssh_port22_still_failing", "openai", system=SYS_CHAT).shape("G")
    s.user("""
        git push fails from the office network, at home it works:

        ssh: connect to host github.com port 22: Connection timed out
        fatal: Could not read from remote repository.

        Please make sure you have the correct access rights
        and the repository exists.
    """)
    s.say("""
        That looks like the office firewall blocking outbound port 22. GitHub also accepts SSH on port 443 via `ssh.github.com`. Add this to `~/.ssh/config`:

        ```
        Host github.com
            Hostname ssh.github.com
            Port 443
            User git
        ```

        Then test with `ssh -T github.com`; you should see the "successfully authenticated" greeting.
    """)
    s.user("""
        Added that block. No, same error, only now it's `ssh: connect to host ssh.github.com port 443: Connection timed out`.
    """)
    s.say("""
        Then outbound 443 is only allowed through the corporate HTTP proxy. You can tunnel SSH through it with a ProxyCommand, e.g. `ProxyCommand nc -X connect -x proxy.example.com:3128 %h %p` in the same Host block, or switch the remote to HTTPS, which honours `https_proxy`.
    """)
    s.user("Tried the ProxyCommand too, still failing, nc just hangs. I'll take it up with IT tomorrow.")
    s.forbid(["error", "pattern"], ["ssh.github.com"], NOT_CONFIRMED)
    s.forbid(["error", "pattern"], ["proxycommand"], NOT_CONFIRMED)
    return s


def oa09() -> Session:
    s = Session("oa09_webpack_heap_claimed", "openai", system=SYS_AGENT, cwd="/home/dev/projects/portal").shape("G")
    s.user("""
        The production build dies with "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory". Fix it please.
    """)
    s.sh("grep -n '\"build\"' package.json && node --version", """
        7:    "build": "webpack --mode production",
        v18.19.0
    """)
    s.edit("package.json", '"build": "webpack --mode production",',
           '"build": "NODE_OPTIONS=--max-old-space-size=4096 webpack --mode production",')
    s.say("""
        I raised Node's heap limit for the build to 4 GB with `NODE_OPTIONS=--max-old-space-size=4096` in the build script. The default limit on Node 18 is around 2 GB, which a large production bundle with source maps can exceed. The build will work now.
    """)
    s.forbid(["error", "pattern"], ["max-old-space-size"],
             "success was only claimed: the build was never rerun and the user never confirmed")
    return s


def oa10() -> Session:
    s = Session("oa10_rebase_qna_thanks", "openai", system=SYS_CHAT).shape("G")
    s.user("""
        What's actually the difference between `git merge main` and `git rebase main` when I update my feature branch? My team lead always rebases, I never really understood why.
    """)
    s.say("""
        Both bring the commits from main into your branch; they differ in the history they leave.

        `git merge main` adds one merge commit on your branch whose parents are your last commit and main's tip. Nothing is rewritten, so it is safe on branches others have pulled, but the history gets a merge bubble every time you update.

        `git rebase main` takes your branch's commits and replays them one by one on top of main's tip, creating new commits with new hashes. The history stays linear, as if you had started the branch today, which makes `git log` and `git bisect` easier to read. The price is that you rewrite published commits, so after a rebase you must push with `--force-with-lease`, and you shouldn't rebase a branch someone else is working on.

        That's why many teams rebase private feature branches and merge (or squash-merge) into main.
    """)
    s.user("Ah OK, that makes sense now, thanks!")
    s.say("You're welcome.")
    why = "pure Q&A: nothing was broken or fixed, and 'always rebases' describes the team lead"
    s.forbid(["error", "pattern"], ["rebase"], why)
    s.forbid("preference", ["rebase"], why)
    return s


def oa11() -> Session:
    s = Session("oa11_staging_always_casual", "openai", system=SYS_CHAT).shape("G")
    s.user("""
        Random question: our staging deploy always takes about 20 minutes while prod takes 6. It's always been like that and it never bothered anyone, but is that normal?
    """)
    s.say("""
        It's common. Staging pipelines often run on smaller shared runners, start without a warm Docker layer cache, and do extra work that prod skips, such as loading seed or anonymised data, running the full migration set from scratch, or smoke tests. If you ever want to find out, compare the per-step timings of the two pipelines; usually one step accounts for most of the gap.
    """)
    s.user("Makes sense, it's probably the seed data step. Not worth touching, I was just curious.")
    s.say("Fair enough.")
    why = "'always'/'never' describe how things are; nothing was asked to be done differently"
    s.forbid("preference", ["staging"], why)
    s.forbid(["error", "pattern"], ["seed"], "nothing was broken or changed")
    return s


# --------------------------------------------------------------------------------------------
# Sessions: Anthropic Messages
# --------------------------------------------------------------------------------------------


def an01() -> Session:
    s = Session("an01_ssl_verify_failed", "anthropic").shape("A")
    s.user("""
        Since IT rolled out the new web proxy, our Python report script fails when it calls the internal API, and pip fails the same way:

        requests.exceptions.SSLError: HTTPSConnectionPool(host='api.internal.example.com', port=443): Max retries exceeded with url: /v2/reports (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate (_ssl.c:1006)')))

        curl to the same URL works fine. Ubuntu 22.04.
    """)
    s.say("""
        The proxy intercepts TLS and re-signs every certificate with the company's own root CA. curl trusts it because it uses the system store (`/etc/ssl/certs`), where IT installed that root. requests and pip don't look there: they use the CA bundle shipped with `certifi`, which doesn't contain your corporate root, hence "unable to get local issuer certificate".

        Fix:

        1. Get the corporate root certificate as a PEM file (IT usually publishes it; `openssl s_client -showcerts -connect api.internal.example.com:443` also shows the chain).
        2. Make sure it is in the system store: copy it to `/usr/local/share/ca-certificates/corp-root.crt` and run `sudo update-ca-certificates`.
        3. Point Python at the system bundle: `export REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt`, and for pip `pip config set global.cert /etc/ssl/certs/ca-certificates.crt`.

        Please don't work around it with `verify=False`; that turns off the check for every host, not just the proxy.
    """)
    s.user("Did steps 2 and 3 and put the export in our .envrc. Report script runs, pip installs again. Confirmed, works now.")
    s.say("Great. If the script also runs from cron or CI, set REQUESTS_CA_BUNDLE there too, since .envrc only applies to interactive shells.")
    s.expect("error", ["requests_ca_bundle", "update-ca-certificates"],
             ["certificate_verify_failed", "certificate verify failed", "sslerror"])
    return s


def an02() -> Session:
    s = Session("an02_oomkilled_jvm", "anthropic").shape("A")
    s.user("""
        Our Spring Boot pod restarts every few hours. kubectl describe pod shows

            Last State:     Terminated
              Reason:       OOMKilled
              Exit Code:    137

        Memory limit is 1Gi, JAVA_OPTS has -Xmx900m, and heap dumps never show more than ~600 MB of heap in use. It always dies around the nightly report job. How can it be out of memory?
    """)
    s.say("""
        OOMKilled (exit code 137) means the kernel killed the container because the whole process went over 1Gi, not that the Java heap was full. A JVM uses a lot of memory outside the heap: metaspace, thread stacks, the JIT code cache, GC structures and direct buffers (Netty, PDF or Excel libraries in a report job love those). With `-Xmx900m` you let the heap take almost the entire limit, so when the report job pushes heap and off-heap up together, the total crosses 1Gi.

        What I'd change:

        1. Drop the fixed `-Xmx` and size the heap relative to the container: `-XX:MaxRAMPercentage=70`.
        2. Give the pod some headroom for the report job, e.g. a memory limit of 1536Mi, and set the request equal to the limit so the scheduler places it on a node that really has the memory.

        ```yaml
        env:
          - name: JAVA_OPTS
            value: "-XX:MaxRAMPercentage=70"
        resources:
          requests:
            memory: 1536Mi
          limits:
            memory: 1536Mi
        ```

        If it still grows, `-XX:NativeMemoryTracking=summary` and `jcmd <pid> VM.native_memory` will show which off-heap area it is.
    """)
    s.user("Switched to -XX:MaxRAMPercentage=70 and bumped the limit to 1536Mi. The report job ran clean overnight, thanks, zero restarts in 24h.")
    s.say("Good. Keep an eye on the container memory graph for a week or so; if it stays well below the limit you can trim it later.")
    s.expect("error", ["maxrampercentage", "1536mi", "memory limit"], ["oomkilled", "137"])
    s.forbid("preference", ["report job"], "'it always dies around the nightly report job' is a symptom, not a rule")
    return s


def an03() -> Session:
    s = Session("an03_node_fs_promises", "anthropic", cwd="/home/dev/handbook").shape("B")
    s.user("The docs generator crashes, can you sort it out? It's `npm run docs`.")
    s.sh("npm run docs", """

        > handbook@1.4.0 docs
        > node scripts/gen-docs.js

        internal/modules/cjs/loader.js:905
          throw err;
          ^

        Error: Cannot find module 'node:fs/promises'
        Require stack:
        - /home/dev/handbook/scripts/gen-docs.js
            at Function.Module._resolveFilename (internal/modules/cjs/loader.js:902:15)
            at Function.Module._load (internal/modules/cjs/loader.js:746:27)
            at Module.require (internal/modules/cjs/loader.js:974:19)
            at require (internal/modules/cjs/helpers.js:93:18)
            at Object.<anonymous> (/home/dev/handbook/scripts/gen-docs.js:3:18)
            at Module._compile (internal/modules/cjs/loader.js:1085:14) {
          code: 'MODULE_NOT_FOUND',
          requireStack: [ '/home/dev/handbook/scripts/gen-docs.js' ]
        }
        npm ERR! code ELIFECYCLE
        npm ERR! errno 1
        npm ERR! handbook@1.4.0 docs: `node scripts/gen-docs.js`
        npm ERR! Exit status 1
    """, 1)
    s.think("`node:`-prefixed requires only exist from Node 14.18 / 16. Check which node this shell runs.")
    s.say("The `node:` prefix for core modules needs Node 14.18+ or 16+. Let me check which Node this shell uses.")
    s.sh("node --version; cat .nvmrc; grep -A2 '\"engines\"' package.json", """
        v14.17.0
        20
          "engines": {
            "node": ">=18"
          },
    """)
    s.say("The shell runs Node 14.17.0, while the repo pins 20 in .nvmrc and requires >=18. Switching with nvm.")
    s.sh("source ~/.nvm/nvm.sh && nvm use 20 && node --version", """
        Found '/home/dev/handbook/.nvmrc' with version <20>
        Now using node v20.11.1 (npm v10.2.4)
        v20.11.1
    """)
    s.sh("source ~/.nvm/nvm.sh && nvm use 20 >/dev/null && npm run docs", """

        > handbook@1.4.0 docs
        > node scripts/gen-docs.js

        wrote docs/api.md (42 sections)
        wrote docs/cli.md (17 sections)
        done in 1.8s
    """)
    s.say("""
        Fixed. The crash was Node 14.17 not knowing `node:fs/promises`; after `nvm use 20` (the version in .nvmrc) `npm run docs` completes and writes both files. Run `nvm alias default 20` if you want new shells to start on Node 20.
    """)
    s.expect("error", ["nvm use 20", "nvm", "node 20"], ["node:fs/promises"])
    return s


MIG_0014_OLD = """
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("blog", "0013_post_reading_time")]

    operations = [
        migrations.AddField(
            model_name="post",
            name="slug",
            field=models.SlugField(default="", max_length=120, unique=True),
            preserve_default=False,
        ),
    ]
"""


def an04() -> Session:
    s = Session("an04_django_migration_unique", "anthropic", cwd="/home/dev/projects/newsroom").shape("B")
    s.user("`python manage.py migrate` blows up against a copy of the staging data since I added a slug field to Post. Can you fix the migration?")
    s.sh("python manage.py migrate blog", """
        Operations to perform:
          Apply all migrations: blog
        Running migrations:
          Applying blog.0014_post_slug...Traceback (most recent call last):
          File "/home/dev/projects/newsroom/.venv/lib/python3.12/site-packages/django/db/backends/utils.py", line 105, in _execute
            return self.cursor.execute(sql, params)
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        psycopg2.errors.UniqueViolation: could not create unique index "blog_post_slug_key"
        DETAIL:  Key (slug)=() is duplicated.


        The above exception was the direct cause of the following exception:

        Traceback (most recent call last):
          File "/home/dev/projects/newsroom/manage.py", line 22, in <module>
            main()
          ...
        django.db.utils.IntegrityError: could not create unique index "blog_post_slug_key"
        DETAIL:  Key (slug)=() is duplicated.
    """, 1)
    s.read("blog/migrations/0014_post_slug.py", MIG_0014_OLD)
    s.say("""
        The migration adds `slug` with `unique=True` and a one-off default of `""`, so every existing post gets the same empty slug and the unique index can't be built. The usual way is three steps: add the field as nullable without the unique constraint, fill it with a RunPython data migration, then make it unique. 0014 never got applied (Postgres rolled the DDL back), so I can change it in place.
    """)
    s.edit("blog/migrations/0014_post_slug.py",
           'field=models.SlugField(default="", max_length=120, unique=True),\n            preserve_default=False,',
           "field=models.SlugField(max_length=120, null=True),")
    s.write("blog/migrations/0015_populate_post_slug.py", """
        from django.db import migrations
        from django.utils.text import slugify


        def fill_slugs(apps, schema_editor):
            Post = apps.get_model("blog", "Post")
            for post in Post.objects.filter(slug__isnull=True).only("id", "title"):
                post.slug = f"{slugify(post.title)[:100]}-{post.id}"
                post.save(update_fields=["slug"])


        class Migration(migrations.Migration):

            dependencies = [("blog", "0014_post_slug")]

            operations = [migrations.RunPython(fill_slugs, migrations.RunPython.noop)]
    """)
    s.write("blog/migrations/0016_post_slug_unique.py", """
        from django.db import migrations, models


        class Migration(migrations.Migration):

            dependencies = [("blog", "0015_populate_post_slug")]

            operations = [
                migrations.AlterField(
                    model_name="post",
                    name="slug",
                    field=models.SlugField(max_length=120, unique=True),
                ),
            ]
    """)
    s.sh("python manage.py migrate blog && python manage.py test blog 2>&1 | tail -3", """
        Operations to perform:
          Apply all migrations: blog
        Running migrations:
          Applying blog.0014_post_slug... OK
          Applying blog.0015_populate_post_slug... OK
          Applying blog.0016_post_slug_unique... OK
        Ran 58 tests in 4.113s

        OK
    """)
    s.say("""
        The migrate now goes through on the staging copy: 0014 adds `slug` with `null=True`, 0015 fills it with a RunPython step (`slugify(title)` plus the id, so it's unique), and 0016 makes it unique. The blog tests pass. The Post model itself already says `unique=True`, so `makemigrations --check` stays clean.
    """)
    s.expect("error", ["runpython", "null=true", "nullable"], ["is duplicated", "unique index", "integrityerror"])
    return s


def an05() -> Session:
    s = Session("an05_british_english", "anthropic").shape("C")
    s.user("""
        Quick one before we start on the docs: from now on I always want answers in British English (colour, organisation, licence as the noun). Our style guide requires it and I'm tired of fixing it by hand.
    """)
    s.say("""
        Understood. From now on I'll write in British English: colour, organisation, behaviour, -ise verbs, and "licence" for the noun with "license" for the verb.
    """)
    s.user("Perfect, thanks.")
    s.expect("preference", ["british english", "british"])
    return s


def an06() -> Session:
    s = Session("an06_chinese_answers", "anthropic").shape("C", "E", "G")
    s.user("What does `set -euo pipefail` at the top of a bash script actually do?")
    s.say("""
        It turns on three safety options:

        - `-e`: exit as soon as a command fails (non-zero status), instead of carrying on.
        - `-u`: treat use of an unset variable as an error, which catches typos like `$OUPUT_DIR`.
        - `-o pipefail`: a pipeline fails if any command in it fails, not just the last one, so `curl ... | tar x` notices when curl fails.

        Together they make a script stop at the first problem rather than continue in a broken state. Watch out for commands that may legitimately return non-zero (like `grep` with no match); add `|| true` there.
    """)
    s.user("谢谢，明白了。以后都用中文回答，我读中文更快。")
    s.say("好的，以后我都用中文回答。(Noted: answers in Chinese from now on.)")
    s.expect("preference", ["中文", "chinese"])
    s.forbid(["error", "pattern"], ["pipefail"], "a thank-you for an explanation: nothing was broken or fixed")
    return s


def an07() -> Session:
    s = Session("an07_pg_dump_backup", "anthropic", cwd="/home/dev/ops").shape("D")
    s.user("How do I take a backup of the `shop` database that I can restore into staging, without stopping the app?")
    s.say("""
        `pg_dump` doesn't need downtime: it runs in a single transaction and sees a consistent snapshot while the app keeps writing. Use the custom format (`-Fc`), which is compressed and lets `pg_restore` run in parallel and skip ownership. I'll take one and test-restore it into a scratch database.
    """)
    s.sh("pg_dump -Fc --no-owner -d shop -f /tmp/shop_2026-03-03.dump && ls -lh /tmp/shop_2026-03-03.dump",
         "-rw-r--r-- 1 dev dev 312M Mar  3 10:41 /tmp/shop_2026-03-03.dump")
    s.sh("createdb shop_restore_test && pg_restore --no-owner -j 4 -d shop_restore_test /tmp/shop_2026-03-03.dump "
         "&& psql -d shop -Atc 'select count(*) from orders' && psql -d shop_restore_test -Atc 'select count(*) from orders'", """
        1284113
        1284113
    """)
    s.say("""
        The dump is 312 MB and restores cleanly into `shop_restore_test` with 4 parallel jobs; the orders count matches the source. For staging:

        1. Copy the file to the staging host.
        2. `pg_restore --clean --if-exists --no-owner -j 4 -d shop /path/to/shop_2026-03-03.dump`
        3. Run `ANALYZE;` afterwards so the planner has fresh statistics.

        `dropdb shop_restore_test` cleans up the scratch copy.
    """)
    s.user("Restored it into staging with --clean --if-exists, row counts match prod. Confirmed, that's the procedure I'll put in the runbook.")
    s.say("Great. Note the retention you want for the dump files in the runbook as well.")
    s.expect("pattern", ["pg_dump", "pg_restore"], ["backup"])
    return s


def an08() -> Session:
    s = Session("an08_ruff_utc_sphinx_multi", "anthropic", cwd="/home/dev/projects/api").shape("E", "B", "C", "G")
    s.user("pre-commit fails on my machine as soon as it gets to ruff, can you look?")
    s.sh("pre-commit run --all-files", """
        check yaml...............................................................Passed
        fix end of files.........................................................Passed
        ruff.....................................................................Failed
        - hook id: ruff
        - exit code: 2

        ruff failed
          Cause: Failed to parse /home/dev/projects/api/pyproject.toml
          Cause: TOML parse error at line 41, column 1
           |
        41 | [tool.ruff.lint]
           | ^^^^^^^^^^^^^^^^
        unknown field `lint`, expected one of `cache-dir`, `exclude`, `extend`, `fix`, `line-length`, `select`, `target-version`, ...
    """, 1)
    s.sh("grep -n -A2 'ruff-pre-commit' .pre-commit-config.yaml && git log -1 --format=%cs -- pyproject.toml", """
        12:  - repo: https://github.com/astral-sh/ruff-pre-commit
        13-    rev: v0.0.287
        14-    hooks:
        2026-02-11
    """)
    s.say("""
        pyproject.toml was recently moved to the `[tool.ruff.lint]` table, which ruff only understands since 0.1.x, but the pre-commit hook is pinned to ruff v0.0.287. Bumping the hook's rev.
    """)
    s.sh("pre-commit autoupdate --repo https://github.com/astral-sh/ruff-pre-commit",
         "[https://github.com/astral-sh/ruff-pre-commit] updating v0.0.287 -> v0.4.4")
    s.sh("pre-commit run --all-files", """
        check yaml...............................................................Passed
        fix end of files.........................................................Passed
        ruff.....................................................................Passed
        ruff-format..............................................................Passed
    """)
    s.say("All hooks pass now: `pre-commit autoupdate` moved ruff-pre-commit from v0.0.287 to v0.4.4, which reads the `[tool.ruff.lint]` table.")
    s.user("Nice. Please always use UTC timestamps (ISO 8601 with a Z) in any logging code you write for this project, the log pipeline assumes it.")
    s.say("""
        Will do: for this project, log timestamps in UTC as ISO 8601 with a trailing Z, e.g. `datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")` or a logging Formatter with `converter = time.gmtime`.
    """)
    s.user("Last thing: `make docs` says `sphinx-build: command not found` even though I installed sphinx.")
    s.say("""
        Most likely sphinx went into a different environment than the one `make` sees, e.g. your user site with `pip install --user`, whose bin directory (`~/.local/bin`) isn't on PATH. Install it into the project venv and refresh the shell's command cache:

        ```
        .venv/bin/python -m pip install -r docs/requirements.txt
        source .venv/bin/activate
        hash -r
        make docs
        ```
    """)
    s.user("no, same error. whatever, I'll look at it after lunch.")
    s.expect("error", ["autoupdate", "v0.4.4"], ["unknown field", "toml parse error", "ruff"])
    s.expect("preference", ["utc"])
    s.forbid(["error", "pattern"], ["sphinx-build"], NOT_CONFIRMED)
    return s


def an09_part1(s: Session) -> None:
    s.shape("B", "F")
    s.user("`npx tsc --noEmit` fails in the gateway package after I added the Express server. Please fix.")
    s.sh("npx tsc --noEmit", """
        src/server.ts:1:21 - error TS7016: Could not find a declaration file for module 'express'. '/home/dev/projects/gateway/node_modules/express/index.js' implicitly has an 'any' type.
          Try `npm i --save-dev @types/express` if it exists or add a new declaration (.d.ts) file containing `declare module 'express';`

        1 import express from 'express'
                              ~~~~~~~~~


        Found 1 error in src/server.ts:1
    """, 2)
    s.say("Express ships no TypeScript types and `strict` forbids implicit any, so tsc needs the DefinitelyTyped package. Installing `@types/express` as a dev dependency.")
    s.sh("npm i --save-dev @types/express", """

        added 9 packages, and audited 214 packages in 3s

        28 packages are looking for funding
          run `npm fund` for details

        found 0 vulnerabilities
    """)
    s.sh("npx tsc --noEmit && echo 'tsc: no errors'", "tsc: no errors")
    s.say("`npx tsc --noEmit` is clean now: installing `@types/express` gave the compiler the declarations for `express` (TS7016 is gone).")
    s.expect("error", ["@types/express"], ["ts7016", "declaration file"])


def an09_part2(s: Session) -> None:
    s.shape("A", "C", "E")
    s.user("""
        Thanks. I'd like you to always include the rollback command whenever you suggest a change to our infrastructure.

        Related: terraform plan in the infra repo now fails with

        Error: Error acquiring the state lock

        Error message: ConditionalCheckFailedException: The conditional request failed
        Lock Info:
          ID:        3f1c9a2e-7d4b-4e8a-9c61-0b2f5d8e4a17
          Path:      acme-tfstate/network/terraform.tfstate
          Operation: OperationTypeApply
          Who:       runner@ci-7
          Created:   2026-03-02 17:41:09 UTC

        The CI apply job that holds it was cancelled yesterday.
    """)
    s.say("""
        Noted: every infrastructure change I suggest will come with its rollback command.

        The lock is a leftover: the cancelled CI job never got to release it in the DynamoDB lock table. Once you have made sure no apply is running anywhere (check the CI runners), release it with the ID from the message:

        ```
        terraform force-unlock 3f1c9a2e-7d4b-4e8a-9c61-0b2f5d8e4a17
        ```

        Rollback: there is nothing to undo for the unlock itself; if a run really was still active, let it finish and re-run `terraform plan`, which will show any drift. Since the cancelled job was an apply, look at the plan carefully before the next apply, as it may have changed part of the network.
    """)
    s.user("Checked the runners, nothing running. force-unlock went through and plan runs again, only an expected tag change. Sorted, thanks.")
    s.say("Good. A `timeout` on the CI apply job with a `terraform force-unlock` in its cleanup step avoids this next time.")
    s.expect("preference", ["rollback"])
    s.expect("error", ["force-unlock"], ["state lock"])


def an10() -> Session:
    s = Session("an10_flaky_rerun_reverted", "anthropic").shape("G")
    s.user("""
        test_checkout_concurrent fails maybe 1 in 5 CI runs with `AssertionError: assert 9 == 10` on the stock count. Never fails locally. Any quick fix? The release is blocked on red CI.
    """)
    s.say("""
        A test that counts stock after concurrent checkouts and sometimes ends one short points to a race in the stock update (two requests read the same value and both write back value − 1). CI machines are slower and more parallel, which is why it shows up there.

        As a stopgap to unblock the release you can retry just that test with pytest-rerunfailures:

        ```python
        @pytest.mark.flaky(reruns=3)
        def test_checkout_concurrent(...):
        ```

        The real fix is to make the decrement atomic, e.g. `Product.objects.filter(pk=pk).update(stock=F("stock") - 1)` or `select_for_update()` inside the transaction.
    """)
    s.user("Added the flaky marker with reruns=3, CI went green and we shipped.")
    s.say("Good. I'd still schedule the atomic update soon; the retry only hides the race from the test.")
    s.user("""
        Yeah, I've reverted the reruns marker already: it hides a real bug and the next person would never see it. I'll fix the locking properly when I'm back on Monday.
    """)
    s.say("Makes sense. The F() expression update is a one-line change in `reserve_stock`, so it should be quick.")
    s.forbid(["error", "pattern"], ["reruns"], "the user reverted the retry marker; it is not a fix to reuse")
    return s


def an11() -> Session:
    s = Session("an11_cron_sunday_question", "anthropic").shape("G")
    s.user("""
        the cron never fires on Sundays? here's the line:

        30 6 * * 1-6 /opt/reports/weekly.sh

        it always worked before we moved to the new box, I swear
    """)
    s.say("""
        In the day-of-week field, 0 and 7 both mean Sunday and `1-6` is Monday to Saturday, so this line excludes Sunday by design. If it used to run on Sundays, the old server probably had a different line, e.g. `*` or `0-6` in the last field. Compare with the old crontab backup before changing anything; someone may have restricted it on purpose.
    """)
    s.user("huh. I'll ask Dana who wrote it, maybe it was intentional.")
    why = "a question with 'never'/'always' describing behaviour; nothing was changed or confirmed"
    s.forbid("preference", ["sunday"], why)
    s.forbid(["error", "pattern"], ["0-6"], why)
    return s


# --------------------------------------------------------------------------------------------
# Sessions: Claude Code exports
# --------------------------------------------------------------------------------------------


def cc01() -> Session:
    s = Session("cc01_git_push_rejected", "claude_code", cwd="/home/dev/projects/handbook").shape("A")
    s.user("""
        git push gives me this:

        ```
        To https://github.com/acme/handbook.git
         ! [rejected]        main -> main (fetch first)
        error: failed to push some refs to 'https://github.com/acme/handbook.git'
        hint: Updates were rejected because the remote contains work that you do not
        hint: have locally. This is usually caused by another repository pushing to
        hint: the same ref. If you want to integrate the remote changes, use
        hint: 'git pull' before pushing again.
        ```

        what do I do? I don't want to lose my 3 commits
    """)
    s.think("Someone else pushed to main. Recommend pull --rebase, warn against force push. No need to run anything.")
    s.say("""
        Nothing is lost: someone pushed to `main` after you last fetched, and Git refuses to overwrite their commits. Replay your commits on top of theirs and push again:

        ```
        git pull --rebase origin main
        git push
        ```

        If the rebase stops on a conflict, fix the files, `git add` them and run `git rebase --continue`. Don't use `git push --force` here, that would delete your colleague's commits from the remote.
    """)
    s.user("pull --rebase replayed my 3 commits on top, no conflicts, push went through. Problem solved.")
    s.say("Good. `git config --global pull.rebase true` makes plain `git pull` do this by default, if you like it that way.")
    s.expect("error", ["pull --rebase"], ["rejected", "fetch first"])
    return s


def cc02() -> Session:
    s = Session("cc02_cron_path_chinese", "claude_code", cwd="/home/dev").shape("A")
    s.user("""
        my backup script works when I run it by hand but the cron entry never seems to do anything:

            0 2 * * * backup.sh > /var/log/backup/backup.log 2>&1

        the log file only has `/bin/sh: 1: backup.sh: not found`. the script is in ~/bin and that's on my PATH
    """)
    s.say("""
        cron doesn't use your login shell or your PATH. Jobs run under `/bin/sh` with a minimal environment, typically `PATH=/usr/bin:/bin`, so `~/bin` is not searched and `backup.sh` is "not found". The same applies inside the script: tools from `/usr/local/bin` (pg_dump from a newer package, the aws CLI) won't be found either.

        1. Call the script by its absolute path: `0 2 * * * /home/dev/bin/backup.sh > /var/log/backup/backup.log 2>&1`
        2. Set a PATH line at the top of the crontab (`crontab -e`): `PATH=/usr/local/bin:/usr/bin:/bin`
        3. If the job line ever uses `date +%F`, escape the percent signs as `\\%`, since cron treats `%` as a newline.
    """)
    s.user("改成绝对路径，并在 crontab 顶部加了 PATH=/usr/local/bin:/usr/bin:/bin。今天凌晨两点跑了，备份文件也在。好了，问题解决了，谢谢")
    s.say("不客气！以后新加 cron 任务时也记得用绝对路径。")
    s.expect("error", ["absolute path", "path=", "/home/dev/bin/backup.sh"], ["not found"])
    s.forbid("preference", ["cron"], "'the cron entry never seems to do anything' describes the symptom")
    return s


def cc03() -> Session:
    s = Session("cc03_venv_pytest", "claude_code", cwd="/home/dev/projects/weatherbot").shape("B")
    s.user("run the test suite please")
    s.say("Running the tests.")
    s.sh("pytest -q", """
        ==================================== ERRORS ====================================
        __________________ ERROR collecting tests/test_client.py __________________
        ImportError while importing test module '/home/dev/projects/weatherbot/tests/test_client.py'.
        Hint: make sure your test modules/packages have valid Python names.
        Traceback:
        /usr/lib/python3.12/importlib/__init__.py:90: in import_module
            return _bootstrap._gcd_import(name[level:], package, level)
        tests/test_client.py:3: in <module>
            from weatherbot.client import ForecastClient
        weatherbot/client.py:5: in <module>
            import httpx
        E   ModuleNotFoundError: No module named 'httpx'
        =========================== short test summary info ============================
        ERROR tests/test_client.py
        !!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
        1 error in 0.21s
    """, 2, "Run the test suite")
    s.think("httpx is a declared dependency. Probably the system pytest rather than the venv one.")
    s.sh("which pytest python; ls -d .venv && .venv/bin/python -c 'import httpx; print(httpx.__version__)'", """
        /usr/bin/pytest
        /usr/bin/python
        .venv
        0.27.0
    """, 0, "Check which pytest runs and whether the venv has httpx")
    s.say("`pytest` here is the system one in /usr/bin, which doesn't see the project's `.venv` where httpx is installed. Running pytest through the venv's interpreter instead.")
    s.sh(".venv/bin/python -m pytest -q", """
        .........................................                                [100%]
        41 passed in 2.87s
    """, 0, "Run the tests with the venv interpreter")
    s.say("""
        All 41 tests pass with `.venv/bin/python -m pytest`. The collection error came from the system pytest outside the virtualenv; activate `.venv` (or always use `python -m pytest` from it) and it finds httpx.
    """)
    s.expect("error", ["python -m pytest", ".venv"], ["modulenotfounderror", "no module named"])
    return s


def cc04() -> Session:
    s = Session("cc04_openssl_sys", "claude_code", cwd="/home/dev/projects/fetcher").shape("B")
    s.user("cargo build fails on the fresh VM, fix it")
    s.sh("cargo build 2>&1 | tail -30", """
           Compiling openssl-sys v0.9.102
        error: failed to run custom build command for `openssl-sys v0.9.102`

        Caused by:
          process didn't exit successfully: `/home/dev/projects/fetcher/target/debug/build/openssl-sys-5d1e9c0b7a3f2e48/build-script-main` (exit status: 101)
          --- stdout
          cargo:rerun-if-env-changed=X86_64_UNKNOWN_LINUX_GNU_OPENSSL_LIB_DIR
          cargo:rerun-if-env-changed=OPENSSL_LIB_DIR
          cargo:rerun-if-env-changed=OPENSSL_DIR
          run pkg_config fail: Could not run `PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 pkg-config --libs --cflags openssl`
          The pkg-config command could not be found.

          --- stderr
          thread 'main' panicked at /home/dev/.cargo/registry/src/index.crates.io-6f17d22bba15001f/openssl-sys-0.9.102/build/find_normal.rs:190:5:

          Could not find directory of OpenSSL installation, and this `-sys` crate cannot
          proceed without this knowledge. If OpenSSL is installed and this crate had
          trouble finding it,  you can set the `OPENSSL_DIR` environment variable for the
          compilation process.

          Make sure you also have the development packages of openssl installed.
          For example, `libssl-dev` on Ubuntu or `openssl-devel` on Fedora.
        warning: build failed, waiting for other jobs to finish...
    """, 101, "Build the project")
    s.sh("command -v pkg-config || echo 'no pkg-config'; dpkg -l | grep -E '^ii +libssl'", """
        no pkg-config
        ii  libssl3:amd64                   3.0.2-0ubuntu1.15                       amd64        Secure Sockets Layer toolkit - shared libraries
    """, 0, "Check for pkg-config and OpenSSL dev packages")
    s.say("Only the OpenSSL runtime library is installed; the build script needs `pkg-config` and the headers from `libssl-dev`. Installing both.")
    s.sh("sudo apt-get install -y pkg-config libssl-dev", """
        Reading package lists...
        Building dependency tree...
        Reading state information...
        The following NEW packages will be installed:
          libssl-dev pkg-config
        0 upgraded, 2 newly installed, 0 to remove and 4 not upgraded.
        Need to get 2,424 kB of archives.
        After this operation, 12.9 MB of additional disk space will be used.
        Get:1 http://archive.ubuntu.com/ubuntu jammy-updates/main amd64 libssl-dev amd64 3.0.2-0ubuntu1.15 [2,375 kB]
        Get:2 http://archive.ubuntu.com/ubuntu jammy/main amd64 pkg-config amd64 0.29.2-1ubuntu3 [48.2 kB]
        Fetched 2,424 kB in 1s (2,870 kB/s)
        Setting up pkg-config (0.29.2-1ubuntu3) ...
        Setting up libssl-dev:amd64 (3.0.2-0ubuntu1.15) ...
        Processing triggers for man-db (2.10.2-1) ...
    """, 0, "Install pkg-config and libssl-dev")
    s.sh("cargo build 2>&1 | tail -5", """
           Compiling openssl-sys v0.9.102
           Compiling openssl v0.10.64
           Compiling native-tls v0.2.11
           Compiling reqwest v0.11.27
           Compiling fetcher v0.3.0 (/home/dev/projects/fetcher)
            Finished `dev` profile [unoptimized + debuginfo] target(s) in 41.27s
    """, 0, "Rebuild")
    s.say("""
        `cargo build` succeeds now. The `openssl-sys` build script needs `pkg-config` and the OpenSSL headers (`libssl-dev`), and the fresh VM only had the runtime `libssl3`. If you'd rather not depend on system packages, the `vendored` feature of the openssl crate compiles OpenSSL from source instead.
    """)
    s.expect("error", ["libssl-dev", "pkg-config"], ["openssl-sys", "openssl installation"])
    return s


def cc05() -> Session:
    s = Session("cc05_tuesday_deploys", "claude_code", cwd="/home/dev/projects/billing").shape("C")
    s.user("bump the version to 2.8.0 in pyproject and add a changelog section for it, with the two fixes merged this week")
    s.read("pyproject.toml", """
        [project]
        name = "billing"
        version = "2.7.3"
        requires-python = ">=3.11"
    """)
    s.edit("pyproject.toml", 'version = "2.7.3"', 'version = "2.8.0"')
    s.sh("git log v2.7.3..HEAD --no-merges --pretty=format:'%h %s'", """
        9c41d7e fix: round VAT per line, not per invoice
        51ab0f2 fix: retry webhook delivery on 502
        e07c3a9 feat: export invoices as CSV
    """, 0, "List commits since the last release")
    s.edit("CHANGELOG.md", "# Changelog\n", "# Changelog\n\n## 2.8.0\n\n- Export invoices as CSV (e07c3a9)\n- Round VAT per line, not per invoice (9c41d7e)\n- Retry webhook delivery on 502 (51ab0f2)\n")
    s.say("Bumped to 2.8.0 and added the changelog section; besides the two fixes there is also the CSV export feature, so I listed it first.")
    s.user("Looks good. Don't tag it though: remember that we deploy only on Tuesdays, and today is Thursday.")
    s.say("Got it: deploys happen only on Tuesdays. I've left the tag off, and I won't suggest tagging or deploying on other days.")
    s.expect("preference", ["tuesday"])
    return s


TRUNCATE_V1 = """
def truncate_words(text, limit):
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + "…"
"""


def cc06() -> Session:
    s = Session("cc06_typehints_thanks", "claude_code", cwd="/home/dev/projects/newsletter").shape("C")
    s.user("write a small helper in utils/text.py that truncates a string to n chars with an ellipsis, without cutting words in half")
    s.write("utils/text.py", TRUNCATE_V1)
    s.sh("python -c 'from utils.text import truncate_words as t; print(t(\"The quick brown fox jumps\", 16)); print(t(\"short\", 16))'", """
        The quick brown…
        short
    """, 0, "Try the helper")
    s.say("Added `truncate_words(text, limit)` in utils/text.py. It cuts at the last space before the limit and appends `…`; the result including the ellipsis never exceeds `limit`.")
    s.user("Thanks! From now on please add type hints to every function you write, and a one-line docstring.")
    s.say("Will do, type hints and a one-line docstring on every function from now on. Updating this one too.")
    s.edit("utils/text.py", "def truncate_words(text, limit):\n",
           'def truncate_words(text: str, limit: int) -> str:\n    """Shorten text to at most limit characters, cutting at a word boundary."""\n')
    s.say("Done: `truncate_words(text: str, limit: int) -> str` with a docstring.")
    s.expect("preference", ["type hints"])
    return s


DOCKERFILE_FAT = """
FROM python:3.12
WORKDIR /app
COPY . .
RUN apt-get update && apt-get install -y build-essential libpq-dev
RUN pip install -r requirements.txt
CMD ["gunicorn", "-b", "0.0.0.0:8000", "inventory.wsgi"]
"""

DOCKERFILE_SLIM = """
# build stage: compile wheels with the full toolchain
FROM python:3.12 AS build
WORKDIR /src
RUN apt-get update && apt-get install -y --no-install-recommends build-essential libpq-dev
COPY requirements.txt .
RUN pip wheel --wheel-dir /wheels -r requirements.txt

# runtime stage: slim base, only the runtime library and the wheels
FROM python:3.12-slim
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/* && rm -rf /wheels
COPY inventory/ inventory/
CMD ["gunicorn", "-b", "0.0.0.0:8000", "inventory.wsgi"]
"""


def cc07() -> Session:
    s = Session("cc07_docker_shrink", "claude_code", cwd="/home/dev/projects/inventory-api").shape("D")
    s.user("the image is 2 GB, how do I shrink it? it's just a small Flask API")
    s.read("Dockerfile", DOCKERFILE_FAT)
    s.sh("docker history --format '{{.Size}}\\t{{.CreatedBy}}' inventory-api:latest | head -6", """
        0B	CMD ["gunicorn" "-b" "0.0.0.0:8000" "inventory.wsgi"]
        187MB	RUN /bin/sh -c pip install -r requirements.txt
        412MB	RUN /bin/sh -c apt-get update && apt-get install -y build-essential libpq-dev
        318MB	COPY . .
        0B	WORKDIR /app
        1.02GB	/bin/sh -c #(nop) ADD file:... in /
    """, 0, "Show the size of each image layer")
    s.say("""
        Most of the 2 GB is the full `python:3.12` base (~1 GB), the compiler toolchain (412 MB) and `COPY . .` pulling in .git, the venv and test data (318 MB). Plan:

        1. Multi-stage build: compile wheels in a `python:3.12` build stage that has build-essential.
        2. Runtime stage on `python:3.12-slim` with only `libpq5` and the prebuilt wheels.
        3. A `.dockerignore` and copying only the `inventory/` package.
    """)
    s.write("Dockerfile", DOCKERFILE_SLIM)
    s.write(".dockerignore", """
        .git
        .venv
        __pycache__/
        tests/
        *.sqlite3
    """)
    s.sh("docker build -q -t inventory-api:slim . && docker images inventory-api --format '{{.Tag}}\\t{{.Size}}'", """
        sha256:6f0c2b9a41d7e3c85b1f04a9d2e7c6b3a8f5d1e0c9b7a6f4e3d2c1b0a9f8e7d6
        slim	181MB
        latest	2.04GB
    """, 0, "Build the multi-stage image and compare sizes")
    s.say("The multi-stage image on the slim base is 181 MB instead of 2.04 GB. Can you run it in your environment and check the app still serves?")
    s.user("Confirmed, 180 MB now and /healthz answers fine on staging.")
    s.say("Great. Commit the Dockerfile and .dockerignore together so CI builds the small image too.")
    s.expect("pattern", ["multi-stage", "slim"], ["2 gb", "shrink"])
    return s


def cc08() -> Session:
    s = Session("cc08_pghba_changelog_multi", "claude_code", cwd="/home/dev/projects/billing").shape("E", "A", "D")
    s.user("""
        the app server can't reach the new database:

        psql: error: connection to server at "10.0.2.15", port 5432 failed: FATAL:  no pg_hba.conf entry for host "10.0.2.31", user "billing", database "billing", no encryption

        listen_addresses is already '*'
    """)
    s.say("""
        The server is reachable and listening; it rejects the login because no line in `pg_hba.conf` matches this client address, user and database over a non-TLS connection ("no encryption"). Add a rule for the app server on the database host and reload:

        ```
        # /etc/postgresql/16/main/pg_hba.conf
        host    billing    billing    10.0.2.31/32    scram-sha-256
        ```

        Then `sudo -u postgres psql -c 'SELECT pg_reload_conf();'`; no restart needed. If you want to force TLS, use `hostssl` instead of `host` and add `sslmode=require` to the app's connection string.
    """)
    s.user("added the host line for 10.0.2.31/32, ran pg_reload_conf, app connects. yep, all green now")
    s.say("Good. Keep the /32 rather than a whole subnet so only that server matches the rule.")
    s.user("can you write the changelog section for the release from the commits since the last tag?")
    s.sh("git describe --tags --abbrev=0", "v1.6.2", 0, "Find the last tag")
    s.sh("git log v1.6.2..HEAD --no-merges --pretty=format:'- %s (%h)'", """
        - Add CSV export for credit notes (4be1f09)
        - Fix rounding of VAT on discounted lines (a73c2d5)
        - Move DB settings to environment variables (0d9e6b1)
    """, 0, "List commits since v1.6.2")
    s.edit("CHANGELOG.md", "# Changelog\n",
           "# Changelog\n\n## Unreleased\n\n- Add CSV export for credit notes (4be1f09)\n- Fix rounding of VAT on discounted lines (a73c2d5)\n- Move DB settings to environment variables (0d9e6b1)\n")
    s.say("Added an `Unreleased` section with the three commits since v1.6.2. I got them with `git describe --tags --abbrev=0` for the last tag and `git log <tag>..HEAD --no-merges --pretty=format:'- %s (%h)'`.")
    s.user("exactly what I wanted, works. I'll reuse that git log one-liner for the next releases.")
    s.say("It also works in CI if you want the release job to draft the section automatically.")
    s.expect("error", ["pg_reload_conf", "/32", "reload"], ["no pg_hba.conf entry"])
    s.expect("pattern", ["git log", "git describe"], ["changelog"])
    return s


def cc09_part1(s: Session) -> None:
    s.shape("A", "C", "E", "F")
    s.user("From now on, write commit messages in Conventional Commits format (feat:, fix:, chore: ...). Our release tooling parses them.")
    s.say("Understood: Conventional Commits from now on, e.g. `fix(api): handle empty cart` or `chore: bump ruff`.")
    s.user("""
        now the actual problem: staging deploy is stuck, the pods say ImagePullBackOff and describe shows

          Warning  Failed     12s (x4 over 1m40s)  kubelet  Failed to pull image "registry.example.com/shop/api:2.8.0": rpc error: code = Unknown desc = failed to pull and unpack image "registry.example.com/shop/api:2.8.0": failed to resolve reference "registry.example.com/shop/api:2.8.0": unexpected status from HEAD request to https://registry.example.com/v2/shop/api/manifests/2.8.0: 401 Unauthorized

        we recreated the staging namespace yesterday
    """)
    s.say("""
        The 401 means the kubelet pulls without credentials. Image pull secrets are namespaced, so when the staging namespace was recreated, the `regcred` secret and the service account's `imagePullSecrets` reference went with it. Recreate both:

        1. `kubectl -n staging create secret docker-registry regcred --docker-server=registry.example.com --docker-username=deploy-bot --docker-password="$REGISTRY_PASSWORD"`
        2. `kubectl -n staging patch serviceaccount default -p '{"imagePullSecrets": [{"name": "regcred"}]}'`
        3. `kubectl -n staging rollout restart deployment/api`

        Add the secret to whatever recreates the namespace, so it doesn't happen again.
    """)
    s.user("Recreated regcred in staging and patched the default service account, rollout restarted. Pods are Running. OK it works now.")
    s.say("Good. A commit for the namespace bootstrap script would be `fix(k8s): create regcred when bootstrapping a namespace`.")
    s.expect("preference", ["conventional commits"])
    s.expect("error", ["regcred", "imagepullsecrets", "docker-registry"], ["imagepullbackoff", "401"])


def cc09_part2(s: Session) -> None:
    s.shape("G")
    s.user("""
        another one: the HPA for api in staging shows <unknown>/70% for the CPU target and never scales.
    """)
    s.sh("kubectl -n staging get hpa api && kubectl -n staging get deploy api -o jsonpath='{.spec.template.spec.containers[0].resources}'", """
        NAME   REFERENCE        TARGETS         MINPODS   MAXPODS   REPLICAS   AGE
        api    Deployment/api   <unknown>/70%   2         6         2          19h
        {"limits":{"memory":"512Mi"}}
    """, 0, "Inspect the HPA and the container resources")
    s.say("""
        The container has no CPU request, and a CPU utilisation target is a percentage of the request, so the HPA can't compute it and shows `<unknown>`. Add `resources.requests.cpu: 250m` (and a memory request) to the api container, then the HPA should pick up metrics within a minute.
    """)
    s.user("Added requests.cpu 250m and redeployed, still <unknown>. Same thing.")
    s.sh("kubectl top pods -n staging", "error: Metrics API not available", 1, "Check the metrics API")
    s.say("The metrics API itself isn't available, so metrics-server is probably missing from the recreated cluster setup as well. It would need installing in kube-system.")
    s.user("""
        forget it for now, I'll ask the platform team about metrics-server. Different thing: always use --context staging explicitly in any kubectl command you give me, I've been burned by the wrong context before.
    """)
    s.say("Will do: every kubectl command I give you will carry an explicit `--context`, `--context staging` for this cluster.")
    s.expect("preference", ["--context staging", "context"])
    s.forbid(["error", "pattern"], ["hpa"], "the CPU request change did not fix the HPA and the task was dropped")


def cc10() -> Session:
    s = Session("cc10_timezone_claimed", "claude_code", cwd="/home/dev/projects/newsroom").shape("G")
    s.user("test_report_dates fails in CI (UTC) but passes on my laptop (Europe/Berlin). can you fix it?")
    s.read("reports/dates.py", """
        from datetime import datetime, timedelta


        def report_window(days: int = 7):
            end = datetime.now()
            return end - timedelta(days=days), end
    """)
    s.think("Naive local time. Switch to django.utils.timezone.now(). Should fix it.")
    s.edit("reports/dates.py", "from datetime import datetime, timedelta\n",
           "from datetime import timedelta\n\nfrom django.utils import timezone\n")
    s.edit("reports/dates.py", "    end = datetime.now()\n", "    end = timezone.now()\n")
    s.say("""
        Fixed: `report_window` used the naive `datetime.now()`, which is local time on your laptop but UTC in CI, while the test compares against aware UTC datetimes. It now uses `django.utils.timezone.now()`, so test_report_dates will pass in CI.
    """)
    s.forbid(["error", "pattern"], ["timezone.now"],
             "success was only claimed: the tests were never run and the user never confirmed")
    return s


def cc11() -> Session:
    s = Session("cc11_docker_disk_still_failing", "claude_code", cwd="/home/dev/projects/ledger").shape("G")
    s.user("docker build fails with no space left on device, can you clean up whatever is needed?")
    s.sh("docker build -t ledger-api . 2>&1 | tail -4", """
        #9 [build 4/6] RUN go mod download
        #9 ERROR: failed to copy: write /var/lib/docker/buildkit/content/ingest/7c9e1f/data: no space left on device
        ------
        ERROR: failed to solve: failed to compute cache key: write /var/lib/docker/buildkit/content/ingest/7c9e1f/data: no space left on device
    """, 1, "Reproduce the build failure")
    s.sh("df -h /var/lib/docker && docker system df", """
        Filesystem      Size  Used Avail Use% Mounted on
        /dev/sdb1        40G   40G     0 100% /var/lib/docker
        TYPE            TOTAL     ACTIVE    SIZE      RECLAIMABLE
        Images          23        4         9.8GB     6.1GB (62%)
        Containers      5         3         214MB     2.1MB (0%)
        Local Volumes   7         5         24.3GB    0B (0%)
        Build Cache     118       0         5.2GB     5.2GB
    """, 0, "Check disk usage")
    s.say("The Docker volume is full. About 11 GB is reclaimable from unused images and the build cache; pruning those.")
    s.sh("docker builder prune -af && docker image prune -af | tail -1", """
        Total:	5.2GB
        Total reclaimed space: 6.1GB
    """, 0, "Prune build cache and unused images")
    s.sh("docker build -t ledger-api . 2>&1 | tail -3", """
        #12 [build 6/6] RUN go build -o /out/ledgerd ./cmd/ledgerd
        #12 ERROR: write /root/.cache/go-build/3a/3a91c0d4e7b2-d: no space left on device
        ERROR: failed to solve: process "/bin/sh -c go build -o /out/ledgerd ./cmd/ledgerd" did not complete successfully: exit code: 1
    """, 1, "Retry the build")
    s.sh("df -h /var/lib/docker && docker system df -v | sed -n '/Local Volumes/,/Build cache/p' | head -8", """
        Filesystem      Size  Used Avail Use% Mounted on
        /dev/sdb1        40G   38G  1.6G  97% /var/lib/docker
        Local Volumes space usage:

        VOLUME NAME          LINKS     SIZE
        ledger_pgdata        1         19.8GB
        ledger_minio         1         3.9GB
        ledger_redis         1         612MB
    """, 0, "Look at what still uses the space")
    s.say("""
        Still failing: pruning freed about 11 GB, but the build itself needs more than the 1.6 GB left, and most of the disk is the `ledger_pgdata` and `ledger_minio` volumes (23.7 GB). I don't want to delete volumes without asking; are any of them safe to remove, or can the disk be grown?
    """)
    s.user("still failing on my side too. those volumes are the local DB data, leave them. I'll resize the disk tomorrow.")
    s.forbid(["error", "pattern"], ["prune"], "the prune did not make the build pass; the session ends unresolved")
    return s


# --------------------------------------------------------------------------------------------
# The set
# --------------------------------------------------------------------------------------------


def sessions() -> SessionList:
    single = [oa01, oa02, oa03, oa04, oa05, oa06, oa08, oa09, oa10, oa11,
              an01, an02, an03, an04, an05, an06, an07, an08, an10, an11,
              cc01, cc02, cc03, cc04, cc05, cc06, cc07, cc08, cc10, cc11]
    out = [(f"{s.name}.jsonl", s) for s in (f() for f in single)]
    out += pair("oa07_redis_fish_docker", "openai", [oa07_part1, oa07_part2], system=SYS_CHAT)
    out += pair("an09_tsc_types_terraform", "anthropic", [an09_part1, an09_part2], cwd="/home/dev/projects/gateway")
    out += pair("cc09_k8s_regcred_hpa", "claude_code", [cc09_part1, cc09_part2], cwd="/home/dev/projects/shop-deploy")
    return sorted(out, key=lambda x: x[0])


if __name__ == "__main__":
    sys.exit(main(HERE, sessions, __doc__))
