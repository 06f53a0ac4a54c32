"""Redaction quality and speed on the labelled sets in ../shared/eval/pii/.

    .venv/bin/python bench/redaction.py [--json] [--limit N]

Prints per entity type recall and precision (Presidio's synthetic set), recall / false flags on
detect-secrets' plugin cases, Chinese mobile numbers and the any-rule phone / ID / e-mail
examples, recall per family of credential shapes on our own labelled cases
(tests/data/secret_cases.jsonl), false flags on ordinary technical lines (tests/data and lines
taken from the real sessions), the overall leak rate (labelled values still present after
redaction), and throughput in characters per second next to the embedding model on the same texts.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import django_setup, eval_path, print_table, session_pieces, skip, write_results  # noqa: E402

TARGETS = ["EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "IP_ADDRESS", "US_SSN", "PERSON"]
_TAG_RE = re.compile(r"<[A-Z][A-Z0-9_]*>")


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def findings_of(text: str):
    """The findings the hub redacts, as (start, end, tag)."""
    from memories.redaction import analyze_many

    return [(f.start, f.end, f.tag) for f in analyze_many([text])[0]]


def presidio_set(limit: int | None, rows: list, figures: dict) -> list[str]:
    path = eval_path("pii", "presidio_research", "synth_dataset_v2.json")
    if path is None:
        rows.append(("presidio synthetic set", "absent, skipped"))
        return []
    data = json.loads(path.read_text())[:limit]
    tp: Counter = Counter()
    gold_n: Counter = Counter()
    pred_n: Counter = Counter()
    pred_tp: Counter = Counter()
    leaks = total_values = 0
    texts = []
    for item in data:
        text = item["full_text"]
        texts.append(text)
        found = findings_of(text)
        from memories.redaction import redact

        out = redact(text).text
        gold = [(s["start_position"], s["end_position"], s["entity_type"]) for s in item["spans"]]
        for start, end, kind in gold:
            if kind not in TARGETS:
                continue
            gold_n[kind] += 1
            total_values += 1
            if s_value := text[start:end].strip():
                if s_value in out:
                    leaks += 1
            if any(tag == kind and _overlap((start, end), (fs, fe)) >= 0.5 * (end - start) for fs, fe, tag in found):
                tp[kind] += 1
        for fs, fe, tag in found:
            if tag not in TARGETS:
                continue
            pred_n[tag] += 1
            if any(kind == tag and _overlap((fs, fe), (gs, ge)) > 0 for gs, ge, kind in gold):
                pred_tp[tag] += 1
    for kind in TARGETS:
        recall = tp[kind] / gold_n[kind] if gold_n[kind] else float("nan")
        precision = pred_tp[kind] / pred_n[kind] if pred_n[kind] else float("nan")
        rows.append((f"presidio {kind}", f"recall {recall:.3f} ({tp[kind]}/{gold_n[kind]})  "
                                         f"precision {precision:.3f} ({pred_tp[kind]}/{pred_n[kind]})"))
        figures[f"recall_{kind}"] = recall
        figures[f"precision_{kind}"] = precision
    figures["presidio_leaks"] = leaks
    figures["presidio_values"] = total_values
    return texts


def detect_secrets(rows: list, figures: dict, leaks: list) -> None:
    from memories.redaction import redact

    path = eval_path("pii", "detect_secrets", "detect_secrets_cases.json")
    if path is None:
        rows.append(("detect-secrets", "absent, skipped"))
        return
    from memories.redaction.naming import stand_in

    cases = json.loads(path.read_text())
    per_plugin: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # hit, should, false, shouldnt
    kept_stand_ins: list[str] = []
    for case in cases:
        flagged = redact(case["text"]).text != case["text"]
        stats = per_plugin[case["plugin_test"].removesuffix("_test.py")]
        if case["should_flag"] and not flagged and stand_in(case["text"].rsplit("=", 1)[-1].strip()):
            kept_stand_ins.append(case["text"])  # a prefix and a filler ("npm_xxxxxxxxxxx"): a stand-in, by choice
            continue
        if case["should_flag"]:
            stats[1] += 1
            stats[0] += flagged
            if not flagged:
                leaks.append(case["text"])
        else:
            stats[3] += 1
            stats[2] += flagged
    hits = sum(s[0] for s in per_plugin.values())
    should = sum(s[1] for s in per_plugin.values())
    false = sum(s[2] for s in per_plugin.values())
    shouldnt = sum(s[3] for s in per_plugin.values())
    rows.append(("detect-secrets should_flag recall", f"{hits / should:.3f} ({hits}/{should})"))
    rows.append(("  should_flag cases kept as stand-ins", f"{len(kept_stand_ins)}: {', '.join(kept_stand_ins) or '-'}"))
    rows.append(("detect-secrets false flags", f"{false / shouldnt:.3f} ({false}/{shouldnt})"))
    misses = [f"{p}:{s[1] - s[0]}" for p, s in sorted(per_plugin.items()) if s[1] - s[0]]
    falses = [f"{p}:{s[2]}" for p, s in sorted(per_plugin.items()) if s[2]]
    rows.append(("  missed by plugin", ", ".join(misses) or "none"))
    rows.append(("  false flags by plugin", ", ".join(falses) or "none"))
    figures["secrets_recall"] = hits / should
    figures["secrets_false_flag_rate"] = false / shouldnt


def cn_phones(rows: list, figures: dict, leaks: list) -> None:
    from memories.redaction import redact

    path = eval_path("pii", "cn_phone", "test_data.json")
    if path is None:
        rows.append(("Chinese mobiles", "absent, skipped"))
        return
    data = json.loads(path.read_text())
    templates = ["{n}", "我的手机号是{n}，有事请联系。", "Call me on {n} after 6pm.", "联系电话：+86 {n}"]

    def rate(numbers: list[int], *, count_leaks: bool = True) -> tuple[int, int]:
        hit = 0
        for number in numbers:
            ok = True
            for template in templates:
                out = redact(template.format(n=number)).text
                if str(number) in out:
                    ok = False
                    if count_leaks:
                        leaks.append(str(number))
            hit += ok
        return hit, len(numbers)

    def flatten(group: str) -> list[int]:
        return [n for values in data.get(group, {}).values() for n in values]

    valid = flatten("carrier") + flatten("mvno") + flatten("data_plan_only")
    hit, total = rate(valid)
    rows.append(("Chinese mobiles (valid 11-digit) recall", f"{hit / total:.3f} ({hit}/{total}, 4 templates each)"))
    figures["cn_mobile_recall"] = hit / total
    iot_hit, iot_total = rate(flatten("iot"), count_leaks=False)
    rows.append(("  13-digit IoT numbers redacted", f"{iot_hit}/{iot_total} (not personal; left alone)"))
    reserved = flatten("reserved")
    flagged = sum(redact(str(n)).text != str(n) for n in reserved)
    rows.append(("  reserved ranges flagged", f"{flagged}/{len(reserved)} (harmless over-redaction)"))
    stamp = "2024-03-15 13:45:12.138123456 build 20240315138123456"
    rows.append(("  timestamp/long digit run untouched", str(redact(stamp).text == stamp)))


def any_rule(rows: list, figures: dict, leaks: list) -> None:
    from memories.redaction import redact

    path = eval_path("pii", "any_rule", "rules_examples.json")
    if path is None:
        rows.append(("any-rule", "absent, skipped"))
        return
    rules = json.loads(path.read_text())
    wanted = ("手机号", "座机", "身份证", "email")
    hit = total = 0
    misses = []
    for rule in rules:
        if not any(key in rule["title"] for key in wanted):
            continue
        for example in rule["examples"]:
            example = str(example)
            total += 1
            if redact(example).text != example and example not in redact(example).text:
                hit += 1
            else:
                misses.append(example)
                leaks.append(example)
    rows.append(("any-rule phone/ID/e-mail recall", f"{hit / total:.3f} ({hit}/{total})"))
    rows.append(("  missed", ", ".join(misses) or "none"))
    figures["any_rule_recall"] = hit / total


DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
_NOT_SECRET_TAGS = {"<UUID>", "<PERSON>", "<PHONE_NUMBER>", "<USER>", "<EMAIL_ADDRESS>"}


def secret_families(rows: list, figures: dict, leaks: list) -> None:
    """Recall per family on our own labelled credential shapes (tests/data/secret_cases.jsonl)."""
    from memories.redaction import redact_many

    cases = [json.loads(line) for line in (DATA / "secret_cases.jsonl").read_text().splitlines() if line.strip()]
    results = redact_many([case["line"] for case in cases])
    by_family: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for case, result in zip(cases, results, strict=True):
        hidden = case["secret"] not in result.text
        by_family[case["family"]][0] += hidden
        by_family[case["family"]][1] += 1
        if not hidden:
            leaks.append(case["line"])
    for family, (hit, total) in sorted(by_family.items()):
        rows.append((f"credential shapes: {family}", f"recall {hit / total:.3f} ({hit}/{total})"))
        figures[f"family_recall_{family}"] = hit / total
    hit = sum(h for h, _ in by_family.values())
    rows.append(("credential shapes: all families", f"recall {hit / len(cases):.3f} ({hit}/{len(cases)})"))
    figures["family_recall"] = hit / len(cases)


def _session_lines(limit: int = 400) -> list[str]:
    """Ordinary technical lines from the real Claude Code sessions: tool output and commands,
    20-200 characters, distinct, a fixed spread across the files."""
    return session_pieces(str.splitlines, tool_results=True, limit=limit,
                          keep=lambda line: 20 <= len(line) <= 200 and bool(re.search(r"[/=:(\d]", line))
                          and not line.startswith("[tool"))


def false_flags(rows: list, figures: dict, show: bool) -> None:
    """The cost of recall: ordinary lines changed by redaction (any tag), and by a secret
    detector (a tag other than identifiers and NER personal data)."""
    from memories.redaction import redact_many

    sets = {"ordinary lines (tests/data)": [line for line in (DATA / "ordinary_lines.txt").read_text().splitlines()
                                            if line.strip()],
            "lines from real sessions": _session_lines()}
    for name, lines in sets.items():
        if not lines:
            rows.append((name, "absent, skipped"))
            continue
        results = redact_many(lines)
        changed = [(line, r.text) for line, r in zip(lines, results, strict=True) if r.text != line]
        secret = [(line, text) for line, text in changed
                  if set(_TAG_RE.findall(text)) - set(_TAG_RE.findall(line)) - _NOT_SECRET_TAGS]
        rows.append((f"false flags: {name}", f"{len(secret) / len(lines):.3f} by secret detectors ({len(secret)}/"
                                              f"{len(lines)}); {len(changed) / len(lines):.3f} changed at all"))
        key = "session" if "session" in name else "ordinary"
        figures[f"false_flags_{key}_secret"] = len(secret) / len(lines)
        figures[f"false_flags_{key}_any"] = len(changed) / len(lines)
        if show:
            for line, text in secret:
                print(f"FLAG {line}\n  => {text}")


def throughput(texts: list[str], rows: list, figures: dict) -> None:
    from memories.providers.embeddings import get_embedder
    from memories.redaction import redact, redact_many

    texts = texts[:300] or ["Contact John Smith at john@example.com about the failing deploy."] * 100
    chars = sum(len(t) for t in texts)
    redact_many(texts[:5])
    started = time.perf_counter()
    for text in texts:
        redact(text)
    one = time.perf_counter() - started
    started = time.perf_counter()
    redact_many(texts)
    batch = time.perf_counter() - started
    embedder = get_embedder()
    embedder.embed(texts[:5])
    started = time.perf_counter()
    for text in texts:
        embedder.embed([text])
    embed = time.perf_counter() - started
    rows.append(("throughput, one text at a time", f"{chars / one:,.0f} chars/s ({len(texts) / one:.0f} texts/s)"))
    rows.append(("throughput, batched", f"{chars / batch:,.0f} chars/s ({len(texts) / batch:.0f} texts/s)"))
    rows.append(("embedding the same texts one at a time", f"{chars / embed:,.0f} chars/s"))
    rows.append(("redaction time / embedding time", f"{one / embed:.2f} (one at a time)"))
    figures["chars_per_s"] = chars / one
    figures["chars_per_s_batched"] = chars / batch
    figures["redaction_to_embedding_time"] = one / embed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="only the first N synthetic texts")
    parser.add_argument("--show-leaks", action="store_true")
    args = parser.parse_args()
    if eval_path("pii") is None:
        skip("../shared/eval/pii not found")
    django_setup()
    rows: list[tuple[str, str]] = []
    figures: dict = {}
    leaks: list[str] = []
    texts = presidio_set(args.limit, rows, figures)
    detect_secrets(rows, figures, leaks)
    cn_phones(rows, figures, leaks)
    any_rule(rows, figures, leaks)
    secret_families(rows, figures, leaks)
    labelled = figures.get("presidio_values", 0) + len(leaks) + 1
    figures["leak_rate"] = (figures.get("presidio_leaks", 0) + len(leaks)) / labelled
    rows.append(("overall leak rate", f"{figures['leak_rate']:.3f} (labelled values left in the output)"))
    false_flags(rows, figures, args.show_leaks)
    throughput(texts, rows, figures)
    print_table("Redaction (2 cores)", rows)
    if args.show_leaks:
        print("\nleaks:", *leaks[:50], sep="\n  ")
    write_results("redaction", figures, as_json=args.json)


if __name__ == "__main__":
    main()
