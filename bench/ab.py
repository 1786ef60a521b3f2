#!/usr/bin/env python3
"""bench/ab.py [--rounds N] OLD_BIN NEW_BIN [ARGS...]: the same benchmark from two builds,
alternated in one session: OLD, NEW, OLD, NEW, ... N rounds each (default 4), each run with
ARGS and --json, then per row (name, policy) the least value of each over its rounds, and
new / old.  On a shared machine the load moves from minute to minute; alternating puts both
builds under the same load, and the least of several runs is the one least disturbed.
Exit status 0, or 2 on a usage error or a run that failed.
"""
import json
import os
import subprocess
import sys
import tempfile


def run(binary, args, path):
    r = subprocess.run([binary, *args, "--json", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit(f"ab.py: {binary} exited {r.returncode}")
    with open(path) as f:
        return json.load(f)


def main(argv):
    rounds = 4
    if len(argv) > 2 and argv[1] == "--rounds":
        rounds = int(argv[2])
        argv = [argv[0]] + argv[3:]
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    old, new, args = argv[1], argv[2], argv[3:]
    best = {old: {}, new: {}}
    order = []
    versions = {}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.json")
        for _ in range(rounds):
            for b in (old, new):
                doc = run(b, args, path)
                versions[b] = doc.get("version", "?")
                for row in doc.get("rows", []):
                    key = (row["name"], row.get("policy"))
                    if key not in order:
                        order.append(key)
                    v = row["value"]
                    if key not in best[b] or v < best[b][key][0]:
                        best[b][key] = (v, row.get("unit", ""))
    print(f"old: {versions[old]}  ({old})")
    print(f"new: {versions[new]}  ({new})")
    print(f"least of {rounds} alternated runs each, args: {' '.join(args) or '(none)'}")
    print(f"{'row':48} {'policy':6} {'old':>10} {'new':>10} {'unit':8} {'new/old':>8}")
    for key in order:
        o, n = best[old].get(key), best[new].get(key)
        if not o or not n:
            continue
        ratio = n[0] / o[0] if o[0] else float("nan")
        print(f"{key[0][:48]:48} {str(key[1] or ''):6} {o[0]:10.2f} {n[0]:10.2f} {o[1]:8} {ratio:8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
