#!/usr/bin/env python3
"""bench/compare.py OLD.json NEW.json: compare two runs of a benchmark row by row.

Both files are what a benchmark writes with --json (the shape is in bench/common/bench.h).
Rows are matched by (name, policy); for each pair this prints the two values and
new / old, so below 1.00x means the new run was faster for a time, and each run's own
ratio to its baseline (value / baseline in that run), which moves less with the machine's
load than the values do.  Rows present in only
one file are listed after the table.  Exit status: 0, or 2 on a usage or file error.
"""
import json
import sys


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"compare.py: {path}: {e}")
    rows = {}
    for row in doc.get("rows", []):
        rows[(row["name"], row.get("policy"))] = row
    return doc, rows


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.2f}"
    return f"{v:.3f}"


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    old_doc, old = load(argv[1])
    new_doc, new = load(argv[2])
    print(f"old: {old_doc.get('version')}  ({argv[1]})")
    print(f"new: {new_doc.get('version')}  ({argv[2]})")
    for label, doc in (("old", old_doc), ("new", new_doc)):
        if "load_start" in doc:
            print(f"{label}: load average {doc['load_start']:.2f} at the start, "
                  f"{doc.get('load_end', float('nan')):.2f} at the end"
                  + (f", others used {100 * doc['others_cpu_share']:.0f}% of the CPUs"
                     if "others_cpu_share" in doc else ""))
    if old_doc.get("machine") != new_doc.get("machine"):
        print("note: the two runs were made on different machines")
    line = "{:<40} {:<6} {:<8} {:>12} {:>12} {:>9} {:>11} {:>11}"
    print(line.format("row", "policy", "unit", "old", "new", "new/old", "old/base",
                      "new/base"))
    for key, n in new.items():
        o = old.get(key)
        if o is None:
            continue
        ov, nv = o.get("value"), n.get("value")
        ratio = f"{nv / ov:.2f}x" if ov and nv is not None else "-"
        def base(r):
            return f"{r['ratio']:.2f}x" if r.get("ratio") is not None else "-"
        print(line.format(key[0], key[1] or "-", n.get("unit", ""), fmt(ov), fmt(nv), ratio,
                          base(o), base(n)))
    only_old = [k for k in old if k not in new]
    only_new = [k for k in new if k not in old]
    for label, keys in (("only in old", only_old), ("only in new", only_new)):
        for name, policy in keys:
            print(f"{label}: {name} ({policy or '-'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
