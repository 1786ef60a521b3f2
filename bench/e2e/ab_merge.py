#!/usr/bin/env python3
"""bench/e2e/ab_merge.py DIR ROUNDS: the median of each row over ab.sh's rounds, old beside
new, with new / old (below 1.00x is better for times, above for rates)."""
import json
import statistics
import sys

d, rounds = sys.argv[1], int(sys.argv[2])


def rows(kind):
    acc = {}
    units = {}
    for i in range(1, rounds + 1):
        with open(f"{d}/{kind}-{i}.json") as f:
            for r in json.load(f).get("rows", []):
                key = (r["name"], r.get("policy"))
                acc.setdefault(key, []).append(r["value"])
                units[key] = r.get("unit", "")
    return {k: statistics.median(v) for k, v in acc.items()}, units


old, units = rows("old")
new, _ = rows("new")
print(f"{'row':<70} {'policy':<6} {'old':>12} {'new':>12} {'new/old':>8}")
for key in old:
    if key in new and old[key]:
        name, pol = key
        print(f"{name[:70]:<70} {pol or '-':<6} {old[key]:>12.4g} {new[key]:>12.4g}"
              f" {new[key] / old[key]:>7.2f}x  {units[key]}")
