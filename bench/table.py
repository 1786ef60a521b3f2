#!/usr/bin/env python3
"""bench/table.py RUN.json: print one benchmark run as a Markdown table, for a README.

The version line, the machine and the load average go above the table, the run's notes
below it; the table has one line per row: row, policy, value and unit, baseline and its
value, and the ratio value / baseline.  Exit status 0, or 2 on a usage or file error.
"""
import json
import sys


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3f}"


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"table.py: {argv[1]}: {e}", file=sys.stderr)
        return 2
    m = doc.get("machine", {})
    print(f"`{doc.get('version')}`, {doc.get('program')}, median of {doc.get('runs')} runs"
          f"{' (quick sizes)' if doc.get('quick') else ''}.  ")
    print(f"Machine: {m.get('cpu_model')}, {m.get('online_cpus')} online CPUs, "
          f"{m.get('kernel')}, {m.get('memory_bytes', 0) / 2**30:.1f} GiB, "
          f"{'virtual machine' if m.get('vm') else 'bare metal'}; load average "
          f"{doc.get('load_start', float('nan')):.2f} at the start, "
          f"{doc.get('load_end', float('nan')):.2f} at the end"
          + (f"; other processes used {100 * doc['others_cpu_share']:.0f}% of the CPUs "
             "during the run." if "others_cpu_share" in doc else "."))
    print()
    print("| row | policy | value | baseline | ratio |")
    print("|---|---|---:|---:|---:|")
    for r in doc.get("rows", []):
        base = "-"
        if r.get("baseline"):
            base = f"{fmt(r.get('baseline_value'))} ({r['baseline']})"
        ratio = f"{r['ratio']:.2f}x" if r.get("ratio") is not None else "-"
        print(f"| {r['name']} | {r.get('policy') or '-'} | {fmt(r.get('value'))} {r['unit']} "
              f"| {base} | {ratio} |")
    notes = doc.get("notes", [])
    if notes:
        print()
        for n in notes:
            print(f"- {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
