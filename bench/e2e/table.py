#!/usr/bin/env python3
"""bench/e2e/table.py RESULT.json: the rows of a bench_e2e --json file as a Markdown table.

This is how the "Measured" tables in README.md and bench/e2e/README.md are made: every
row beside its baseline and the ratio, and the one command that reproduces its part.
"""
import json
import sys

PART = {"rtt": "rtt", "tput": "tput", "exec": "exec", "cli": "exec", "fair": "fair", "scale": "scale"}


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: table.py RESULT.json")
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    m = doc.get("machine", {})
    print(f"`{doc.get('version')}`; {m.get('cpu_model')}, {m.get('online_cpus')} CPUs, "
          f"{m.get('kernel')}, {'VM' if m.get('vm') else 'bare metal'}; {doc.get('runs')} runs per row "
          "unless a note says fewer.\n")
    print("| row | policy | value | unit | baseline | baseline value | ratio | reproduce |")
    print("|---|---|---:|---|---|---:|---:|---|")
    for r in doc["rows"]:
        part = PART.get(r["name"].split(":")[0], "")
        ratio = f"{r['ratio']:.2f}x" if r.get("ratio") is not None else "-"
        print(f"| {r['name']} | {r.get('policy') or '-'} | {fmt(r['value'])} | {r['unit']} | "
              f"{r.get('baseline') or '-'} | {fmt(r.get('baseline_value'))} | {ratio} | "
              f"`bench/e2e/run.sh {part}` |")
    for n in doc.get("notes", []):
        print(f"\n- {n}", end="")
    print()


if __name__ == "__main__":
    main()
