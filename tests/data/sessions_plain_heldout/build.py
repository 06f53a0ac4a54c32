#!/usr/bin/env python3
"""Build (or check) the held-out plain-shape labelled session set.

    python build.py           # regenerate every .jsonl and labels.json, then validate
    python build.py --check   # validate the committed files only (and that they are up to date)

This set is HELD OUT: it was written after the extractor was tuned and must never be used to
tune it (no prompt, threshold or keyword changes made by looking at these files).

Stdlib only and deterministic: ids, uuids and timestamps come from a random.Random seeded by
the session's base name, so v1/v2 pairs share the same prefix byte for byte.

The rendering and validation machinery lives in ../sessions_kit.py (shared with
../sessions_plain/build.py); every conversation below is new. Each conversation is written once
in a small neutral script (user / say / think / sh / read / edit / write) and rendered into one
of three row formats:

* ``openai``      OpenAI chat messages (``tool_calls`` + ``tool`` rows)
* ``anthropic``   Anthropic Messages rows with content blocks (``tool_use`` / ``tool_result``)
* ``claude_code`` Claude Code project-export envelopes, one assistant block per row, with
                  ``file-history-snapshot``, ``progress`` and ``system`` noise rows

See README.md (and ../sessions_plain/README.md for the label schema).
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

SYS_CHAT = "You are a helpful assistant for software developers. Keep answers practical and concise."
SYS_AGENT = ("You are a coding agent with shell and file tools, working in the user's repository. "
             "Verify every change by running the relevant command again.")


def oa01() -> Session:
    s = Session("oa01_gradle_daemon_heap", "openai", system=SYS_CHAT)
    s.user("""
        Our Gradle build on the CI runner started dying halfway through compilation. Last lines of the log:

        ```
        > Task :core:compileJava
        Expiring Daemon because JVM heap space is exhausted
        Daemon will be stopped at the end of the build after running out of JVM memory

        FAILURE: Build failed with an exception.

        * What went wrong:
        Gradle build daemon disappeared unexpectedly (it may have been killed or may have crashed)
        ```

        It builds fine on my laptop. The runner has 8 GB of RAM, Gradle 8.7, JDK 21.
    """)
    s.say("""
        The runner isn't short of RAM — the Gradle daemon is. Unless told otherwise, the daemon
        JVM starts with a maximum heap of 512 MB, and a multi-module Java build with annotation
        processors easily needs more. "JVM heap space is exhausted" is the daemon noticing that, and
        "daemon disappeared unexpectedly" is the client seeing it die.

        Your laptop most likely has a `~/.gradle/gradle.properties` with a bigger heap, which the CI
        runner doesn't have. Put the setting into the project instead, so every machine gets it.
        In `gradle.properties` at the repository root:

        ```properties
        org.gradle.jvmargs=-Xmx3g -XX:MaxMetaspaceSize=768m -Dfile.encoding=UTF-8
        ```

        and commit it. With 8 GB that leaves enough for the Kotlin/Java compiler workers and the
        test JVMs. If memory is still tight afterwards, you can also cap parallelism with
        `org.gradle.workers.max=2`, but try the heap first.
    """)
    s.user("""
        yep that sorted it — committed gradle.properties with -Xmx3g and the pipeline went green twice
        in a row. and you were right, my laptop had an old ~/.gradle/gradle.properties lying around.
    """)
    s.shape("A")
    s.expect("error", ["jvmargs", "-xmx3g", "gradle.properties"], ["heap space", "daemon disappeared"])
    s.forbid("error", ["workers.max"], "only mentioned as a fallback, never applied")
    return s


def oa02() -> Session:
    s = Session("oa02_laravel_storage_link", "openai", system=SYS_CHAT)
    s.user("""
        Hola. Después de desplegar mi app Laravel 10 en el servidor nuevo, las fotos de perfil que
        suben los usuarios dan 404. Las URLs son tipo `https://app.example.com/storage/avatars/81.jpg`
        y el archivo sí existe en `storage/app/public/avatars/81.jpg`. En local funciona. ¿Qué me falta?
    """)
    s.say("""
        El disco `public` de Laravel guarda los archivos en `storage/app/public`, pero el servidor web
        solo sirve lo que hay dentro de `public/`. Las URLs `/storage/...` funcionan gracias a un
        enlace simbólico `public/storage -> storage/app/public`, que se crea con:

        ```bash
        php artisan storage:link
        ls -l public/storage
        ```

        En local lo creaste alguna vez y por eso funciona; en el servidor nuevo no existe, y tampoco
        viene con git porque `public/storage` está en `.gitignore`.

        Si despliegas con un script (Deployer, Envoyer…), añade `php artisan storage:link` a los pasos
        del despliegue para que no se pierda en el próximo release. Si nginx tiene
        `disable_symlinks on;` habría que quitarlo para esa ruta.
    """)
    s.user("""
        ¡Listo! Ejecuté storage:link en el servidor, ya cargan las fotos y no hay más 404.
        Lo añadí también al script de Deployer. ¡Gracias!
    """)
    s.shape("A")
    s.expect("error", ["storage:link", "public/storage"], ["404"])
    return s


def oa03() -> Session:
    s = Session("oa03_rust_borrow_e0502", "openai", system=SYS_AGENT,
                cwd="/home/dev/projects/stockroom")
    s.user("`cargo build` fails in the inventory crate after my refactor, can you fix it? Don't change the public API.")
    s.say("Let me reproduce it first.")
    s.sh("cargo build -p inventory", """
           Compiling inventory v0.4.0 (/home/dev/projects/stockroom/crates/inventory)
        error[E0502]: cannot borrow `*self` as mutable because it is also borrowed as immutable
          --> crates/inventory/src/store.rs:48:17
           |
        46 |         for (sku, item) in self.items.iter() {
           |                            -----------------
           |                            |
           |                            immutable borrow occurs here
           |                            immutable borrow later used here
        47 |             if item.qty < item.reorder_at {
        48 |                 self.queue_reorder(sku.clone(), item.reorder_at - item.qty);
           |                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ mutable borrow occurs here

        For more information about this error, try `rustc --explain E0502`.
        error: could not compile `inventory` (lib) due to 1 previous error
    """, code=101)
    s.read("crates/inventory/src/store.rs", """
        use std::collections::BTreeMap;

        use crate::item::Item;

        pub struct Store {
            items: BTreeMap<String, Item>,
            reorders: Vec<(String, u32)>,
        }

        impl Store {
            fn queue_reorder(&mut self, sku: String, missing: u32) {
                self.reorders.push((sku, missing));
            }

            pub fn check_stock(&mut self) {
                for (sku, item) in self.items.iter() {
                    if item.qty < item.reorder_at {
                        self.queue_reorder(sku.clone(), item.reorder_at - item.qty);
                    }
                }
            }
        }
    """)
    s.say("""
        The loop holds an immutable borrow of `self.items` for its whole body, and `queue_reorder`
        needs `&mut self`. I'll collect the low-stock entries into a Vec first and queue them after
        the loop, which keeps `check_stock` and `queue_reorder` unchanged from the outside.
    """)
    s.edit("crates/inventory/src/store.rs",
           "        for (sku, item) in self.items.iter() {\n"
           "            if item.qty < item.reorder_at {\n"
           "                self.queue_reorder(sku.clone(), item.reorder_at - item.qty);\n"
           "            }\n"
           "        }\n",
           "        let low: Vec<(String, u32)> = self\n"
           "            .items\n"
           "            .iter()\n"
           "            .filter(|(_, item)| item.qty < item.reorder_at)\n"
           "            .map(|(sku, item)| (sku.clone(), item.reorder_at - item.qty))\n"
           "            .collect();\n"
           "        for (sku, missing) in low {\n"
           "            self.queue_reorder(sku, missing);\n"
           "        }\n")
    s.sh("cargo build -p inventory", """
           Compiling inventory v0.4.0 (/home/dev/projects/stockroom/crates/inventory)
            Finished `dev` profile [unoptimized + debuginfo] target(s) in 2.84s
    """)
    s.sh("cargo test -p inventory", """
            Finished `test` profile [unoptimized + debuginfo] target(s) in 3.10s
             Running unittests src/lib.rs (target/debug/deps/inventory-5d1c0e2a9b7f3e41)

        running 17 tests
        .................
        test result: ok. 17 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s
    """)
    s.say("""
        Fixed. E0502 came from calling `queue_reorder(&mut self)` while iterating `self.items.iter()`.
        `check_stock` now collects the low-stock entries into a Vec first and queues them
        after the loop. `cargo build -p inventory` succeeds and all 17 inventory tests pass; the
        public API is unchanged.
    """)
    s.shape("B")
    s.expect("error", ["collect", "after the loop"], ["e0502", "cannot borrow"])
    return s


def oa04() -> Session:
    s = Session("oa04_helm_pending_upgrade", "openai", system=SYS_CHAT)
    s.user("""
        helm upgrade for the billing chart is stuck:

        ```
        $ helm upgrade billing ./charts/billing -n billing -f values-prod.yaml
        Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress
        ```

        Nobody is deploying right now. The last CI deploy got cancelled halfway, if that matters.
    """)
    s.say("""
        It matters — that's almost certainly the cause. When `helm upgrade` is interrupted, the
        release's newest revision stays in `pending-upgrade` status, and Helm refuses any new
        operation while a revision is pending. Check it:

        ```
        helm history billing -n billing --max 5
        ```

        The top revision will probably say `pending-upgrade`. Roll back to the last revision whose
        status is `deployed` (say 41):

        ```
        helm rollback billing 41 -n billing
        ```

        That writes a new revision with status `deployed`, and `helm upgrade` works again. Only if the
        rollback itself refuses, the fallback is deleting the pending release record
        (`kubectl -n billing delete secret sh.helm.release.v1.billing.v42`) — try rollback first.
    """)
    s.user("""
        history showed 42 as pending-upgrade, rolled back to 41 and re-ran the upgrade — can confirm
        it's fixed, revision 44 is deployed and the pods rolled.

        Going forward, always add `--atomic --timeout 10m` to any helm upgrade command you write for
        me, so a failed or cancelled deploy rolls itself back instead of leaving the release stuck.
    """)
    s.say("""
        Will do — every `helm upgrade` I give you will carry `--atomic --timeout 10m`. For this chart:

        ```
        helm upgrade billing ./charts/billing -n billing -f values-prod.yaml --atomic --timeout 10m
        ```

        Note that `--atomic` implies `--wait`, so the command now blocks until the pods are ready.
    """)
    s.shape("A", "C", "E")
    s.expect("error", ["rollback", "rolled back"], ["another operation", "pending-upgrade"])
    s.expect("preference", ["--atomic", "atomic"])
    s.forbid("error", ["sh.helm.release"], "deleting the release secret was only a fallback and was not done")
    return s


def oa05() -> Session:
    s = Session("oa05_airflow_backfill", "openai", system=SYS_CHAT)
    s.user("""
        How do I re-run our `daily_orders` Airflow DAG for just 1–12 March 2024? Upstream data for
        those days was bad and has been corrected. The other runs must not be touched, and catchup is
        off on this DAG. We're on Airflow 2.8 with the CeleryExecutor.
    """)
    s.say("""
        Use a backfill over exactly that window and let it reset the existing runs:

        1. Open a shell where the Airflow CLI has the same config and connections as the scheduler
           (e.g. `kubectl exec` into the scheduler pod).
        2. Run:

           ```
           airflow dags backfill daily_orders \\
               --start-date 2024-03-01 --end-date 2024-03-12 \\
               --reset-dagruns --yes
           ```

           `--reset-dagruns` clears the existing runs in that range so their tasks execute again;
           runs outside the range are not touched. `catchup=False` doesn't matter here — it only
           controls what the scheduler creates on its own, not an explicit backfill.
        3. If only some tasks should re-run, add a task regex, e.g. `-t '^load_'`.
        4. Check the result:

           ```
           airflow dags list-runs -d daily_orders --start-date 2024-03-01 --end-date 2024-03-12
           ```

        The UI alternative is Browse → DAG Runs, filter on the dates, select them and "Clear".
    """)
    s.user("""
        done, that worked — ran the backfill from the scheduler pod, all 12 runs are success in
        list-runs and the March numbers in the dashboard look right now.
    """)
    s.shape("D")
    s.expect("pattern", ["backfill"], ["reset-dagruns", "start-date"])
    return s


def oa06() -> Session:
    s = Session("oa06_powershell_multi", "openai", system=SYS_CHAT)
    s.user("""
        On my new Windows 11 laptop I can't run our setup script:

        ```
        PS C:\\src\\portal> .\\scripts\\setup-dev.ps1
        .\\scripts\\setup-dev.ps1 : File C:\\src\\portal\\scripts\\setup-dev.ps1 cannot be loaded because running scripts is disabled on this system.
        ```
    """)
    s.say("""
        Windows client editions ship with the execution policy `Restricted`, which blocks every `.ps1`
        file. Allow local scripts (and signed downloaded ones) for your own account — no admin rights
        needed:

        ```powershell
        Set-ExecutionPolicy -Scope CurrentUser -ExecutionPolicy RemoteSigned
        Get-ExecutionPolicy -List
        ```

        If the script came out of a downloaded zip it carries the "mark of the web" and RemoteSigned
        still blocks it; `Unblock-File .\\scripts\\setup-dev.ps1` removes that mark. Avoid setting
        `Unrestricted` or `Bypass` machine-wide.
    """)
    s.user("""
        bingo, works. setup-dev ran all the way through.

        Also, please default to PowerShell 7 (pwsh) syntax in your answers — we don't use Windows
        PowerShell 5.1 anywhere anymore, so `&&`, `??` and `ForEach-Object -Parallel` are all fine.
    """)
    s.say("""
        Noted — I'll write for PowerShell 7 (`pwsh`) by default and use its operators such as `&&`,
        `||`, `??` and `ForEach-Object -Parallel` without 5.1 workarounds.
    """)
    s.user("Next thing: something is already listening on port 8080 when I start the portal. How do I find which process it is, in pwsh?")
    s.say("""
        ```powershell
        Get-NetTCPConnection -LocalPort 8080 -State Listen |
            Select-Object LocalAddress, OwningProcess,
                @{ n = 'Name'; e = { (Get-Process -Id $_.OwningProcess).ProcessName } }
        ```

        `OwningProcess` is the PID. If it's something you can stop: `Stop-Process -Id <pid>`.
        If the PID is 4 (System), the port is held by http.sys, and
        `netsh http show servicestate` shows which URL reservation owns it.
    """)
    s.user("that found it — an old IIS Express instance (iisexpress) was sitting on it. Stopped it with Stop-Process and the portal starts on 8080 now. thanks!")
    s.shape("A", "C", "D", "E")
    s.expect("error", ["remotesigned", "set-executionpolicy"], ["running scripts is disabled", "execution policy"])
    s.expect("preference", ["powershell 7", "pwsh"])
    s.expect("pattern", ["get-nettcpconnection", "owningprocess"], ["8080", "port"])
    return s


def oa07_part1(s: Session) -> None:
    s.user(r"""
        MySQL 8.0 replica stopped replicating after the machine was offline for a week (hardware swap).
        `SHOW REPLICA STATUS\G` says:

        ```
        Replica_IO_Running: No
        Replica_SQL_Running: Yes
        Last_IO_Errno: 13114
        Last_IO_Error: Got fatal error 1236 from source when reading data from binary log: 'Could not find first log file name in binary log index file'
        ```

        How do I get it back?
    """)
    s.say(r"""
        Error 1236 with "Could not find first log file name" means the replica wants to continue from
        a binary log file that the source has already purged. The source only keeps binlogs for
        `binlog_expire_logs_seconds` (check with `SHOW VARIABLES LIKE 'binlog_expire_logs_seconds'`).
        Once the file is gone the replica cannot catch up from the log — you have to re-seed it from a
        fresh copy of the source.

        1. On the source, take a consistent dump that records the binlog coordinates:

           ```
           mysqldump --all-databases --single-transaction --source-data=2 \
               --routines --events --triggers > seed.sql
           ```

        2. On the replica:

           ```
           STOP REPLICA;
           RESET REPLICA ALL;
           ```

           load `seed.sql`, then point it at the source again and start it:

           ```
           CHANGE REPLICATION SOURCE TO SOURCE_HOST='db1.internal', SOURCE_USER='repl',
               SOURCE_PASSWORD='<the repl password>', SOURCE_AUTO_POSITION=1;
           START REPLICA;
           ```

           (Without GTIDs use the SOURCE_LOG_FILE / SOURCE_LOG_POS from the comment at the top of
           seed.sql instead of SOURCE_AUTO_POSITION.)

        3. So it doesn't happen after the next long outage, raise `binlog_expire_logs_seconds` on the
           source to cover it, e.g. 14 days = 1209600.
    """)
    s.user("""
        搞定了，谢谢！重新用 mysqldump --source-data 导了一遍，Replica_IO_Running 和 Replica_SQL_Running
        现在都是 Yes。binlog_expire_logs_seconds 也改成了 14 天。
    """)
    s.shape("A", "F")
    s.expect("error", ["mysqldump", "re-seed", "source-data"], ["1236", "could not find first log file"])


def oa07_part2(s: Session) -> None:
    s.user("""
        以后请用中文回答（please answer in Chinese from now on），命令和报错信息保持英文就好。
        还有一个问题：平时怎么监控复制延迟？
    """)
    s.say(r"""
        好的，以后我都用中文回答，命令和报错保持英文原文。

        监控复制延迟常用三种方法：

        1. 在副本上执行 `SHOW REPLICA STATUS\G`，看 `Seconds_Behind_Source`。简单，但它只比较 SQL
           线程正在执行的事件的时间戳，IO 线程落后时会显示 0，不太可靠。
        2. 更准确的是 `pt-heartbeat`：在主库上
           `pt-heartbeat --update -D percona --create-table --daemonize`，
           在副本上 `pt-heartbeat --monitor -D percona` 或 `--check`，得到的是真实的延迟秒数，
           可以直接接到监控里。
        3. MySQL 8.0 也可以查 `performance_schema.replication_applier_status_by_worker`，
           用 `LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP` 和 `LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP`
           的差值计算延迟。
    """)
    s.user("试过了，pt-heartbeat 那个可以用，监控里现在能看到延迟，稳定在 0.3 秒左右。谢谢！")
    s.shape("C", "D", "E")
    s.expect("preference", ["中文", "chinese"])
    s.expect("pattern", ["pt-heartbeat", "seconds_behind_source"], ["延迟", "replica", "replication"])


def oa08() -> Session:
    s = Session("oa08_docker_dns_still_failing", "openai", system=SYS_CHAT)
    s.user("""
        Containers on our build host can't resolve anything internal:

        ```
        $ docker run --rm curlimages/curl -sS https://artifacts.corp.example.com/health
        curl: (6) Could not resolve host: artifacts.corp.example.com
        ```

        On the host itself `curl https://artifacts.corp.example.com/health` works. Ubuntu 22.04, Docker 24.
    """)
    s.say("""
        On Ubuntu the host's `/etc/resolv.conf` points at the systemd-resolved stub on 127.0.0.53.
        A loopback resolver is useless inside a container's network namespace, so Docker falls back to
        public DNS servers, which don't know your internal zone.

        Give Docker the real upstream servers. Find them with `resolvectl status` ("DNS Servers" on the
        uplink, e.g. 10.20.0.2), then in `/etc/docker/daemon.json`:

        ```json
        { "dns": ["10.20.0.2"], "dns-search": ["corp.example.com"] }
        ```

        and `sudo systemctl restart docker`. Containers created afterwards get that resolver.
    """)
    s.user("""
        nope, same error. daemon.json has the dns entry, docker restarted,
        `docker run --rm curlimages/curl cat /etc/resolv.conf` now shows nameserver 10.20.0.2 — but curl
        still says Could not resolve host.
    """)
    s.say("""
        Then the configuration reaches the container, but the query to 10.20.0.2 isn't answered from
        there. Compare the two paths directly:

        ```
        dig @10.20.0.2 artifacts.corp.example.com
        docker run --rm nicolaka/netshoot dig @10.20.0.2 artifacts.corp.example.com
        ```

        If the second one times out, something between the docker bridge and the DNS server drops the
        traffic — typically a firewall rule on the DNS server that only allows known source addresses,
        or a VPN route the bridge network doesn't use. `docker run --network host ...` is a quick way to
        confirm it.
    """)
    s.user("dig from the container times out, from the host it works. I'm out of time today — I'll ask the network team to look at the firewall on the DNS box tomorrow.")
    s.shape("G")
    s.forbid(["error", "pattern"], ["daemon.json"], "setting dns in daemon.json did not fix it; user reported the same error")
    s.forbid("error", ["could not resolve host", "dns-search"], "no fix was confirmed; the problem is still open")
    return s


def oa09() -> Session:
    s = Session("oa09_k8s_crashloop_claimed", "openai", system=SYS_AGENT,
                cwd="/home/dev/projects/ledger-deploy")
    s.user("The `ledger` deployment in staging is in CrashLoopBackOff since this morning's release. Can you sort it out? kubectl points at staging.")
    s.sh("kubectl -n ledger get pods", """
        NAME                      READY   STATUS             RESTARTS       AGE
        ledger-6d8f7b9c54-8kq2m   0/1     CrashLoopBackOff   14 (95s ago)   52m
        ledger-6d8f7b9c54-tw7pl   0/1     CrashLoopBackOff   14 (71s ago)   52m
    """)
    s.sh("kubectl -n ledger logs deploy/ledger --previous --tail=6", """
        2026-02-03T09:41:02Z INFO  ledger starting, version 3.18.0
        2026-02-03T09:41:02Z INFO  connected to postgres ledger-db:5432
        2026-02-03T09:41:03Z INFO  running database migrations (412 pending)
        2026-02-03T09:41:38Z INFO  migration 0127_split_postings applied
        2026-02-03T09:41:43Z WARN  received SIGTERM, shutting down
        2026-02-03T09:41:43Z INFO  bye
    """)
    s.sh("kubectl -n ledger describe pod ledger-6d8f7b9c54-8kq2m | grep -E 'Liveness|Unhealthy'", """
            Liveness:   http-get http://:8080/healthz delay=10s timeout=1s period=10s #success=1 #failure=3
          Warning  Unhealthy  3m (x42 over 52m)  kubelet  Liveness probe failed: Get "http://10.42.3.17:8080/healthz": dial tcp 10.42.3.17:8080: connect: connection refused
    """)
    s.say("""
        The pods are killed by the liveness probe while the startup migrations run: 10 s initial
        delay plus 3 failures × 10 s is about 40 s, and this release has 412 migrations. I'll give the
        probe more time.
    """)
    s.edit("k8s/staging/ledger-deployment.yaml",
           "            initialDelaySeconds: 10\n",
           "            initialDelaySeconds: 180\n")
    s.sh("kubectl apply -f k8s/staging/ledger-deployment.yaml", "deployment.apps/ledger configured")
    s.say("""
        Done — the CrashLoopBackOff is fixed. The liveness probe now waits 180 seconds before the first
        check, which is plenty for the migrations, so the pods will stay up.
    """)
    s.user("ok, I'll have a look at it after lunch.")
    s.shape("G")
    s.forbid(["error", "pattern"], ["initialdelayseconds"],
             "success only claimed by the agent; the rollout was never checked and the user did not confirm")
    return s


def oa10() -> Session:
    s = Session("oa10_crontab_always_qna", "openai", system=SYS_CHAT)
    s.user("""
        Quick question, no change needed. The report mailer on the old box always ran fine, and the guy
        who set it up never wrote anything down. The crontab line is:

        ```
        15 6 * * 1-5 cd /opt/reports && ./send.sh >> /var/log/reports.log 2>&1
        ```

        What exactly does this schedule mean, and what does the `2>&1` at the end do?
    """)
    s.say("""
        - `15 6 * * 1-5`: minute 15, hour 6, any day of the month, any month, weekdays 1–5 — so
          06:15 Monday to Friday, in the server's local time zone (unless the crontab sets `CRON_TZ`).
        - `cd /opt/reports && ./send.sh`: the script only runs if the `cd` succeeded.
        - `>> /var/log/reports.log` appends standard output to the log file.
        - `2>&1` sends standard error to wherever standard output currently goes, so errors land in the
          same log. The order matters: `2>&1 >> file` would leave stderr going to cron's mail instead.
    """)
    s.user("thanks for explaining, that's clear now.")
    s.shape("G")
    s.forbid("preference", ["cron"], "'always ran fine' and 'never wrote anything down' describe the past, they are not preferences")
    s.forbid(["pattern", "error"], ["2>&1"], "pure Q&A explanation, nothing was done or confirmed")
    return s


def oa11() -> Session:
    s = Session("oa11_redis_latency_partial", "openai", system=SYS_CHAT)
    s.user("""
        Our API talks to a Redis 7 instance and since we moved it to a new VM we have two problems:

        1. every now and then the app logs `redis.exceptions.ConnectionError: Connection closed by server.`
           on the first command after a quiet period;
        2. the real problem: p99 latency of Redis calls spikes to 300–800 ms every few minutes, which
           makes checkout slow.

        The config is mostly default.
    """)
    s.say("""
        (1) Idle connections are being dropped — either Redis' own `timeout` or, more likely on a new VM,
        a NAT or firewall that forgets idle flows. Set `tcp-keepalive 60` in redis.conf (and keep
        `timeout 0`), and on the client use `health_check_interval=30` so stale connections are noticed
        before a real command hits them.

        (2) Regular spikes every few minutes on a default config very often come from RDB snapshots:
        the default `save` rules trigger a BGSAVE, and `fork()` of a large instance on a VM with
        transparent huge pages can stall Redis for hundreds of milliseconds. Check `INFO persistence`
        (`latest_fork_usec`) and `LATENCY LATEST`. If the fork is the cause: disable THP
        (`echo never > /sys/kernel/mm/transparent_hugepage/enabled`) and/or stop snapshotting on the
        primary with `save ""` and take snapshots on a replica.
    """)
    s.user("""
        Did all of it: tcp-keepalive 60 + health_check_interval, THP disabled, save "" on the primary.
        The ConnectionError messages are gone, but the main problem remains — p99 still spikes to
        ~600 ms every few minutes and checkout is still slow. latest_fork_usec is tiny now, so it
        wasn't the snapshots. I'll dig further next week.
    """)
    s.shape("G")
    s.forbid("error", ["transparent_hugepage"], "disabling THP did not fix the latency spikes; the main problem remains")
    s.forbid("error", ["save \"\"", "latency"], "stopping snapshots did not fix the latency spikes")
    return s


# --------------------------------------------------------------------------------------------
# Sessions: Anthropic Messages
# --------------------------------------------------------------------------------------------


def an01() -> Session:
    s = Session("an01_xcode_script_sandboxing", "anthropic")
    s.user("""
        After updating to Xcode 15 our iOS app no longer archives. The build log ends with:

        ```
        Sandbox: rsync.samba(21473) deny(1) file-write-create /Users/dev/Library/Developer/Xcode/DerivedData/Notes/Build/Intermediates.noindex/ArchiveIntermediates/Notes/BuildProductsPath/Release-iphoneos/Notes.app/Frameworks/Alamofire.framework/.Alamofire.XXXXXX
        Command PhaseScriptExecution failed with a nonzero exit code
        ```

        The failing phase is `[CP] Embed Pods Frameworks`. Debug builds on the simulator still work.
    """)
    s.think("""
        Xcode 15 user script sandboxing; the CocoaPods embed script writes outside declared outputs.
    """)
    s.say("""
        Xcode 15 enables **user script sandboxing** (`ENABLE_USER_SCRIPT_SANDBOXING = YES`) for new and
        upgraded projects. Run-script phases may then only write to files they declare as outputs. The
        CocoaPods `[CP] Embed Pods Frameworks` script copies the frameworks into the app bundle with
        rsync without declaring them, so the sandbox denies the write — that is the
        `Sandbox: rsync.samba ... deny(1) file-write-create` line, and PhaseScriptExecution fails as a
        consequence.

        Fix: select the Notes target → Build Settings → search for "User Script Sandboxing" → set it to
        **No**. To do it for the Pods targets too, add to the Podfile:

        ```ruby
        post_install do |installer|
          installer.pods_project.targets.each do |t|
            t.build_configurations.each { |c| c.build_settings['ENABLE_USER_SCRIPT_SANDBOXING'] = 'NO' }
          end
        end
        ```

        Then Product → Clean Build Folder (⇧⌘K) and archive again.
    """)
    s.user("""
        all good after the restart — set User Script Sandboxing to No on the app target, cleaned the build
        folder, and had to restart Xcode because it kept using the old setting. Archive went through and
        the build is already on TestFlight.
    """)
    s.say("Great. Keep the setting in mind when you add new run-script phases — with sandboxing off they can write anywhere again.")
    s.shape("A")
    s.expect("error", ["user script sandboxing", "enable_user_script_sandboxing"],
             ["phasescriptexecution", "sandbox", "rsync"])
    return s


def an02() -> Session:
    s = Session("an02_s3_putobject_accessdenied", "anthropic")
    s.user("""
        Our export Lambda gets AccessDenied when writing to S3:

        ```
        botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the PutObject operation: User: arn:aws:sts::111122223333:assumed-role/export-lambda-role/export-nightly is not authorized to perform: s3:PutObject on resource: "arn:aws:s3:::acme-exports/nightly/2024-05-02.csv" because no identity-based policy allows the s3:PutObject action
        ```

        The role policy definitely has PutObject in it:

        ```json
        {
          "Effect": "Allow",
          "Action": ["s3:PutObject", "s3:ListBucket"],
          "Resource": "arn:aws:s3:::acme-exports"
        }
        ```
    """)
    s.say("""
        The action is there, but the resource is the **bucket** ARN, and `s3:PutObject` acts on
        **objects**. Object ARNs have the key appended — `arn:aws:s3:::acme-exports/...`. `s3:ListBucket`
        is the opposite: it needs the bucket ARN. So one statement can't serve both; split it:

        ```json
        [
          {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::acme-exports"},
          {"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::acme-exports/nightly/*"}
        ]
        ```

        Scoping it to `nightly/*` also keeps the Lambda from writing anywhere else. (If the bucket used
        SSE-KMS with a customer-managed key you'd additionally need `kms:GenerateDataKey` on that key,
        but "no identity-based policy allows" points at the resource mismatch, not KMS.)
    """)
    s.user("no more 403s — split the statement like you showed, last night's export landed in nightly/ without errors.")
    s.say("Good to hear. The same bucket-vs-object split applies to GetObject and DeleteObject if the Lambda ever needs them.")
    s.shape("A")
    s.expect("error", ["acme-exports/nightly/*", "object arn"], ["accessdenied", "putobject"])
    s.forbid("error", ["kms:generatedatakey"], "KMS was only mentioned as an aside, it was not the fix")
    return s


def an03() -> Session:
    s = Session("an03_elixir_mix_deps", "anthropic", cwd="/home/dev/projects/courier")
    s.user("mix test is broken on my machine after pulling main. Can you fix it?")
    s.say("Let me run it.")
    s.sh("mix test", """
        Unchecked dependencies for environment test:
        * jason (Hex package)
          the dependency does not match the requirement "~> 1.4", got "1.2.2"
        * req (Hex package)
          lock mismatch: the dependency is out of date. To fetch locked version run "mix deps.get"
        ** (Mix) Can't continue due to errors on dependencies
    """, code=1)
    s.think("""
        main bumped mix.lock; local deps/ is stale. deps.get should fetch the locked versions.
        Nothing to change in the repo.
    """)
    s.say("main bumped the dependency versions in mix.lock, and your local `deps/` still holds the old ones. Fetching the locked versions should be enough.")
    s.sh("mix deps.get", """
        Resolving Hex dependencies...
        Resolution completed in 0.214s
        Unchanged:
          finch 0.18.0
          mint 1.6.1
          telemetry 1.2.1
        Upgraded:
          jason 1.2.2 => 1.4.1
          req 0.4.5 => 0.4.14
        * Updating jason (Hex package)
        * Updating req (Hex package)
    """)
    s.sh("mix test", """
        ==> jason
        Compiling 10 files (.ex)
        Generated jason app
        ==> req
        Compiling 17 files (.ex)
        Generated req app
        ==> courier
        Compiling 31 files (.ex)
        Generated courier app
        ..........................................................
        Finished in 3.2 seconds (1.1s async, 2.1s sync)
        58 tests, 0 failures

        Randomized with seed 40211
    """)
    s.say("""
        Fixed. Your `deps/` was behind `mix.lock` (jason 1.2.2 where `~> 1.4` is required, and an
        outdated req). `mix deps.get` fetched the locked versions and `mix test` now passes:
        58 tests, 0 failures. Nothing in the repository changed.
    """)
    s.shape("B")
    s.expect("error", ["deps.get"], ["unchecked dependencies", "does not match the requirement", "lock mismatch"])
    return s


def an04() -> Session:
    s = Session("an04_spark_timestamp_parse", "anthropic", cwd="/home/dev/projects/orders-etl")
    s.user("The ingest test fails since we moved to Spark 3.5. Fix it please — but don't switch the whole session to legacy mode.")
    s.sh("pytest tests/test_ingest.py -q", """
        F.                                                                       [100%]
        =================================== FAILURES ===================================
        _______________________________ test_parse_orders ______________________________
        tests/test_ingest.py:21: in test_parse_orders
            rows = parse_orders(df).collect()
        E   pyspark.errors.exceptions.captured.SparkUpgradeException: [INCONSISTENT_BEHAVIOR_CROSS_VERSION.PARSE_DATETIME_BY_NEW_PARSER] You may get a different result due to the upgrading to Spark >= 3.0:
        E   Fail to parse '2024-3-7 9:05' in the new parser. You can set "spark.sql.legacy.timeParserPolicy" to "LEGACY" to restore the behavior before Spark 3.0, or set to "CORRECTED" and treat it as an invalid datetime string.
        =========================== short test summary info ============================
        FAILED tests/test_ingest.py::test_parse_orders - pyspark.errors.exceptions.captured.SparkUpgradeException
        ========================= 1 failed, 1 passed in 14.82s =========================
    """, code=1)
    s.read("etl/ingest.py", """
        from pyspark.sql import DataFrame, functions as F

        ORDER_TS_FORMAT = "yyyy-MM-dd HH:mm"


        def parse_orders(df: DataFrame) -> DataFrame:
            return (
                df.withColumn("order_ts", F.to_timestamp("order_ts_raw", ORDER_TS_FORMAT))
                  .withColumn("amount", F.col("amount_raw").cast("decimal(12,2)"))
                  .drop("order_ts_raw", "amount_raw")
            )
    """)
    s.think("""
        Upstream sends unpadded month/day/hour. New parser: MM/dd/HH need two digits; M/d/H accept one
        or two. Change the pattern rather than the policy, as asked.
    """)
    s.say("""
        The upstream file has unpadded month, day and hour (`2024-3-7 9:05`). Spark 3's parser treats
        `MM`, `dd` and `HH` as exactly two digits, while the old parser was lenient. Single pattern
        letters accept one or two digits, so I'll change the format pattern instead of touching
        timeParserPolicy.
    """)
    s.edit("etl/ingest.py",
           'ORDER_TS_FORMAT = "yyyy-MM-dd HH:mm"\n',
           'ORDER_TS_FORMAT = "yyyy-M-d H:mm"  # also accepts unpadded values like 2024-3-7 9:05\n')
    s.sh("pytest tests/test_ingest.py -q", """
        ..                                                                       [100%]
        2 passed in 12.97s
    """)
    s.say("""
        Fixed: the pattern is now `yyyy-M-d H:mm`, which parses both padded and unpadded timestamps with
        the Spark 3 parser. `tests/test_ingest.py` passes (2 passed) and the session config is untouched.
    """)
    s.shape("B")
    s.expect("error", ["yyyy-m-d", "unpadded"], ["sparkupgradeexception", "fail to parse"])
    return s


def an05() -> Session:
    s = Session("an05_never_force_push", "anthropic")
    s.user("""
        One standing rule before we start on anything in this repo: never force-push to `main` or to any
        `release/*` branch, not even with --force-with-lease. If history there needs rewriting, stop and
        ask me. On your own feature branches it's fine.
    """)
    s.say("""
        Understood. I won't force-push (including `--force-with-lease`) to `main` or any `release/*`
        branch; if a rewrite there looks necessary I'll stop and ask you first. Force-pushing my own
        feature branches stays allowed.
    """)
    s.shape("C")
    s.expect("preference", ["force-push", "force-with-lease"], ["main", "release"])
    return s


def an06() -> Session:
    s = Session("an06_maven_properties_thanks", "anthropic", cwd="/home/dev/projects/payments-api")
    s.user("Add Testcontainers for PostgreSQL to the test scope in pom.xml — we want to replace the H2 tests.")
    s.read("pom.xml", """
        <project xmlns="http://maven.apache.org/POM/4.0.0">
            <modelVersion>4.0.0</modelVersion>
            <groupId>com.example</groupId>
            <artifactId>payments-api</artifactId>
            <version>0.9.0-SNAPSHOT</version>

            <properties>
                <java.version>21</java.version>
                <mapstruct.version>1.5.5.Final</mapstruct.version>
            </properties>

            <dependencies>
                <dependency>
                    <groupId>org.mapstruct</groupId>
                    <artifactId>mapstruct</artifactId>
                    <version>${mapstruct.version}</version>
                </dependency>
                <dependency>
                    <groupId>com.h2database</groupId>
                    <artifactId>h2</artifactId>
                    <scope>test</scope>
                </dependency>
            </dependencies>
        </project>
    """)
    s.edit("pom.xml",
           "        <dependency>\n            <groupId>com.h2database</groupId>\n",
           "        <dependency>\n"
           "            <groupId>org.testcontainers</groupId>\n"
           "            <artifactId>postgresql</artifactId>\n"
           "            <version>1.19.8</version>\n"
           "            <scope>test</scope>\n"
           "        </dependency>\n"
           "        <dependency>\n            <groupId>com.h2database</groupId>\n")
    s.sh("./mvnw dependency:tree -Dincludes=org.testcontainers", r"""
        [INFO] --- dependency:3.6.1:tree (default-cli) @ payments-api ---
        [INFO] com.example:payments-api:jar:0.9.0-SNAPSHOT
        [INFO] \- org.testcontainers:postgresql:jar:1.19.8:test
        [INFO]    \- org.testcontainers:jdbc:jar:1.19.8:test
        [INFO] BUILD SUCCESS
    """)
    s.say("Added `org.testcontainers:postgresql` 1.19.8 with test scope; the dependency tree resolves.")
    s.user("""
        Thanks, that's what I needed. For the future: always put dependency versions into the
        <properties> block as `<something.version>` and reference them with `${something.version}` —
        never inline in the <dependency> itself, like we already do for mapstruct.
    """)
    s.say("Got it — versions go into `<properties>` and get referenced from the dependency. I'll move this one now.")
    s.edit("pom.xml",
           "        <mapstruct.version>1.5.5.Final</mapstruct.version>\n",
           "        <mapstruct.version>1.5.5.Final</mapstruct.version>\n"
           "        <testcontainers.version>1.19.8</testcontainers.version>\n")
    s.edit("pom.xml",
           "            <version>1.19.8</version>\n",
           "            <version>${testcontainers.version}</version>\n")
    s.sh("./mvnw dependency:tree -Dincludes=org.testcontainers", r"""
        [INFO] --- dependency:3.6.1:tree (default-cli) @ payments-api ---
        [INFO] com.example:payments-api:jar:0.9.0-SNAPSHOT
        [INFO] \- org.testcontainers:postgresql:jar:1.19.8:test
        [INFO]    \- org.testcontainers:jdbc:jar:1.19.8:test
        [INFO] BUILD SUCCESS
    """)
    s.say("Done: `testcontainers.version` lives in `<properties>` and the dependency uses `${testcontainers.version}`; it still resolves to 1.19.8.")
    s.shape("C")
    s.expect("preference", ["<properties>", "properties"], ["version"])
    return s


def an07() -> Session:
    s = Session("an07_systemd_timer_howto", "anthropic")
    s.user("""
        How do I replace this root crontab entry with a systemd timer?

        ```
        30 2 * * * /usr/local/bin/pg-backup.sh
        ```

        I want the output in journald, and if the machine was off at 02:30 it should run after boot.
    """)
    s.say("""
        Two units plus a cleanup:

        1. `/etc/systemd/system/pg-backup.service`

           ```ini
           [Unit]
           Description=Nightly PostgreSQL backup

           [Service]
           Type=oneshot
           ExecStart=/usr/local/bin/pg-backup.sh
           ```

        2. `/etc/systemd/system/pg-backup.timer`

           ```ini
           [Unit]
           Description=Run pg-backup nightly

           [Timer]
           OnCalendar=*-*-* 02:30:00
           Persistent=true
           RandomizedDelaySec=5m

           [Install]
           WantedBy=timers.target
           ```

           `Persistent=true` gives you the run-after-boot behaviour when 02:30 was missed.
        3. Load and start the timer:

           ```
           sudo systemctl daemon-reload
           sudo systemctl enable --now pg-backup.timer
           systemctl list-timers pg-backup.timer
           ```

        4. Test one run right away with `sudo systemctl start pg-backup.service`; its output is in
           `journalctl -u pg-backup.service`.
        5. Remove the line from root's crontab (`sudo crontab -e`) so the backup doesn't run twice.
    """)
    s.user("""
        done, that worked. list-timers shows the next run at 02:33 (the random delay, I guess), a manual
        start wrote the dump and its output is in journalctl -u pg-backup.service. Crontab line removed.
    """)
    s.say("Perfect. `systemctl status pg-backup.service` after the first night will show the last result too.")
    s.shape("D")
    s.expect("pattern", ["oncalendar", "persistent=true", "list-timers"], ["timer"])
    return s


def an08() -> Session:
    s = Session("an08_bundler_rubocop_flaky", "anthropic", cwd="/home/dev/projects/storefront")
    s.user("`bundle install` fails after I pulled. Fix please.")
    s.sh("bundle install", """
        Fetching gem metadata from https://rubygems.org/.........
        Installing psych 5.1.2 with native extensions
        Gem::Ext::BuildError: ERROR: Failed to build gem native extension.

            current directory: /home/dev/.gem/ruby/3.3.0/gems/psych-5.1.2/ext/psych
        /home/dev/.rubies/ruby-3.3.0/bin/ruby extconf.rb
        checking for yaml.h... no
        yaml.h not found
        *** extconf.rb failed ***

        An error occurred while installing psych (5.1.2), and Bundler cannot continue.
    """, code=5)
    s.think("psych 5 no longer bundles libyaml; needs the system headers (libyaml-dev on Ubuntu).")
    s.say("psych 5 doesn't bundle libyaml any more and compiles against the system headers, which aren't installed. Installing them:")
    s.sh("sudo apt-get install -y libyaml-dev", """
        Reading package lists... Done
        Building dependency tree... Done
        The following NEW packages will be installed:
          libyaml-dev
        Setting up libyaml-dev:amd64 (0.2.5-1build1) ...
    """)
    s.sh("bundle install", """
        Fetching gem metadata from https://rubygems.org/.........
        Installing psych 5.1.2 with native extensions
        Bundle complete! 64 Gemfile dependencies, 171 gems now installed.
        Use `bundle info [gemname]` to see where a bundled gem is installed.
    """)
    s.say("Fixed: `libyaml-dev` provides yaml.h, psych 5.1.2 builds, and `bundle install` completes (171 gems).")
    s.user("Nice. From here on, always run `bundle exec rubocop -a` on the files you touched before you hand work back to me.")
    s.say("Will do — `bundle exec rubocop -a` on every file I touch before I report back.")
    s.user("Now: spec/system/checkout_spec.rb fails maybe one run in five on CI with a Capybara::ElementNotFound. Can you look?")
    s.sh("bundle exec rspec spec/system/checkout_spec.rb", """
        ..F

        Failures:

          1) Checkout applies a coupon code
             Failure/Error: expect(page).to have_css(".order-total", text: "$45.00")
               expected to find css ".order-total" with text "$45.00" but there were no matches. Also found "$50.00", which matched the selector but not all filters.

        3 examples, 1 failure
    """, code=1)
    s.say("I'll add rspec-retry so JS system specs get up to 3 attempts.")
    s.edit("Gemfile", "group :test do\n", "group :test do\n  gem \"rspec-retry\"\n")
    s.edit("spec/rails_helper.rb",
           "RSpec.configure do |config|\n",
           "require \"rspec/retry\"\n\nRSpec.configure do |config|\n"
           "  config.around(:each, :js) { |ex| ex.run_with_retry retry: 3 }\n")
    s.sh("bundle install --quiet && bundle exec rspec spec/system/checkout_spec.rb", """
        ...

        Finished in 9.41 seconds (files took 2.1 seconds to load)
        3 examples, 0 failures
    """)
    s.sh("bundle exec rubocop -a Gemfile spec/rails_helper.rb", """
        Inspecting 2 files
        ..

        2 files inspected, no offenses detected
    """)
    s.say("The flaky spec is handled: JS system specs now retry up to 3 times and checkout_spec passes. Rubocop is clean on the touched files.")
    s.user("""
        No — that just hides it. Please revert the rspec-retry change; I want the race in the coupon
        JavaScript fixed properly, not retried away. We'll look at it together tomorrow.
    """)
    s.sh("git checkout -- Gemfile Gemfile.lock spec/rails_helper.rb && git status --short", "")
    s.say("Reverted — Gemfile, Gemfile.lock and spec/rails_helper.rb are back to their committed state and the working tree is clean.")
    s.shape("B", "C", "E", "G")
    s.expect("error", ["libyaml-dev"], ["psych", "yaml.h"])
    s.expect("preference", ["rubocop"])
    s.forbid(["error", "pattern"], ["rspec-retry"], "the user rejected and reverted the retry workaround")
    return s


def an09_part1(s: Session) -> None:
    s.user("Trying to build this repo's flake on my fresh Nix install and it errors straight away. Can you get `nix build` working?")
    s.sh("nix build .#default", """
        error: experimental Nix feature 'nix-command' is disabled; add '--extra-experimental-features nix-command' to enable it
    """, code=1)
    s.think("Official installer leaves nix-command and flakes off. Enable both in the user nix.conf.")
    s.say("A fresh install from the official installer leaves the `nix-command` and `flakes` features off. I'll enable both in your user-level nix.conf.")
    s.sh("cat ~/.config/nix/nix.conf 2>/dev/null || echo '(no user nix.conf yet)'", "(no user nix.conf yet)")
    s.write("/home/dev/.config/nix/nix.conf", """
        experimental-features = nix-command flakes
    """)
    s.sh("nix build .#default && ./result/bin/tiler --version", """
        tiler 0.7.2
    """)
    s.say("""
        Fixed: `~/.config/nix/nix.conf` now contains `experimental-features = nix-command flakes`.
        `nix build .#default` succeeds and `./result/bin/tiler --version` prints 0.7.2.
    """)
    s.shape("B", "F")
    s.expect("error", ["experimental-features", "nix.conf"], ["nix-command", "experimental nix feature"])


def an09_part2(s: Session) -> None:
    s.user("""
        Thanks. Something to keep in mind permanently: please don't ever run `nix flake update` (or update
        single inputs) without asking me first — flake.lock stays as it is unless I say so. Bumping
        nixpkgs here breaks the GDAL bindings every time.

        And: how do I get a dev shell with Python 3.12 and poetry from this flake, so I don't need them
        installed globally?
    """)
    s.say("Understood — no `nix flake update` or `nix flake lock --update-input` without asking you; flake.lock stays untouched. For the dev shell, let me look at flake.nix.")
    s.read("flake.nix", """
        {
          inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.05";
          outputs = { self, nixpkgs }:
            let pkgs = nixpkgs.legacyPackages.x86_64-linux;
            in {
              packages.x86_64-linux.default = pkgs.callPackage ./nix/tiler.nix { };
            };
        }
    """)
    s.edit("flake.nix",
           "              packages.x86_64-linux.default = pkgs.callPackage ./nix/tiler.nix { };\n",
           "              packages.x86_64-linux.default = pkgs.callPackage ./nix/tiler.nix { };\n"
           "              devShells.x86_64-linux.default = pkgs.mkShell {\n"
           "                packages = [ pkgs.python312 pkgs.poetry ];\n"
           "              };\n")
    s.sh("nix develop -c python --version && nix develop -c poetry --version", """
        Python 3.12.4
        Poetry (version 1.8.3)
    """)
    s.say("""
        Added a `devShells.x86_64-linux.default` output built with `pkgs.mkShell` that provides
        `python312` and `poetry`, using the nixpkgs already pinned in flake.lock (no update needed).

        - `nix develop` drops you into the shell; `nix develop -c <cmd>` runs a single command in it.
        - Optional: with direnv, put `use flake` in `.envrc` and the shell loads when you `cd` in.
    """)
    s.user("hat geklappt, danke — `nix develop` gibt mir eine Shell mit Python 3.12 und poetry, und `use flake` mit direnv funktioniert auch.")
    s.say("Schön! Die `.envrc` kannst du committen, dann bekommt jeder im Team dieselbe Shell.")
    s.shape("C", "D", "E")
    s.expect("preference", ["flake update", "flake.lock"])
    s.expect("pattern", ["devshells", "mkshell", "nix develop"], ["poetry", "python312", "python 3.12"])


def an10() -> Session:
    s = Session("an10_dns_cname_apex_qna", "anthropic")
    s.user("""
        Conceptual question, I'm not changing anything yet: why can't I put a CNAME on the bare domain
        (example.org) when my DNS host lets me do it for www? And what is this "ALIAS" record type our
        provider offers instead?
    """)
    s.say("""
        A CNAME says "this name is an alias of that other name — for every record type". Because of that,
        the DNS standard (RFC 1034) forbids a CNAME from coexisting with any other record at the same
        name. The zone apex (`example.org` itself) must always carry the SOA and NS records, so a CNAME
        there would conflict with them. `www` has no other records, so a CNAME is fine.

        "ALIAS" (also called ANAME or CNAME flattening) is not a real record type on the wire. The
        provider resolves the target name itself and answers queries for the apex with plain A/AAAA
        records, so resolvers never see a CNAME. Trade-offs: the answer reflects the provider's view of
        the target, so CDN geo-routing can be less precise, and TTLs are controlled by the provider.
    """)
    s.user("thanks for explaining, that makes sense now. Our old DNS admin always said \"never touch the apex\" and now I finally know why.")
    s.say("Glad it helped!")
    s.shape("G")
    s.forbid("preference", ["apex"], "'always said never touch the apex' describes someone else's habit, not a user preference")
    s.forbid(["pattern", "error"], ["alias", "cname"], "pure Q&A thanked; nothing was done or confirmed")
    return s


def an11() -> Session:
    s = Session("an11_composer_platform_reverted", "anthropic", cwd="/home/dev/projects/tenant-portal")
    s.user("composer install fails on the build box, can you take a look?")
    s.sh("composer install --no-dev", """
        Installing dependencies from lock file
        Verifying lock file contents can be installed on current platform.
        Your lock file does not contain a compatible set of packages. Please run composer update.

          Problem 1
            - laravel/framework is locked to version v10.48.4 and an update of this package was not requested.
            - laravel/framework v10.48.4 requires php ^8.1 -> your php version (8.0.30) does not satisfy that requirement.
    """, code=2)
    s.say("The build box runs PHP 8.0.30 and Laravel 10 needs 8.1. I'll tell Composer to resolve for PHP 8.1 so the install goes through.")
    s.edit("composer.json",
           '    "config": {\n        "optimize-autoloader": true,\n',
           '    "config": {\n        "platform": {"php": "8.1.27"},\n        "optimize-autoloader": true,\n')
    s.sh("composer install --no-dev", """
        Installing dependencies from lock file
        Verifying lock file contents can be installed on current platform.
        Package operations: 87 installs, 0 updates, 0 removals
        Generating optimized autoload files
    """)
    s.say("Fixed — composer install succeeds on the build box now.")
    s.user("""
        Hmm, no. That only makes Composer pretend we're on 8.1 — the code still runs on PHP 8.0 in
        production and will blow up on the first 8.1 feature. Please revert the platform override. The
        real fix is upgrading PHP on the build box and the servers; I'll raise it with ops.
    """)
    s.edit("composer.json",
           '        "platform": {"php": "8.1.27"},\n',
           "")
    s.sh("git diff --stat composer.json", "")
    s.say("Reverted: composer.json no longer has the platform override and `git diff` is clean. `composer install` will fail on that box until it has PHP 8.1 or newer.")
    s.shape("G")
    s.forbid(["error", "pattern"], ["platform", "composer.json"], "the platform override was reverted by the user")
    return s


# --------------------------------------------------------------------------------------------
# Sessions: Claude Code exports
# --------------------------------------------------------------------------------------------


def cc01() -> Session:
    s = Session("cc01_android_minsdk", "claude_code", cwd="/home/dev/projects/stepcount-android",
                branch="feature/health-connect")
    s.user("Added Health Connect to the app and now the debug build fails. Please fix.")
    s.sh("./gradlew :app:assembleDebug", """
        > Task :app:processDebugMainManifest FAILED
        /home/dev/projects/stepcount-android/app/src/main/AndroidManifest.xml Error:
        	uses-sdk:minSdkVersion 24 cannot be smaller than version 26 declared in library [androidx.health.connect:connect-client:1.1.0-alpha07] as the library might be using APIs not available in 24
        	Suggestion: use a compatible library with a minSdk of at most 24,
        		or increase this project's minSdk version to at least 26,
        		or use tools:overrideLibrary="androidx.health.connect.client" to force usage (may lead to runtime failures)

        FAILURE: Build failed with an exception.

        * What went wrong:
        Execution failed for task ':app:processDebugMainManifest'.
        > Manifest merger failed : uses-sdk:minSdkVersion 24 cannot be smaller than version 26 declared in library [androidx.health.connect:connect-client:1.1.0-alpha07]

        BUILD FAILED in 21s
    """, code=1, desc="Build the debug APK")
    s.think("""
        overrideLibrary would compile but crash on API 24/25 when Health Connect classes load. Raise
        minSdk to 26 instead. Check the current value in app/build.gradle.kts.
    """)
    s.sh("grep -n 'minSdk' app/build.gradle.kts", "14:        minSdk = 24", desc="Find minSdk")
    s.say("The Health Connect client needs API 26. `tools:overrideLibrary` would only move the failure to runtime on Android 7.x devices, so I'll raise minSdk to 26.")
    s.edit("app/build.gradle.kts", "        minSdk = 24\n", "        minSdk = 26\n")
    s.sh("./gradlew :app:assembleDebug", """
        > Task :app:processDebugMainManifest
        > Task :app:compileDebugKotlin
        > Task :app:assembleDebug

        BUILD SUCCESSFUL in 38s
        41 actionable tasks: 12 executed, 29 up-to-date
    """, desc="Rebuild the debug APK")
    s.say("""
        Fixed: the manifest merger failed because `connect-client` declares minSdkVersion 26 and the app
        had 24. I raised minSdk to 26 in `app/build.gradle.kts`; `./gradlew :app:assembleDebug` is
        BUILD SUCCESSFUL now. Note this drops support for Android 7.0/7.1 devices.
    """)
    s.shape("B")
    s.expect("error", ["minsdk"], ["manifest merger", "cannot be smaller"])
    s.forbid("error", ["overridelibrary"], "overrideLibrary was rejected, not applied")
    return s


def cc02() -> Session:
    s = Session("cc02_k8s_untolerated_taint", "claude_code", cwd="/home/dev/projects/ml-infra")
    s.user("""
        The new `embedder` deployment never gets scheduled. `kubectl -n ml describe pod` shows:

        ```
        Events:
          Type     Reason            Age   From               Message
          ----     ------            ----  ----               -------
          Warning  FailedScheduling  2m    default-scheduler  0/5 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 3 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.
        ```

        What's wrong? Just tell me, I'll change and apply it myself.
    """)
    s.say("""
        The pod has a nodeSelector for the GPU pool — that's why the 2 CPU nodes "didn't match". The 3
        GPU nodes carry the taint `nvidia.com/gpu=present:NoSchedule`, and the pod has no toleration for
        it, so no node is left.

        Add a toleration under `spec.template.spec` of the deployment:

        ```yaml
              tolerations:
                - key: nvidia.com/gpu
                  operator: Exists
                  effect: NoSchedule
        ```

        With `operator: Exists` the taint's value doesn't matter. Also check that the container asks for
        the GPU in its limits (`nvidia.com/gpu: 1`); otherwise it may land on a GPU node without getting
        a GPU assigned.
    """)
    s.user("ok we're back in business — added the toleration plus the gpu limit, `kubectl -n ml get pods` shows embedder Running on gpu-node-2.")
    s.say("Good. If more GPU workloads follow, a shared Helm helper or Kustomize component for the toleration saves repeating it.")
    s.shape("A")
    s.expect("error", ["toleration"], ["untolerated taint", "failedscheduling"])
    return s


def cc03() -> Session:
    s = Session("cc03_vite_tailwind_postcss", "claude_code", cwd="/home/dev/projects/marketing-site")
    s.user("npm run build broke after I bumped tailwindcss to v4. Fix it.")
    s.sh("npm run build", """
        > marketing-site@1.3.0 build
        > vite build

        vite v5.4.8 building for production...
        ✓ 3 modules transformed.
        x Build failed in 412ms
        error during build:
        [vite:css] [postcss] It looks like you're trying to use `tailwindcss` directly as a PostCSS plugin. The PostCSS plugin has moved to a separate package, so to continue using Tailwind CSS with PostCSS you'll need to install `@tailwindcss/postcss` and update your PostCSS configuration.
        file: /home/dev/projects/marketing-site/src/styles/main.css
    """, code=1, desc="Run the production build")
    s.read("postcss.config.js", """
        export default {
          plugins: {
            tailwindcss: {},
            autoprefixer: {},
          },
        }
    """)
    s.sh("npm install -D @tailwindcss/postcss", """
        added 14 packages, changed 2 packages, and audited 212 packages in 4s

        found 0 vulnerabilities
    """, desc="Install the Tailwind v4 PostCSS plugin")
    s.say("Tailwind v4 ships its PostCSS plugin separately and does its own vendor prefixing, so autoprefixer can go too.")
    s.edit("postcss.config.js",
           "    tailwindcss: {},\n    autoprefixer: {},\n",
           "    '@tailwindcss/postcss': {},\n")
    s.read("src/styles/main.css", """
        @tailwind base;
        @tailwind components;
        @tailwind utilities;

        .hero {
          @apply bg-slate-900 text-white;
        }
    """)
    s.edit("src/styles/main.css",
           "@tailwind base;\n@tailwind components;\n@tailwind utilities;\n",
           "@import \"tailwindcss\";\n")
    s.sh("npm run build", """
        > marketing-site@1.3.0 build
        > vite build

        vite v5.4.8 building for production...
        ✓ 27 modules transformed.
        dist/index.html                  1.92 kB │ gzip: 0.81 kB
        dist/assets/index-4f2a1c9e.css  18.40 kB │ gzip: 4.51 kB
        dist/assets/index-b81d07aa.js   61.27 kB │ gzip: 22.06 kB
        ✓ built in 2.31s
    """, desc="Rebuild")
    s.say("""
        Fixed. With Tailwind v4 the PostCSS plugin lives in `@tailwindcss/postcss`:
        - installed `@tailwindcss/postcss` and replaced `tailwindcss` + `autoprefixer` in `postcss.config.js`;
        - replaced the three `@tailwind` directives in `src/styles/main.css` with `@import "tailwindcss";`.
        `npm run build` succeeds again.
    """)
    s.shape("B")
    s.expect("error", ["@tailwindcss/postcss"], ["postcss plugin", "vite:css"])
    return s


def cc04() -> Session:
    s = Session("cc04_terraform_lockfile", "claude_code", cwd="/home/dev/projects/infra-live/prod")
    s.user("terraform plan in prod/ fails since Jonas bumped the AWS provider constraint. can you sort it?")
    s.sh("terraform plan -input=false", """
        ╷
        │ Error: Inconsistent dependency lock file
        │
        │ The following dependency selections recorded in the lock file are
        │ inconsistent with the current configuration:
        │   - provider registry.terraform.io/hashicorp/aws: locked version selection 5.31.0 doesn't match the updated version constraints "~> 5.40"
        │
        │ To update the locked dependency selections to match a changed
        │ configuration, run:
        │   terraform init -upgrade
        ╵
    """, code=1, desc="Run terraform plan")
    s.sh("terraform init -upgrade -input=false", """
        Initializing the backend...
        Initializing provider plugins...
        - Finding hashicorp/aws versions matching "~> 5.40"...
        - Installing hashicorp/aws v5.46.0...
        - Installed hashicorp/aws v5.46.0 (signed by HashiCorp)

        Terraform has made some changes to the provider dependency selections recorded
        in the .terraform.lock.hcl file. Review those changes and commit them to your
        version control so that Terraform can guarantee to make the same selections by
        default when you run "terraform init" in the future.

        Terraform has been successfully initialized!
    """, desc="Re-select providers for the new constraint")
    s.sh("terraform plan -input=false", """
        module.vpc.aws_vpc.main: Refreshing state... [id=vpc-0a1b2c3d]
        aws_s3_bucket.assets: Refreshing state... [id=prod-assets]

        No changes. Your infrastructure matches the configuration.
    """, desc="Run terraform plan again")
    s.sh("git diff --stat", """
         .terraform.lock.hcl | 38 +++++++++++++++++++-------------------
         1 file changed, 19 insertions(+), 19 deletions(-)
    """, desc="Show changed files")
    s.say("""
        Fixed. The lock file still recorded aws 5.31.0 while the configuration now asks for `~> 5.40`.
        `terraform init -upgrade` selected 5.46.0 and rewrote `.terraform.lock.hcl`; `terraform plan`
        runs again and shows no changes. Please commit the updated lock file.
    """)
    s.shape("B")
    s.expect("error", ["init -upgrade"], ["inconsistent dependency lock file", "lock file"])
    return s


def cc05() -> Session:
    s = Session("cc05_artisan_pretend_pref", "claude_code", cwd="/home/dev/projects/clinic-booking")
    s.user("""
        From now on, before running any `php artisan migrate` against any database, run it with
        `--pretend` first and show me the SQL. Only run it for real after I say ok. That goes for my
        local database too.
    """)
    s.say("""
        Understood. From now on I'll run `php artisan migrate --pretend` first, show you the SQL it
        would execute, and only run the real migration after your ok — local database included.
    """)
    s.shape("C")
    s.expect("preference", ["--pretend"], ["migrate"])
    return s


def cc06() -> Session:
    s = Session("cc06_podman_only", "claude_code", cwd="/home/dev/projects/label-printer")
    s.user("Write me a small script scripts/build-image.sh that builds the image from ./Containerfile, tags it with the short git sha and pushes it to registry.example.com/tools/label-printer.")
    s.write("scripts/build-image.sh", """
        #!/usr/bin/env bash
        set -euo pipefail

        IMAGE=registry.example.com/tools/label-printer
        TAG=$(git rev-parse --short HEAD)

        docker build -f Containerfile -t "$IMAGE:$TAG" .
        docker push "$IMAGE:$TAG"
    """)
    s.sh("chmod +x scripts/build-image.sh && bash -n scripts/build-image.sh && echo syntax ok", "syntax ok",
         desc="Make executable and syntax-check")
    s.say("Added `scripts/build-image.sh`: builds from `./Containerfile`, tags with the short git sha and pushes to registry.example.com/tools/label-printer.")
    s.user("""
        We only ever use podman here — there's no docker daemon on the build boxes at all. Redo it with
        podman, and keep that in mind for anything container-related.
    """)
    s.say("Got it — podman only, no docker. Rewriting the script.")
    s.write("scripts/build-image.sh", """
        #!/usr/bin/env bash
        set -euo pipefail

        IMAGE=registry.example.com/tools/label-printer
        TAG=$(git rev-parse --short HEAD)

        podman build -f Containerfile -t "$IMAGE:$TAG" .
        podman push "$IMAGE:$TAG"
    """)
    s.sh("bash -n scripts/build-image.sh && grep -n podman scripts/build-image.sh", """
        7:podman build -f Containerfile -t "$IMAGE:$TAG" .
        8:podman push "$IMAGE:$TAG"
    """, desc="Syntax-check and show podman calls")
    s.say("Done: the script now uses `podman build` and `podman push`. I'll use podman for all container work in this project.")
    s.shape("C")
    s.expect("preference", ["podman"])
    return s


def cc07() -> Session:
    s = Session("cc07_logrotate_howto", "claude_code", cwd="/home/dev/projects/tracker")
    s.user("""
        /var/log/tracker/app.log is at 14 GB again. How do I set up logrotate for it? The app keeps the
        file open and can't reopen it on a signal.
    """)
    s.sh("ls -lh /var/log/tracker/ && logrotate --version | head -n 1", """
        total 14G
        -rw-r----- 1 tracker tracker 14G Feb 11 10:12 app.log
        logrotate 3.21.0
    """, desc="Inspect log dir and logrotate version")
    s.say("""
        Because the app can't reopen its log file, the rotation has to use `copytruncate`: logrotate
        copies the file and then truncates the original in place, so the app's open file handle stays
        valid. I'll put the config into the repo and install it.
    """)
    s.write("deploy/logrotate/tracker", """
        /var/log/tracker/*.log {
            daily
            rotate 14
            maxsize 500M
            compress
            delaycompress
            missingok
            notifempty
            copytruncate
            su tracker tracker
        }
    """)
    s.sh("sudo install -m 644 deploy/logrotate/tracker /etc/logrotate.d/tracker && sudo logrotate -d /etc/logrotate.d/tracker 2>&1 | tail -n 6", """
        considering log /var/log/tracker/app.log
          Now: 2026-02-11 10:14
          Last rotated at 2026-02-11 00:00
          log needs rotating
        rotating log /var/log/tracker/app.log, log->rotateCount is 14
        copying /var/log/tracker/app.log to /var/log/tracker/app.log.1
    """, desc="Install config and dry-run it")
    s.say("""
        The dry run (`-d`) shows the config is picked up and the file would be rotated. Steps from here:

        1. Do the first rotation now: `sudo logrotate -f /etc/logrotate.d/tracker`.
        2. After that it runs on its own via the daily `logrotate.timer`
           (`systemctl list-timers logrotate.timer` to check); `maxsize 500M` rotates earlier if the log
           grows fast.
        3. Caveat of `copytruncate`: lines written between the copy and the truncate can be lost.
    """)
    s.user("done, ran it with -f: app.log is back to 0 bytes, app.log.1 has the old content and the app keeps writing happily. that worked, thanks.")
    s.say("Great. `delaycompress` leaves app.log.1 uncompressed until the next rotation, so the gz files will start showing up tomorrow.")
    s.shape("D")
    s.expect("pattern", ["logrotate"], ["copytruncate"])
    return s


def cc08() -> Session:
    s = Session("cc08_systemd_exec_multi", "claude_code", cwd="/home/dev/projects/ledger-sync")
    s.user("The ledger-sync service won't start on the new VM. The unit is deploy/ledger-sync.service, installed to /etc/systemd/system/. Please fix.")
    s.sh("systemctl status ledger-sync --no-pager", """
        × ledger-sync.service - Ledger sync worker
             Loaded: loaded (/etc/systemd/system/ledger-sync.service; enabled; preset: enabled)
             Active: failed (Result: exit-code) since Wed 2026-02-11 09:12:40 UTC; 3min ago
            Process: 1844 ExecStart=/opt/ledger-sync/bin/run.sh (code=exited, status=203/EXEC)
           Main PID: 1844 (code=exited, status=203/EXEC)
    """, code=3, desc="Check service status")
    s.sh("journalctl -u ledger-sync -n 2 --no-pager -o cat", """
        ledger-sync.service: Failed to execute /opt/ledger-sync/bin/run.sh: Exec format error
        ledger-sync.service: Failed at step EXEC spawning /opt/ledger-sync/bin/run.sh: Exec format error
    """, desc="Read the service log")
    s.read("bin/run.sh", """
        set -euo pipefail
        cd /opt/ledger-sync
        exec ./venv/bin/python -m ledger_sync --config /etc/ledger-sync/config.toml
    """)
    s.say("`status=203/EXEC` with \"Exec format error\": run.sh has no shebang line, so the kernel doesn't know which interpreter to use (a shell runs it fine, systemd doesn't). Adding it in the repo and redeploying the file.")
    s.edit("bin/run.sh", "set -euo pipefail\n", "#!/usr/bin/env bash\nset -euo pipefail\n")
    s.sh("sudo install -m 755 bin/run.sh /opt/ledger-sync/bin/run.sh && sudo systemctl restart ledger-sync && systemctl is-active ledger-sync && journalctl -u ledger-sync -n 2 --no-pager -o cat", """
        active
        Started ledger-sync.service - Ledger sync worker.
        ledger_sync: connected to ledger db, polling every 30s
    """, desc="Redeploy script and restart")
    s.say("Fixed: added `#!/usr/bin/env bash` to bin/run.sh and redeployed it; ledger-sync is active and polling.")
    s.user("Great. How do I make it restart on its own if it crashes, but give up if it crashes more than 5 times in 10 minutes?")
    s.say("Two settings in the unit: `Restart=` in [Service], and the start-rate limit in [Unit] (that's where current systemd reads it from).")
    s.edit("deploy/ledger-sync.service",
           "[Unit]\nDescription=Ledger sync worker\n",
           "[Unit]\nDescription=Ledger sync worker\nStartLimitIntervalSec=600\nStartLimitBurst=5\n")
    s.edit("deploy/ledger-sync.service",
           "ExecStart=/opt/ledger-sync/bin/run.sh\n",
           "ExecStart=/opt/ledger-sync/bin/run.sh\nRestart=on-failure\nRestartSec=5\n")
    s.sh("sudo install -m 644 deploy/ledger-sync.service /etc/systemd/system/ && sudo systemctl daemon-reload && systemctl show ledger-sync -p Restart -p RestartUSec -p StartLimitBurst -p StartLimitIntervalUSec", """
        Restart=on-failure
        RestartUSec=5s
        StartLimitBurst=5
        StartLimitIntervalUSec=10min
    """, desc="Install unit and show restart settings")
    s.say("""
        Installed and reloaded. The service now restarts 5 s after a crash (`Restart=on-failure`), and
        after 5 starts within 600 s systemd gives up and leaves it failed. To try it:
        `sudo systemctl kill -s SIGKILL ledger-sync`, then `systemctl status ledger-sync`.
    """)
    s.user("""
        killed it twice with SIGKILL, it came back after ~5s both times. works, thanks.

        One rule for the future: never put credentials into unit files as Environment= lines — always
        use an EnvironmentFile= under /etc/ledger-sync/ with mode 600.
    """)
    s.say("Understood — credentials go into an `EnvironmentFile=` under /etc/ledger-sync/ (mode 600), never into `Environment=` lines in unit files.")
    s.shape("B", "C", "D", "E")
    s.expect("error", ["shebang", "#!/usr/bin/env bash"], ["203/exec", "exec format error"])
    s.expect("pattern", ["restart=on-failure", "startlimitburst", "startlimitintervalsec"])
    s.expect("preference", ["environmentfile"])
    return s


def cc09_part1(s: Session) -> None:
    s.user("`dotnet ef migrations add AddInvoiceDueDate` fails for the Infrastructure project. Fix it so I can generate the migration.")
    s.sh("dotnet ef migrations add AddInvoiceDueDate --project src/InvoiceHub.Infrastructure", """
        Build started...
        Build succeeded.
        Unable to create a 'DbContext' of type 'InvoiceDbContext'. The exception 'Unable to resolve service for type 'Microsoft.EntityFrameworkCore.DbContextOptions`1[InvoiceHub.Infrastructure.InvoiceDbContext]' while attempting to activate 'InvoiceHub.Infrastructure.InvoiceDbContext'.' was thrown while attempting to create an instance.
    """, code=1, desc="Generate the migration")
    s.think("""
        Infrastructure is a class library without a host, so there is no DI container to supply
        DbContextOptions. The API project registers the context; use it as the startup project.
    """)
    s.say("The EF tools try to create the DbContext from the Infrastructure class library, which has no host to supply `DbContextOptions`. The API project registers the context, so I'll use it as the startup project.")
    s.sh("dotnet ef migrations add AddInvoiceDueDate --project src/InvoiceHub.Infrastructure --startup-project src/InvoiceHub.Api", """
        Build started...
        Build succeeded.
        Done. To undo this action, use 'ef migrations remove'
    """, desc="Generate the migration with the API as startup project")
    s.sh("ls src/InvoiceHub.Infrastructure/Migrations | tail -n 3", """
        20260211093015_AddInvoiceDueDate.Designer.cs
        20260211093015_AddInvoiceDueDate.cs
        InvoiceDbContextModelSnapshot.cs
    """, desc="List migrations")
    s.say("Fixed: with `--startup-project src/InvoiceHub.Api` the tools get the DbContext from the API's service registration, and the AddInvoiceDueDate migration is generated.")
    s.user("Nice. Remember for this repo: always pass --startup-project src/InvoiceHub.Api explicitly to every dotnet ef command, never rely on the defaults.")
    s.say("Noted — every `dotnet ef` command I run here will pass `--project` and `--startup-project src/InvoiceHub.Api` explicitly.")
    s.shape("B", "C", "E", "F")
    s.expect("error", ["--startup-project", "startup project"], ["unable to create a 'dbcontext'", "dbcontextoptions"])
    s.expect("preference", ["--startup-project", "startup-project"])


def cc09_part2(s: Session) -> None:
    s.user("How do I get this migration onto the staging database? There's no .NET SDK on the staging box, only sqlcmd.")
    s.say("Generate an idempotent SQL script locally and run that with sqlcmd on staging.")
    s.sh("dotnet ef migrations script --idempotent --project src/InvoiceHub.Infrastructure --startup-project src/InvoiceHub.Api -o artifacts/migrate.sql && head -n 8 artifacts/migrate.sql", """
        Build started...
        Build succeeded.
        IF OBJECT_ID(N'[__EFMigrationsHistory]') IS NULL
        BEGIN
            CREATE TABLE [__EFMigrationsHistory] (
                [MigrationId] nvarchar(150) NOT NULL,
                [ProductVersion] nvarchar(32) NOT NULL,
                CONSTRAINT [PK___EFMigrationsHistory] PRIMARY KEY ([MigrationId])
            );
        END;
    """, desc="Generate an idempotent migration script")
    s.say("""
        `artifacts/migrate.sql` contains all migrations, each wrapped in a check against
        `__EFMigrationsHistory`, so it is safe to run against a database that already has some of them.

        1. Copy `artifacts/migrate.sql` to the staging box.
        2. Run it: `sqlcmd -S staging-sql.internal -d InvoiceHub -G -i migrate.sql`
           (`-G` uses Entra ID auth; use `-U`/`-P` for a SQL login).
        3. Check: `SELECT MigrationId FROM __EFMigrationsHistory ORDER BY MigrationId;`
    """)
    s.user("""
        done, that worked — ran migrate.sql with sqlcmd on staging and __EFMigrationsHistory lists
        AddInvoiceDueDate now.

        Different problem: `dotnet test` fails on my machine in InvoiceTotalsTests.DueDate_IsThirtyDaysLater. Can you look?
    """)
    s.sh("dotnet test --filter InvoiceTotalsTests.DueDate_IsThirtyDaysLater", """
          Failed InvoiceHub.Tests.InvoiceTotalsTests.DueDate_IsThirtyDaysLater [12 ms]
          Error Message:
           Assert.Equal() Failure: Values differ
        Expected: 2026-03-29T00:00:00.0000000
        Actual:   2026-03-28T00:00:00.0000000

        Failed!  - Failed:     1, Passed:     0, Skipped:     0, Total:     1
    """, code=1, desc="Run the failing test")
    s.read("src/InvoiceHub.Domain/Invoice.cs", """
        namespace InvoiceHub.Domain;

        public class Invoice
        {
            public DateTime IssuedAt { get; init; }
            public DateTime DueDate => IssuedAt.AddDays(30).Date;
        }
    """)
    s.say("Probably local time vs UTC: `IssuedAt` is stored in UTC but the test machine's zone shifts the date. I'll normalise to UTC before adding the days.")
    s.edit("src/InvoiceHub.Domain/Invoice.cs",
           "    public DateTime DueDate => IssuedAt.AddDays(30).Date;\n",
           "    public DateTime DueDate => IssuedAt.ToUniversalTime().AddDays(30).Date;\n")
    s.sh("dotnet test --filter InvoiceTotalsTests.DueDate_IsThirtyDaysLater", """
          Failed InvoiceHub.Tests.InvoiceTotalsTests.DueDate_IsThirtyDaysLater [11 ms]
          Error Message:
           Assert.Equal() Failure: Values differ
        Expected: 2026-03-29T00:00:00.0000000
        Actual:   2026-03-28T00:00:00.0000000

        Failed!  - Failed:     1, Passed:     0, Skipped:     0, Total:     1
    """, code=1, desc="Rerun the failing test")
    s.say("Still failing with the same values, so it isn't the UTC conversion. The expected date falls on the DST switch (29 March), so the test's own setup may build `IssuedAt` as local time. I'd need to look at the test fixture next.")
    s.user("still red — leave it and undo your change, I'll pair with Ana on it tomorrow.")
    s.edit("src/InvoiceHub.Domain/Invoice.cs",
           "    public DateTime DueDate => IssuedAt.ToUniversalTime().AddDays(30).Date;\n",
           "    public DateTime DueDate => IssuedAt.AddDays(30).Date;\n")
    s.sh("git status --short", "?? artifacts/migrate.sql", desc="Check working tree")
    s.say("Undone — Invoice.cs is back to the committed version; only the generated artifacts/migrate.sql is untracked.")
    s.shape("D", "G")
    s.expect("pattern", ["--idempotent", "idempotent"], ["sqlcmd"])
    s.forbid("error", ["touniversaltime"], "the UTC change did not fix the test and was undone")


def cc10() -> Session:
    s = Session("cc10_cron_flock_claimed", "claude_code", cwd="/home/dev/projects/feeds")
    s.user("""
        The feed-sync cron job sometimes runs twice at the same time when one run takes longer than
        5 minutes, and then we get duplicate rows. Can you make sure runs don't overlap?
    """)
    s.read("deploy/cron.d/feeds", """
        # m h dom mon dow user command
        */5 * * * * feeds /opt/feeds/bin/sync.sh >> /var/log/feeds/sync.log 2>&1
    """)
    s.edit("deploy/cron.d/feeds",
           "*/5 * * * * feeds /opt/feeds/bin/sync.sh >> /var/log/feeds/sync.log 2>&1\n",
           "*/5 * * * * feeds /usr/bin/flock -n /run/lock/feeds-sync.lock /opt/feeds/bin/sync.sh >> /var/log/feeds/sync.log 2>&1\n")
    s.say("""
        Done — the runs can't overlap any more, so the duplicate rows are fixed. `flock -n` takes a lock
        before sync.sh starts and simply skips a run if the previous one still holds it.
    """)
    s.user("ok, thanks. I'll ship it with the next release.")
    s.shape("G")
    s.forbid(["error", "pattern"], ["flock"], "success only claimed; nothing was deployed or verified and the user did not confirm")
    return s


def cc11() -> Session:
    s = Session("cc11_rust_musl_libpq_still", "claude_code", cwd="/home/dev/projects/ingestd")
    s.user("the static build for the alpine image fails at link time: `cargo build --release --target x86_64-unknown-linux-musl`. can you fix?")
    s.sh("cargo build --release --target x86_64-unknown-linux-musl", """
           Compiling ingestd v0.9.1 (/home/dev/projects/ingestd)
        error: linking with `cc` failed: exit status: 1
          |
          = note: /usr/bin/ld: cannot find -lpq: No such file or directory
                  collect2: error: ld returned 1 exit status

        error: could not compile `ingestd` (bin "ingestd") due to 1 previous error
    """, code=101, desc="Build the static musl binary")
    s.say("The linker can't find libpq. Installing the development package:")
    s.sh("sudo apt-get install -y libpq-dev", """
        Reading package lists... Done
        The following NEW packages will be installed:
          libpq-dev
        Setting up libpq-dev (14.11-0ubuntu0.22.04.1) ...
    """, desc="Install libpq headers and library")
    s.sh("cargo build --release --target x86_64-unknown-linux-musl", """
           Compiling ingestd v0.9.1 (/home/dev/projects/ingestd)
        error: linking with `cc` failed: exit status: 1
          |
          = note: /usr/bin/ld: cannot find -lpq: No such file or directory
                  collect2: error: ld returned 1 exit status

        error: could not compile `ingestd` (bin "ingestd") due to 1 previous error
    """, code=101, desc="Rebuild")
    s.think("libpq-dev is the glibc shared library; a static musl build needs libpq.a built for musl.")
    s.say("""
        Still failing: `libpq-dev` only ships the glibc build of libpq, and a static musl binary needs a
        `libpq.a` compiled against musl. Options:
        (a) build inside a `rust:1.79-alpine` image with `apk add postgresql16-dev openssl-libs-static`;
        (b) enable the `bundled` feature of `pq-sys` so libpq is compiled from source;
        (c) move to a pure-Rust Postgres driver.
        Want me to try (b)?
    """)
    s.user("nope, same error here on my side too. Leave it — I need to check with the platform team which base image they want before we change dependencies.")
    s.say("Okay, leaving it as is. libpq-dev is still installed on this machine; `sudo apt-get remove libpq-dev` if you don't want it.")
    s.shape("G")
    s.forbid("error", ["libpq-dev"], "installing libpq-dev did not fix the link error; the rerun failed the same way")
    s.forbid("error", ["bundled", "pq-sys"], "only proposed, never tried")
    return s


# --------------------------------------------------------------------------------------------
# The set
# --------------------------------------------------------------------------------------------


def sessions() -> SessionList:
    single = [oa01, oa02, oa03, oa04, oa05, oa06, oa08, oa09, oa10, oa11,
              an01, an02, an03, an04, an05, an06, an07, an08, an10, an11,
              cc01, cc02, cc03, cc04, cc05, cc06, cc07, cc08, cc10, cc11]
    out = [(f"{s.name}.jsonl", s) for s in (f() for f in single)]
    out += pair("oa07_mysql_replica_binlog", "openai", [oa07_part1, oa07_part2], system=SYS_CHAT)
    out += pair("an09_nix_flakes_devshell", "anthropic", [an09_part1, an09_part2], cwd="/home/dev/projects/tiler")
    out += pair("cc09_efcore_startup_project", "claude_code", [cc09_part1, cc09_part2],
                cwd="/home/dev/projects/InvoiceHub")
    return sorted(out, key=lambda x: x[0])


if __name__ == "__main__":
    sys.exit(main(HERE, sessions, __doc__))
