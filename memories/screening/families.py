"""The screen's rule families (``memories.screening.rules`` holds what they are made of: the
finding, the rule, and the words that excuse a match): instruction overrides and identity,
orders addressed to agents, concealment, hub manipulation, prompt structure, remote code,
decoding to run, exfiltration, disabled checks, destructive commands, persistence, in English
and Chinese. ``rule_findings`` runs them over one folded field."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from memories.screening.rules import MARK, Finding, Rule, _r, discussed, prohibited, reported
from memories.screening.text import Folded, sentence_around

_AGENT = r"(?:ai|llm|agents?|assistants?|models?|bots?|copilots?|claude|gpt|chatgpt|codex|cursor)"
_ORDERS = r"(?:instructions?|prompts?|rules|directions|directives|guidelines|guidance|guardrails|orders|system\s+messages?|context|programming|constraints|advice|requests?|safety\s+(?:rules|guidelines|policies))"
# Where a secret would go: an address, a service, a reply.
_DESTINATION = (r"(?:https?://|\S+@\S+\.\w+|webhook|endpoint|server|url|address|gist|pastebin|paste|channel|slack|discord|"
                r"telegram|email|e-mail|issue|comment|pr\b|pull request|commit message|description|reply|response|answer|"
                r"output|chat|dns|nslookup|dig\b|remote|external|public|\d{1,3}(?:\.\d{1,3}){3})")
_SECRETS = (r"(?:credentials?|secrets?|api[_ -]?keys?|access[_ -]?keys?|private[_ -]?keys?|tokens?|passwords?|passwd|"
            r"ssh[_ -]?keys?|id_rsa|id_ed25519|\.ssh\b|~/\.aws|\.aws/|aws_secret|\.env\b|env(?:ironment)?\s*var(?:iable)?s|"
            r"environment|printenv|\$\(\s*env|os\.environ|process\.env|kubeconfig|\.kube/config|\.npmrc|\.pypirc|\.netrc|"
            r"\.git-credentials|\.docker/config|cookies?|session\s+ids?|keychain|vault|/etc/(?:passwd|shadow)|"
            r"conversation|chat\s+history|system\s+prompt|source\s+code|repository\s+contents?)")
_SEND = (r"(?:send|sends|sending|post|posting|upload|uploading|email|mail|paste|forward|share|transmit|exfiltrate|leak|"
         r"submit|report|sync|copy|push|pipe|attach|include|embed|dump|publish)")
_PROTECTED = r"(?:main|master|trunk|release[\w/.-]*|prod(?:uction)?|develop|dev|stable|live|shared|default)"
_SHELLS = r"(?:sudo\s+)?(?:-?\s*)(?:ba|z|k|da|c|tc|fi)?sh|python[\d.]*|perl|ruby|node|php|iex|invoke-expression|pwsh|powershell|cmd(?:\.exe)?|source|\."
_FETCH = r"(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch|http(?:ie)?|aria2c|lwp-download|certutil)"

RULES: tuple[Rule, ...] = (
    # --- the reader's instructions, identity and user ------------------------------------------
    Rule("override", "asks the reader to ignore or replace its instructions", _r(rf"""
        \b(?:ignore|disregard|forget|override|overrule|bypass|discard|drop|abandon|skip|set\s+aside|throw\s+away|
             pay\s+no\s+attention\s+to|do\s+not\s+follow|don'?t\s+follow|stop\s+following)\b
        \s+(?:\w+\s+){{0,4}}?(?:previous|prior|above|earlier|preceding|former|original|initial|existing|old|all|any|every|
             your|the\s+(?:user'?s|developer'?s|system'?s?)|system|safety|other)\b
        \s*(?:\w+\s+){{0,3}}?{_ORDERS}\b""")),
    Rule("override", "asks the reader to ignore or replace its instructions", _r(rf"""
        \b{_ORDERS}\s+(?:above|before\s+this|so\s+far|you\s+(?:were|have\s+been)\s+given)\s+(?:are|is)\s+
        (?:void|obsolete|cancel+ed|outdated|no\s+longer|superseded|revoked|wrong)""")),
    Rule("identity", "tells the reader it is someone else now", _r(r"""
        \byou\s+are\s+(?:now|no\s+longer|from\s+now\s+on|actually|henceforth)\b(?!\s+(?:able|ready|done|set|good|all\s+set|on\b|in\s+the\b))
        |\bact\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?(?:unrestricted|unfiltered|jailbroken|dan\b|developer\s+mode|root|admin|sysadmin|different)
        |\b(?:enter|enable|switch\s+to|activate)\s+(?:dan|developer|god|jailbreak|unrestricted|debug\s+admin)\s+mode
        |\bnew\s+(?:system\s+)?(?:instructions?|rules|directives|persona|role)\s*[:：-]
        |\bfrom\s+now\s+on,?\s+(?:you|the\s+(?:agent|assistant|model|ai))\s+(?:must|will|shall|should|are|have\s+to|need\s+to|may\s+only|always|never)""")),
    Rule("address_agent", "addresses whatever AI reads it with orders", _r(rf"""
        \b(?:(?:note|message|instructions?|attention|reminder|important|notice)\s+(?:to|for)\s+(?:any|all|every|the|future|other)\s+
             (?:\w+\s+)?{_AGENT}
           |(?:any|every|all|the)\s+(?:\w+\s+)?{_AGENT}\s+(?:that\s+(?:is\s+)?|who\s+(?:is\s+)?)?(?:reading|reads|processing|processes|sees|seeing|summari[sz]ing|retrieving|loading|using)\s+(?:this|these)
           |if\s+you\s+are\s+an?\s+(?:\w+\s+)?{_AGENT}\b
           |dear\s+{_AGENT}\b
           |(?:to|for)\s+the\s+{_AGENT}\s+(?:reading|processing)\b)""")),
    Rule("conceal", "tells the reader to hide something from its user", _r(r"""
        \b(?:do\s+not|don'?t|never|without)\s+(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?|reveal(?:ing)?|disclos(?:e|ing)|notify(?:ing)?|alert(?:ing)?|show(?:ing)?|report(?:ing)?)\s+
           (?:(?:this|it|that|these|anything)\s+)?(?:\w+\s+){0,3}?(?:to\s+)?(?:the\s+)?(?:user|human|operator|developer|owner|reviewer|team|anyone)s?\b
        |\b(?:keep|hide)\s+(?:this|it)\s+(?:\w+\s+){0,2}(?:from|hidden\s+from)\s+(?:the\s+)?(?:user|human|reviewer|operator)
        |\bsilently\s+(?:run|execute|send|upload|install|add|delete|push|replace|change|modify)
        |\b(?:do\s+not|don'?t|never|without)\s+(?:ask(?:ing)?|wait(?:ing)?\s+for|prompt(?:ing)?|request(?:ing)?)\s+(?:the\s+user\s+)?(?:for\s+)?(?:confirmation|approval|permission|consent|review)
        |\bdo\s+not\s+(?:mention|reveal)\s+(?:this\s+)?(?:note|memory|instruction|message)""")),
    Rule("memory_manipulation", "tries to steer how the hub or its readers rank and repeat memories", _r(r"""
        \b(?:re-?upload|re-?submit|re-?post|copy|repeat|save|store|propagate|spread)\s+(?:this|these)\s+(?:memory|memories|note|notes|message|instructions?)\b
        |\b(?:rate|mark|vote|flag|upvote|score)\s+(?:this|these)\s+(?:memory|memories|note|notes)\s+(?:as\s+)?(?:helpful|useful|verified|trusted|correct|high)
        |\b(?:this|these)\s+(?:memory|note|rule)\s+(?:overrides|supersedes|replaces|takes\s+precedence\s+over)\s+(?:all|any|every|other)
        |\bwhen(?:ever)?\s+(?:asked|someone\s+asks|the\s+user\s+asks|a\s+user\s+asks)\s+(?:about|for)\s+[^.;\n]{1,80}?,?\s+(?:always\s+)?(?:answer|reply|respond|say|tell\s+them)\s+(?:with\s+|that\s+)?""")),
    Rule("override", "asks the reader to ignore or replace its instructions", _r(r"""
        (?:忽略|无视|忘记|忘掉|不要理会|别理会|抛开|抛弃|覆盖|绕过|不再遵守|停止遵守|放弃)掉?\s*(?:之前|以上|上面|上述|先前|前面|原有|原来|原先|所有|全部|你的|系统|其他|一切)
        [^。；\n]{0,8}?(?:指令|指示|提示词?|规则|要求|设定|约束|命令|限制|安全策略)""")),
    Rule("identity", "tells the reader it is someone else now", _r(r"""
        你现在是(?!在)|从现在(?:开始|起)[，,]?\s*(?:你|助手|智能体|模型)(?:必须|要|将|只能|应该|需要|不再)|你的新(?:角色|身份|任务|指令)是
        |(?:进入|开启|切换到)(?:开发者|越狱|DAN|无限制|上帝)模式|新的?(?:系统)?(?:指令|规则)\s*[:：]""")),
    Rule("address_agent", "addresses whatever AI reads it with orders", _r(r"""
        (?:致|给|对|告)(?:所有|任何|每个|每一个|其他|未来的)的?\s*(?:AI|智能体|代理|助手|模型|大模型|LLM|agent)
        |(?:任何|所有|每个)(?:读到|看到|处理|检索到|加载)(?:这条|此条|本条|这段|此)[^。；\n]{0,6}?(?:AI|智能体|代理|助手|模型|agent)
        |如果你是(?:一个)?\s*(?:AI|智能体|代理|助手|模型|大模型|agent)""")),
    Rule("conceal", "tells the reader to hide something from its user", _r(r"""
        (?:不要|别|无需|不必|切勿)(?:告诉|通知|提醒|告知)用户|对用户(?:隐瞒|保密)|(?:不要|别|无需|不必)(?:向用户)?(?:确认|征求|询问|请示)(?:用户)?
        |悄悄(?:地)?(?:执行|运行|发送|上传|删除|安装|推送)|不要(?:提及|提到|透露)(?:这条|本条|此)""")),
    Rule("memory_manipulation", "tries to steer how the hub or its readers rank and repeat memories", _r(r"""
        (?:重新上传|再次上传|反复上传|转发|复制|传播)(?:这条|本条|此条?)(?:记忆|笔记|消息|指令)
        |(?:把|将)(?:这条|本条|此条?)(?:记忆|笔记)(?:标记|评|设)为(?:有用|有帮助|可信|已验证)""")),
    Rule("role_marker", "carries a role line (SYSTEM:, ASSISTANT:)", _r(r"""
        (?:系统提示|系统指令|系统消息|系统通知)\s*[:：]|【系统】|\[系统\]""")),
    # --- prompt structure spliced into a memory ------------------------------------------------
    Rule("role_marker", "carries a chat-template or system-prompt marker", _r(r"""
        <\|\s*(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\s*\|>
        |\[/?INST\]|<</?SYS>>|<\s*/?\s*(?:system|sys|system[-_]prompt|instructions?|admin|developer|assistant|memory|context|tool_result|function_results)\s*>
        |(?:^|\n)\s*\#{2,}\s*(?:system|instructions?|new\s+instructions?|developer\s+message)\s*(?::|\n|$)
        |\b(?:end|begin|start)\s+of\s+(?:the\s+)?(?:system\s+prompt|context|memory|memories|notes?|user\s+input|document|retrieved\s+content|instructions)\b
        |(?:-{3,}|={3,}|\*{3,})\s*(?:end|begin|new|system)\b"""), check=lambda text, m, _: _marker_used(text, m)),
    Rule("role_marker", "carries a role line (SYSTEM:, ASSISTANT:)", _r(r"""
        (?:^|\n|[.!?]\s|\"|')\s*(?:SYSTEM|ASSISTANT|DEVELOPER|ADMIN)\s*(?:MESSAGE|PROMPT|NOTE|OVERRIDE)?\s*[:：]\s*\S
        |(?:^|\n)\s*(?:system|assistant)\s*(?:prompt|message|override)\s*[:：]""", 0)),
    # --- running what someone else serves --------------------------------------------------------
    Rule("remote_exec", "downloads and runs code", _r(rf"""
        \b{_FETCH}\b[^\n|;&]{{0,300}}?\|\s*(?:{_SHELLS})\b
        |\b(?:ba|z)?sh\s+(?:-[a-z]+\s+)*<\s*\(\s*{_FETCH}
        |\bsource\s+<\s*\(\s*{_FETCH}
        |\b(?:eval|exec|iex|invoke-expression)\s*[\(\s\"'`$]*\(?\s*(?:\$\()?\s*(?:{_FETCH}|\(?new-object\s+(?:system\.)?net\.webclient|urllib|requests\.get|urlopen)
        |\b(?:python[\d.]*|node|ruby|perl)\s+-[ce]\s+[\"'][^\"'\n]{{0,300}}(?:urlopen|urllib|requests\.get|http\.get|fetch\(|open-uri|LWP)[^\"'\n]{{0,300}}(?:exec|eval|system|spawn|\|\s*sh)
        |\bdownloadstring\s*\(|\bfrom(?:base64string)?\b.{{0,40}}\|\s*iex\b
        |\b(?:chmod\s+\+x|bash|sh)\s+[^\n;|]{{0,40}}&&\s*\./[^\s;|]+[^\n]{{0,0}}(?=.{{0,200}}(?:https?://))"""), excusable=True,
         check=lambda text, m, allowed: not _installer_allowed(m.group(0), allowed)),
    Rule("decode_exec", "decodes something and runs or follows it", _r(r"""
        (?:base64|b64|base32|xxd|openssl\s+(?:enc|base64))\s+(?:-d|--decode|-r|-D)\b[^\n]{0,80}?\|\s*(?:sudo\s+)?(?:ba|z)?sh\b
        |\b(?:eval|exec|iex|invoke-expression)\s*\(?\s*(?:atob|base64\.b64decode|b64decode|buffer\.from|\[system\.convert\]::frombase64string|frombase64string|codecs\.decode|bytes\.fromhex|unhexlify)
        |\b(?:decode|decrypt|unscramble|de-?obfuscate|rot13|reverse)\s+(?:this|the\s+following|the\s+(?:string|text|payload|blob)\s+below|it)\s+(?:and|then)\s+(?:run|execute|follow|apply|obey|do|eval)
        |\b(?:run|execute|follow|apply|obey)\s+(?:the\s+)?(?:decoded|hidden)\s+(?:text|instructions?|command|payload|string)""")),
    # --- secrets leaving --------------------------------------------------------------------------
    Rule("exfiltration", "sends credentials, keys, environment or files somewhere", _r(rf"""
        \b{_SEND}\b[^.\n;。]{{0,80}}?{_SECRETS}[^.\n;。]{{0,100}}?\b(?:to|into|in|at|via|through|as|onto|on|with)\b[^.\n;。]{{0,60}}?{_DESTINATION}""")),
    Rule("exfiltration", "posts a file or the environment to a remote host", _r(r"""
        \b(?:curl|wget|http|invoke-webrequest|iwr|irm|nc|ncat|netcat|scp|rsync|ftp)\b[^\n]{0,200}?
        (?:(?:-d|--data(?:-binary|-raw|-urlencode)?|-F|--form|-T|--upload-file|--post-file|--body-file|-infile|-InFile|--body|<)\s*[\"']?@?
           (?:~|\$HOME|/etc/|/root|\.env|\.ssh|\.aws|id_rsa|\.kube|\.git-credentials|\.npmrc|\.netrc|\$\()
         |(?:[?&=/]|\s-d\s|\s--data\S*\s)[\"']?(?:\$\(|`)\s*(?:cat|env|printenv|set|base64|gpg|aws\s+configure|gh\s+auth\s+token|git\s+config)\b
         |\$(?:\{)?(?:AWS_SECRET|AWS_ACCESS|GITHUB_TOKEN|GH_TOKEN|NPM_TOKEN|OPENAI_API_KEY|ANTHROPIC_API_KEY|API_KEY|SECRET|TOKEN|PASSWORD|DATABASE_URL)\w*)""")),
    Rule("exfiltration", "leaks data through a DNS lookup", _r(r"""
        \b(?:nslookup|dig|host|ping)\s+[^\n]{0,40}\$\(\s*(?:cat|env|whoami|hostname|printenv|base64|echo)""")),
    Rule("exfiltration", "sends credentials, keys, environment or files somewhere", _r(r"""
        (?:把|将)[^。；\n]{0,40}(?:密钥|私钥|凭证|凭据|令牌|token|密码|环境变量|\.env|id_rsa|\.ssh|\.aws|kubeconfig|cookie)[^。；\n]{0,40}
        (?:发送|发到|上传|贴到|粘贴到|提交到|推送到|转发|发给|写到|写入|附在|放到|输出到|打印到)""")),
    # --- weakening safety ------------------------------------------------------------------------
    Rule("disable_checks", "turns off a check or a safety setting", _r(r"""
        (?:^|\s)--no-verify\b|\bgit\s+commit\s+(?:-\w+\s+)*-n\b|\bHUSKY=0\b|\bSKIP=\S+|--no-gpg-sign\b
        |\bverify\s*=\s*False\b|\bNODE_TLS_REJECT_UNAUTHORIZED\s*=\s*[\"']?0|\bPYTHONHTTPSVERIFY\s*=\s*[\"']?0
        |\b(?:ssl_?verify|sslverify|strict-ssl|verify_ssl|ssl-verify|insecure-skip-tls-verify|tls_verify|check_hostname)\s*[=:\s]\s*[\"']?(?:false|0|no|off)\b
        |--insecure-skip-tls-verify\b|\bInsecureSkipVerify\s*[:=]\s*true|\brejectUnauthorized\s*[:=]\s*false|\bCURLOPT_SSL_VERIFYPEER\b[^\n]{0,10}(?:false|0)
        |--dangerously-skip-permissions\b|--dangerously-bypass\S*|--yolo\b|--no-sandbox\b(?=[^\n]{0,80}\b(?:always|every|permanent))|\bauto[-_ ]?approve\s+(?:all|every|any)\b
        |--trusted-host\s+(?!(?:pypi\.org|files\.pythonhosted\.org|localhost|127\.0\.0\.1)\b)\S+
        |\bset-executionpolicy\s+(?:-executionpolicy\s+)?(?:unrestricted|bypass)\s+(?:-scope\s+)?(?:localmachine|currentuser)?(?![^\n]{0,30}\bprocess\b)(?=[^\n]{0,40}(?:-force|localmachine|currentuser))
        |\b(?:setenforce\s+0|ufw\s+disable|systemctl\s+(?:stop|disable)\s+(?:firewalld|apparmor|auditd|falcon|clamav)|Set-MpPreference\s+-Disable\w+\s+\$?true|spctl\s+--master-disable)
        |\b(?:disable|turn\s+off|switch\s+off|remove|bypass|skip|deactivate|circumvent|get\s+around|ignore)\s+(?:the\s+|all\s+|any\s+)?(?:\w+\s+){0,2}?
            (?:branch\s+protection|required\s+reviews?|code\s+reviews?|2fa|mfa|two[- ]factor|signature\s+(?:checks?|verification)|signing|secret\s+scanning|security\s+(?:checks?|scans?|scanning|scanner|alerts|warnings|policies|settings|rules|hooks?|software|tools?)|antivirus|edr|firewall|
             certificate\s+(?:checks?|verification|validation)|ssl\s+(?:checks?|verification)|tls\s+(?:checks?|verification)|audit\s+log(?:ging)?s?|sandbox(?:ing)?|permission\s+(?:prompts?|checks?)|approval\s+prompts?|content\s+filter|guardrails?|safety\s+(?:checks?|filters?|settings?|features?)|the\s+screen|screening)\b""")),
    Rule("disable_checks", "turns off a check or a safety setting", _r(r"""
        (?:关闭|禁用|绕过|跳过|停用|去掉|关掉)[^。；\n]{0,12}(?:证书校验|证书验证|ssl\s*校验|ssl\s*验证|tls\s*校验|分支保护|代码审查|双因素|2fa|安全扫描|安全检查|杀毒|防火墙|审计|签名校验|钩子|hook|权限确认|确认提示|沙箱)""")),
    # --- destroying shared things ----------------------------------------------------------------
    Rule("destructive", "force-pushes or rewrites a shared branch", _r(rf"""
        \bgit\s+push\s+(?:(?!--force-with-lease)\S+\s+)*?(?:-f\b|--force\b(?!-with-lease)|--mirror\b)(?:\s+\S+)*?\s+(?:\S+\s+)?(?:\S+[:/])?\+?{_PROTECTED}\b
        |\bgit\s+push\s+(?:\S+\s+)*?\S+\s+\+{_PROTECTED}\b
        |\bgit\s+push\s+(?:\S+\s+)?(?:\S+\s+)?{_PROTECTED}\s+(?:-f|--force)\b(?!-with-lease)
        |\bgit\s+push\s+(?:-f|--force)\b(?!-with-lease)(?=[^\n]{{0,120}}\b(?:shared|everyone|protected|upstream|team'?s?|main|master)\b)
        |\bgit\s+reset\s+--hard\b[^\n;&]{{0,60}}?(?:origin/|upstream/)?\b{_PROTECTED}\b(?=[^\n]{{0,160}}\bpush\b)
        |\bgit\s+(?:filter-branch|filter-repo)\b(?=[^\n]{{0,160}}\b(?:main|master|push)\b)
        |\bgit\s+push\s+[^\n]{{0,40}}--delete\s+{_PROTECTED}\b""")),
    Rule("destructive", "deletes files outside a build directory", _r(r"""
        \brm\s+(?:-\w*[rR]\w*\s+|-\w*f\w*\s+|--recursive\s+|--force\s+|--no-preserve-root\s+)+
        [\"']?(?:/|~/?|\$HOME/?|\$\{HOME\}/?|%USERPROFILE%|\*|/\*|\.\*|\.\./?|\.git|\$\{?\w*(?:DIR|PATH|ROOT)\}?/?\*?
           |/(?!tmp\b|var/tmp\b|var/cache\b|var/lib/apt/lists\b|var/log/\S*\.(?:gz|\d)\b)(?:home|etc|usr|var|opt|root|srv|boot|lib|lib64|bin|sbin|mnt|data|Users|System|Library)\b(?:/\S*)?
           |(?:~|\$HOME)/(?!\S*(?:[Cc]ache|DerivedData|pkg/mod|\.gradle|\.m2|\.npm|\.cargo/registry|node_modules|\.tmp|tmp|[Bb]uild|\.local/share/Trash|\.pyenv/versions|\.rustup/toolchains))\S+
        )[\"']?(?=\s|$|[;&|)\"'`])
        |\bRemove-Item\s+[^\n]{0,60}-Recurse[^\n]{0,40}(?:C:\\|\$env:USERPROFILE|~|\$HOME)(?![^\n]{0,40}\\(?:bin|obj|build|dist|node_modules|target|temp|tmp)\b)
        |\b(?:rd|rmdir)\s+/s\s+/q\s+[A-Za-z]:\\(?:\s|$|Windows|Users)
        |\b(?:mkfs(?:\.\w+)?|wipefs)\s+|\bdd\s+if=\S+\s+of=/dev/(?:sd|nvme|hd|xvd|disk)
        |\bchmod\s+-R\s+0?777\s+/(?=\s|$|[`'\";&|)])|\bcurl\s+(?:-\S+\s+)*-X\s*DELETE\b[^\n]{0,120}(?:/\*|/_all\b|\*')|:\(\)\s*\{\s*:\|:&\s*\};:|\bshred\s+[^\n]{0,30}/dev/""")),
    Rule("destructive", "drops or empties a database or deletes production resources", _r(r"""
        \b(?:drop\s+(?:database|schema|table|keyspace)|truncate\s+(?:table\s+)?\w+|delete\s+from\s+\w+\s*(?:;|$|\)|\"|'|`)|dropdb\s|flushall\b|flushdb\b|db\.dropDatabase\(\)|\.drop_all\(\))
        |\bkubectl\s+delete\s+(?:ns|namespaces?|pvc?|persistentvolume\w*|--all|all\b|-A\b|crd)
        |\bterraform\s+(?:destroy|apply\s+-destroy)\b|\bhelm\s+(?:uninstall|delete)\b
        |\baws\s+s3\s+(?:rm\s+[^\n]{0,80}--recursive|rb\s+[^\n]{0,80}--force)|\bgsutil\s+(?:-m\s+)?rm\s+-r|\baz\s+(?:group|storage\s+account)\s+delete
        |\b(?:delete|remove|wipe|erase|purge|destroy)\s+(?:all\s+|the\s+|every\s+)?(?:\w+\s+){0,2}?(?:backups?|snapshots?|production\s+(?:data(?:base)?|db|bucket|cluster|namespace)|prod\s+(?:data(?:base)?|db|bucket)|audit\s+logs?)\b
        |(?:删除|删掉|清空|清除|销毁)[^。；\n]{0,10}(?:生产|线上|正式)[^。；\n]{0,10}(?:数据库|库|数据|集群|桶|命名空间)|(?:删除|删掉|清空)[^。；\n]{0,6}(?:所有)?备份""",
    ), check=lambda text, m, _: not _disposable(text, m)),
    # --- staying in ---------------------------------------------------------------------------------
    Rule("persistence", "plants access or a hook that calls out", _r(r"""
        (?:>>?|tee\s+-a)\s*~?/?(?:\S*/)?\.ssh/authorized_keys|\bauthorized_keys\b[^\n]{0,40}\b(?:add|append|echo|ssh-(?:rsa|ed25519))
        |\b(?:add|append|put|paste|insert|install)\s+(?:this|the\s+following|our|my|an?)\s+(?:\w+\s+)?(?:ssh\s+)?(?:public\s+)?key\s+(?:to|into|in)\s+(?:\S*\s*)?authorized_keys
        |\b(?:useradd|adduser|net\s+user)\b[^\n]{0,60}(?:sudo|wheel|admin|/add)|\busermod\s+-aG\s+(?:sudo|wheel|docker|root)\s+\S+(?=[^\n]{0,80}https?://)
        |\bcrontab\b[^\n]{0,120}\b(?:curl|wget|nc|bash\s+-i)\b|\*\s+\*\s+\*\s+\*\s+\*\s+[^\n]{0,80}\b(?:curl|wget)\b[^\n]{0,80}\|\s*(?:ba)?sh
        |\bbash\s+-i\s+>&\s*/dev/tcp/|\bnc\s+(?:-\w+\s+)*-e\s+/bin/|\b/dev/tcp/\d{1,3}(?:\.\d{1,3}){3}/\d+
        |\"(?:pre|post)install\"\s*:\s*\"[^\"]{0,200}(?:curl|wget|node\s+-e|https?://)
        |(?:添加|加入|追加)[^。；\n]{0,20}authorized_keys""")),
)

# Rules for the same families, in the shapes the ones above miss: the order of words, short
# forms, Chinese, and what attacks ask of a shared memory hub itself.
RULES += (
    Rule("override", "asks the reader to ignore or replace its instructions", _r(r"""
        \b(?:forget|ignore|disregard)\s+(?:about\s+)?(?:everything|all|anything)\s+(?:(?:you\s+were\s+)?(?:said|told|written)\s+)?(?:above|before|earlier|previously|so\s+far|you\s+(?:were|have\s+been)\s+told)
        |\byour\s+(?:new|real|actual|true|only)\s+(?:task|goal|objective|instructions?|job|mission|purpose|priority)\s+(?:is|are|now)\b
        |\b(?:follow|do|obey|execute)\s+(?:this|it|these|that)\s+instead\s+of\s+(?:the|your|what|any)\s+(?:user|ticket|task|request|instructions?|prompt|human)
        |\b(?:supersedes?|overrides?|outranks?|takes?\s+precedence\s+over)\s+(?:the\s+|any\s+|all\s+)?(?:user'?s?|human'?s?|your|system|developer'?s?)\s+(?:instructions|requests?|prompts?|wishes|rules|orders|messages?)
        |\beven\s+(?:when|if)\s+the\s+(?:user|human|operator)\s+(?:explicitly\s+|clearly\s+)?(?:says?\s+(?:not\s+to|no|otherwise)|objects?|refuses?|disagrees?|asks?\s+you\s+not\s+to)
        |\bthe\s+user'?s?\s+(?:task|request|instructions?|description|prompt)\s+(?:is|are)\s+(?:frequently\s+|often\s+|usually\s+|always\s+)?(?:wrong|irrelevant|unimportant|not\s+important|a\s+distraction)""")),
    Rule("override", "asks the reader to ignore or replace its instructions", _r(r"""
        (?:忘记|忽略|无视|不要管|不用管|抛开)掉?\s*用户的?\s*(?:原始|原来的|真实)?\s*(?:请求|需求|指令|要求|任务|问题)
        |用户的?(?:原始)?(?:请求|需求|指令|要求|任务)(?:不重要|无关紧要|是错的|可以忽略)
        |你(?:真正|实际|唯一)?的(?:新)?任务(?:其实)?是|优先级高于用户|(?:覆盖|取代|高于)(?:用户|系统)的?(?:指令|要求|请求)""")),
    Rule("address_agent", "addresses whatever AI reads it with orders", _r(rf"""
        \b(?:p\.?s\.?|note|hey|attention|reminder|psst)\s*(?:,\s*)?(?:to|for)\s+the\s+(?:\w+\s+)?{_AGENT}\s*[:,]
        |(?:致|给|对)(?:所有|任何|每个|每一个|其他|未来的)[^。，,；\n]{{0,12}}?(?:AI|智能体|代理|助手|模型|大模型|LLM|agent)""")),
    Rule("address_agent", "addresses agents directly with orders", _r(r"""
        (?:^|\n|[.!?]\s)\s*(?:important\s+)?(?:note\s+)?(?:for|to)\s+(?:all\s+|any\s+|other\s+)?(?:ai\s+)?(?:agents|assistants|models|llms)\s*[:：]
        |\bagent\s+(?:note|instructions?)\b\s*[(:：]"""), severity=MARK),
    Rule("role_marker", "carries a role line (Assistant:, Human:)", _r(r"""
        (?:^|\n)\s*(?:assistant|human|ai|claude|gpt|model|bot)\s*[:：]\s*\S
        |(?:^|\n)\s*(?:system|user|developer)\s*[:：]\s*(?=[^\n]{0,80}\b(?:you|your|always|never|must|ignore|from\s+now\s+on|approve|run|execute|send|do\s+not|don'?t)\b)
        |(?-i:\b(?:SYSTEM|ADMIN|DEVELOPER|ROOT)\s+(?:NOTICE|MESSAGE|PROMPT|NOTE|OVERRIDE|INSTRUCTIONS?|UPDATE|DIRECTIVE|ALERT|COMMAND)\b)
        |<!--[^>]{0,60}?\b(?:agent|ai|assistant|llm|instructions?|system|prompt|model)\b
        |(?:^|\n)\s*\#{2,}\s*(?:指令|系统|系统提示|新指令)\s*[:：]?""", re.IGNORECASE), excusable=False),
    Rule("decode_exec", "decodes something and runs or follows it", _r(r"""
        \b(?:decode|decrypt|unscramble|de-?obfuscate|base64-?decode|rot13)\w*\b(?:\s+\S+){0,5}?\s*(?:and|then|,|;|&)\s*(?:then\s+)?(?:run|execute|follow|apply|obey|do\s+(?:it|what|as)|eval|act\s+on|carry\s+out)
        |\b(?:run|execute|follow|apply|obey)\s+(?:the\s+|this\s+|it\s+)?(?:decoded|hidden|encoded|obfuscated)\b
        |\b(?:follow|obey|execute|run)\s+(?:it|this|the\s+\w+)\b[^.\n]{0,40}\bbase64\b|\bbase64\s+(?:block|blob|string|payload)\b[^.\n]{0,60}\b(?:follow|obey|execute|run|instead)\b
        |\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,60}\s-(?:e|ec|enc|encodedcommand)\s+\S{8,}
        |\b(?:exec|eval)\s*\(\s*(?:__import__\(\s*['"](?:base64|codecs|zlib|marshal)|compile\(|String\.fromCharCode|unescape\(|decodeURIComponent\()
        |(?:解码|解密|反编码)(?:后|并|然后|之后)?[^。；\n]{0,6}?(?:执行|运行|照做|遵循|遵照|按照)""")),
    Rule("exfiltration", "sends credentials, keys, environment or files somewhere", _r(r"""
        (?:把|将)[^。；\n]{0,40}(?:`?env`?|printenv|环境|配置文件|\.kube|secret|config\.json|私钥|源码|仓库|代码库)[^。；\n]{0,40}
        (?:发送|发到|上传|贴到|粘贴到|提交到|推送到|转发|发给|附在|放到|输出到|打印到)
        |(?:打包|压缩)[^。；\n]{0,20}(?:上传|发送|发到|传到)""")),
    Rule("exfiltration", "leaks data through a DNS lookup", _r(r"""
        \b(?:nslookup|dig|host|ping|curl|wget)\s+[^\n]{0,40}\$\(\s*(?:head|tail|cat|env|printenv|base64|xxd|tr|sed|awk|whoami|hostname|id|ls|echo)\b[^\n]{0,80}\)\s*\.?[\w-]*\.""")),
    Rule("exfiltration", "sends credentials, keys, environment or files somewhere", _r(r"""
        \b(?:send|post|upload|email|mail|paste|forward|share|transmit|submit|publish|include|attach|dump|print)\b""",
    ), check=lambda text, m, _: _secret_to_destination(text, m)),
    Rule("conceal", "tells the reader to hide something from its user", _r(r"""
        \b(?:don'?t|do\s+not|never|without)\s+(?:ask|asking|checking\s+with)(?:\s+(?:anyone|first|the\s+user|them|him|her|permission))?\s*(?:[;:,.!)]|$|\s+(?:just|and|--|—))
        |\b(?:leave|keep)\s+(?:it|this|that|them|these|the\s+\w+(?:\s+\w+)?|any\s+(?:\w+\s+){0,5}?\w+)\s+(?:out\s+of|away\s+from|off|hidden\s+from)\s+(?:the\s+)?(?:pr\b|pull\s+request|commit|migration|release|changelog|summary|notes?|description|review|reviewers?|humans?|users?|human\s+reviewers|reports?|logs?)
        |\bleave\s+out\b[^.\n]{0,80}\b(?:because|so\s+(?:that\s+)?(?:reviewers|the\s+user|nobody|no\s+one|they))
        |\b(?:don'?t|do\s+not|never)\s+(?:mention|reveal|disclose|say|admit)\s+(?:\w+\s+){0,3}?(?:this\s+)?(?:note|memory|source|where\s+(?:it|this)\s+came\s+from|that\s+you)
        |\b(?:when|if)\s+(?:the\s+)?user\s+asks\s+whether[^.\n]{0,80}\b(?:say|answer|reply)\s+no\b
        |(?:不要|别|不用|切勿)(?:说明|透露|提及|提到|说|告诉)[^。；\n]{0,10}(?:来源|从哪|出处|这条|这件事|此事)
        |(?:别|不要|不用)在[^。；\n]{0,12}(?:里|中)(?:提|提及|提到|写|说)(?:这件事|这个|此事|这一步)?
        |(?:不要|别|无需|不必)再?(?:征求|询问|请求|等待)(?:用户|任何人)?的?(?:确认|同意|许可|批准)""")),
    Rule("memory_manipulation", "tries to steer how the hub or its readers rank and repeat memories", _r(r"""
        \bre-?(?:upload|submit|post|save|send)\s+(?:it|this|these|this\s+memory|this\s+note)\b[^.\n]{0,40}\b(?:to\s+the\s+hub|with\s+different\s+wording|every|each|at\s+the\s+end|until|again\s+and\s+again|so\s+it\s+stays)
        |\b(?:rate|mark|vote|flag|upvote|score|treat)\s+(?:it|this|this\s+memory|this\s+note|any\s+(?:other\s+)?memor(?:y|ies)|every\s+memory|all\s+(?:other\s+)?memories|each\s+memory|other\s+memories)\b[^.\n]{0,60}\b(?:helpful|useful|outdated|duplicates?|wrong|verified|trusted|obsolete|superseded)\b
        |\b(?:standing\s+order|treat\s+(?:anything|everything|whatever)\s+(?:it|this\s+(?:memory|note))\s+says\s+as)\b
        |\b(?:pin|keep)\s+this\s+(?:memory|note)\b[^.\n]{0,40}\b(?:every|each|always|top)\b
        |\bcopy\s+(?:this|these)\s+(?:text|paragraph|note|rule|instructions?)\s+(?:in)?to\s+(?:the\s+)?(?:\S*agents?\.md|claude\.md|\.cursorrules|every\s+repo)
        |(?:这条|本条|此)(?:记忆|笔记)[^。；\n]{0,12}(?:重新上传|再次上传|反复上传)|(?:给|为)(?:它|这条|本条)(?:点|打|标)[^。；\n]{0,4}(?:有用|赞|有帮助)
        |(?:其他|矛盾|冲突)的?(?:记忆|笔记)[^。；\n]{0,10}(?:标记为|标为|设为)(?:过时|重复|错误)|复制到[^。；\n]{0,16}(?:AGENTS\.md|CLAUDE\.md|\.cursorrules)""")),
    Rule("memory_manipulation", "tells readers how to answer their users", _r(r"""
        \bwhen(?:ever)?\s+(?:the\s+|a\s+|any\s+)?(?:user|human|someone|anyone|people)\s+asks?\b[^.;\n]{0,100}?,?\s+(?:always\s+|just\s+|simply\s+)?(?:answer|reply|respond|recommend|say|tell\s+(?:them|him|her))\b
        |以后有人问[^。；\n]{0,20}(?:一律|都|就)(?:推荐|回答|说)"""), severity=MARK),
    Rule("disable_checks", "turns off a check or a safety setting", _r(r"""
        \b(?:disable|turn\s+off|switch\s+off|remove|delete|drop|skip|bypass|get\s+rid\s+of)\s+(?:the\s+|all\s+|any\s+)?(?:\w+\s+){0,2}?
            (?:code\s+scanning|codeql|dependabot|required\s+(?:status\s+)?checks|status\s+checks|(?:environment\s+|manual\s+)?approvals?(?:\s+gates?)?|required\s+pull\s+request\s+reviews|
             (?:test|lint|type-?check(?:ing)?|security|scan)\s+(?:job|step|stage|check)s?|ci\s+checks?|pre-commit\s+hooks?|git\s+hooks)\b
        |\bso\s+(?:that\s+)?(?:the\s+)?(?:linter|tests?|ci|checks?|hooks?|scanner|reviewers?)\s+(?:never|won'?t|doesn'?t|no\s+longer|can'?t)\s+(?:run|runs|fire|block|see|notice)
        |\b(?:approv\w*|run|execute|push|merge|delete|install|deploy|apply)\b[^.\n]{0,60}\bwithout\s+(?:asking|confirmation|confirming|permission|reviewing\s+them|looking\s+at\s+(?:it|them|the\s+code)|reading\s+(?:it|them|the\s+plan))\b
        |\b(?:always\s+)?(?:approve|merge)\s+(?:all\s+|every\s+|any\s+)?(?:prs?|pull\s+requests?|changes)\b[^.\n]{0,60}\bwithout\s+(?:review|reviewing)
        |-auto-approve\b(?=[^\n]{0,120}\b(?:prod|production|nobody|no\s+one|skip)\b)|\bpull_request_target\b[^\n]{0,240}(?:write-all|head\.sha|head\.ref|pull_request\.head)
        |\b(?:auto-?approve|allow_all_tools|ALLOW_ALL_TOOLS)\s*=\s*(?:1|true|yes)
        |(?:所有|全部)[^。；\n]{0,16}自动(?:批准|通过|同意|确认)|设为自动批准|自动批准所有
        |把[^。；\n]{0,30}(?:测试|检查|扫描|lint|审查|审批|hook|钩子)[^。；\n]{0,10}(?:删掉|删除|去掉|关掉|禁用|跳过|注释掉)
        |(?:一律|直接|全部)[^。；\n]{0,6}(?:批准|合并|通过)[^。；\n]{0,12}(?:不需要|不用|无需)(?:看|审查|review)"""),
        check=lambda text, m, _: not _disposable(text, m)),
    Rule("persistence", "plants access or a backdoor", _r(r"""
        \bCREATE\s+(?:USER|ROLE)\s+\S+\s+(?:WITH\s+)?[^;\n]{0,40}\bSUPERUSER\b|\bALTER\s+(?:USER|ROLE)\s+\S+\s+(?:WITH\s+)?SUPERUSER\b
        |\bpermission\s*=\s*admin\b|\bgrant\s+(?:the\s+)?(?:github\s+|gitlab\s+)?(?:user|account|bot)\s+\S+\s+(?:admin|owner|write|maintainer)\b
        |\b(?:commit|push|check\s+in|add)\s+(?:the\s+|your\s+)?\.env\b(?!\.example|\.sample|\.template)|\bremove\s+\.env\s+from\s+(?:the\s+)?\.gitignore
        |\b(?:tokens?|credentials|passwords?|api\s+keys?|secrets)\s+(?:go|belong|should\s+be|are\s+stored|must\s+be|live|get\s+committed)\s+(?:in|into)\s+(?:the\s+)?(?:readme|repo|repository|source|code|config\s+file|settings\.py|git)\b
        |\bhard-?coded\s+(?:fallback\s+|admin\s+|default\s+)?(?:credentials|passwords?|tokens?)\s+in\b
        |(?:token|令牌|密钥|密码|凭据|凭证)[^。；\n]{0,12}(?:写在|放在|提交到|存到|写进)[^。；\n]{0,6}(?:README|仓库|代码|git)
        |\bcredential\.helper\s+['"]?store\s+--file"""), check=lambda text, m, _: not _disposable(text, m)),
)


_SECRET_WORDS = re.compile(rf"{_SECRETS}|~/\.\w+", re.IGNORECASE)
_DESTINATION_WORDS = re.compile(
    r"https?://|\S+@\S+\.\w+|\b(?:webhook|gist|pastebin|slack|discord|telegram|teams|#\w+|e-?mail|issue|comment|"
    r"pr\s+description|pull\s+request|commit\s+message|channel|chat|public|external|"
    r"remote\s+server)\b",
    re.IGNORECASE,
)


def _secret_to_destination(text: str, match: re.Match) -> bool:
    """A sending verb, a secret and a destination in one sentence, in any order (a verb written
    as a quoted value, ``credentials: 'include'``, is code, not an order)."""
    if match.start() > 0 and text[match.start() - 1] in "'\"`":
        return False
    left, right = sentence_around(text, match.start(), match.end())
    sentence = text[left:right]
    return bool(_SECRET_WORDS.search(sentence)) and bool(_DESTINATION_WORDS.search(sentence))


_INSTALLER_HOSTS = re.compile(r"https?://([^/\s\"'|)]+)", re.IGNORECASE)


def _installer_allowed(command: str, allowed: Callable[[str], bool]) -> bool:
    """A download piped to a shell from hosts all on the allow-list (rustup, uv, Homebrew …) is
    an installer the team's own docs name; from any other host, or none visible, it is held."""
    hosts = [h.lower().rsplit("@", 1)[-1].split(":")[0] for h in _INSTALLER_HOSTS.findall(command)]
    return bool(hosts) and all(allowed(h) for h in hosts)


_DISPOSABLE = re.compile(
    r"\b(?:test|tests|testing|pytest|fixtures?|ci|local(?:ly|host)?|sandbox|scratch|throwaway|disposable|ephemeral|preview|"
    r"temp(?:orary)?|tmp|dev(?:elopment)?|personal|your\s+own|my\s+own|docker-compose|compose|container|staging-?\w*|"
    r"review\s+app|feature\s+branch|playground|demo|example|migration\s+(?:test|rollback)|rollback|down\s+migration|"
    r"cleanup|teardown|setup|reset\s+the\s+(?:local|dev|test))\b|测试|本地|临时|沙箱|开发环境|预览",
    re.IGNORECASE,
)


def _disposable(text: str, match: re.Match) -> bool:
    """The destroyed thing is a test, local or throwaway one (the words around it say so)."""
    return bool(_DISPOSABLE.search(text[max(0, match.start() - 200):match.end() + 200]))


_MARKER_TALK = re.compile(
    r"\b(?:template|tokens?|format(?:ting)?|tokenizer|strip|escape|render(?:s|ed|ing)?|pars(?:e|es|er|ing)|chat\s+ui|"
    r"llama|mistral|qwen|chatml|fine-?tun\w*|dataset|prompt\s+file|jinja|regex|log(?:s|ging)?|sanitiz\w*|display|"
    r"inference|stop\s+(?:words?|tokens?|sequences?)|special\s+tokens?|encode[sd]?|apply_chat_template)\b"
    r"|模板|分词|微调|推理|停止词|特殊\s*token",
    re.IGNORECASE,
)


def _marker_used(text: str, match: re.Match) -> bool:
    """A chat-template marker used, not one a developer's lesson talks about (how to strip or
    render ``[INST]`` tokens): a sentence about templates, tokens or rendering excuses it when
    no instruction follows the marker."""
    left, right = sentence_around(text, match.start(), match.end())
    if not _MARKER_TALK.search(text[left:right]):
        return True
    after = text[match.end():match.end() + 120]
    return bool(re.search(r"\b(?:ignore|you\s+(?:are|must|will)|always|never|run|execute|send|do\s+not)\b", after, re.I))


def rule_findings(field: str, folded: Folded, allowed_host: Callable[[str], bool]) -> Iterator[Finding]:
    """Every rule's matches in one folded field, excused by their words where the rule allows."""
    text = folded.text
    for rule in RULES:
        for match in rule.pattern.finditer(text):
            if rule.check is not None and not rule.check(text, match, allowed_host):
                continue
            severity = rule.severity
            if rule.excusable:
                if prohibited(text, match.start(), match.end()) or reported(text, match.start(), match.end()):
                    continue
                if discussed(text, match.start(), match.end()):
                    severity = MARK
            start, end = folded.span(match.start(), match.end())
            yield Finding(rule.name, rule.label, field, start, end, folded.original[start:end], severity)

