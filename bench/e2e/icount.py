#!/usr/bin/env python3
"""bench/e2e/icount.py: instructions the daemon's threads run per request, counted by
callgrind (a count, which does not move with the machine's load the way a time does).

    bench/e2e/icount.py [--n N] JSCHEDD [JSCHEDD ...]

Each jschedd runs under `valgrind --tool=callgrind --instr-atstart=no` on a config of its
own (2 workers, the sleep policy, the journal off); one connection says hello, then for each
row the collection is switched on (callgrind_control -i on) around N requests of that row
and off after, and the row's instructions (every thread of the daemon, the loop's nearly
all) are divided by N.  Rows: ping; submit of one noop with `wait` (one request per job);
the same with a timeout of 10 s (`"wait": {"timeout_ms": 10000}`, what bench_e2e's round
trips send); submit of one noop, then wait (two requests); status of one job; a batch of 1,000 spin jobs
of 0 us with `wait` (per job).  The frames are the ones libjsched sends (member order
included).  Prints one line per row and build, and the ratio new/old when given two.
"""
import json, os, socket, struct, subprocess, sys, tempfile, time, glob, shutil

def frame(obj):
    b = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack(">I", len(b)) + b

def recv_frame(s):
    h = b""
    while len(h) < 4:
        c = s.recv(4 - len(h))
        if not c:
            raise SystemExit("icount: daemon closed the connection")
        h += c
    n = struct.unpack(">I", h)[0]
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise SystemExit("icount: daemon closed the connection")
        b += c
    return json.loads(b)

def call(s, obj):
    s.sendall(frame(obj))
    while True:
        m = recv_frame(s)
        if "event" not in m:
            return m

ROWS = ["ping", "submit_wait", "submit_wait_10s", "submit+wait", "status", "batch1000_wait"]

def run(binary, n):
    d = tempfile.mkdtemp(prefix="icount-")
    sock = os.path.join(d, "s")
    conf = os.path.join(d, "c.json")
    with open(conf, "w") as f:
        json.dump({"socket": sock, "workers": 2, "idle_policy": "sleep", "journal": {"sync": "off"},
                   "limits": {"queued_jobs": 10000000},
                   "clients": {"default": {"max_queued": 10000000}}}, f)
    out = os.path.join(d, "cg.out")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                          "--callgrind-out-file=" + out, binary, "-c", conf],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "log"), "w"))
    res = {}
    try:
        for _ in range(600):
            if os.path.exists(sock):
                try:
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(sock)
                    break
                except OSError:
                    s.close()
            time.sleep(0.1)
        else:
            raise SystemExit("icount: %s did not start" % binary)
        rid = 1
        r = call(s, {"op": "hello", "id": rid, "version": 2, "client": "icount"})
        assert r.get("ok"), r
        job = {"kind": "call", "fn": "noop"}
        spin = {"kind": "call", "fn": "spin", "args": {"us": 0}}
        # one job for status
        rid += 1
        first = call(s, {"op": "submit", "id": rid, "job": job, "wait": True})["job"]
        for row in ROWS:
            reps = n if row != "batch1000_wait" else max(2, n // 500)
            def once():
                nonlocal rid
                rid += 1
                if row == "ping":
                    r = call(s, {"op": "ping", "id": rid})
                elif row == "submit_wait":
                    r = call(s, {"op": "submit", "id": rid, "job": job, "wait": True})
                elif row == "submit_wait_10s":
                    r = call(s, {"op": "submit", "id": rid, "job": job, "wait": {"timeout_ms": 10000}})
                elif row == "submit+wait":
                    r = call(s, {"op": "submit", "id": rid, "job": job})
                    rid += 1
                    r = call(s, {"op": "wait", "id": rid, "job": r["job"]})
                elif row == "status":
                    r = call(s, {"op": "status", "id": rid, "job": first})
                else:
                    r = call(s, {"op": "submit", "id": rid, "jobs": [spin] * 1000, "wait": True})
                assert r.get("ok"), r
            for _ in range(3):
                once()  # warm
            subprocess.run(["callgrind_control", "-i", "on", str(p.pid)], stdout=subprocess.DEVNULL)
            for _ in range(3):
                once()  # the code instrumented again
            subprocess.run(["callgrind_control", "-z", str(p.pid)], stdout=subprocess.DEVNULL)
            for _ in range(reps):
                once()
            subprocess.run(["callgrind_control", "-d", str(p.pid)], stdout=subprocess.DEVNULL)
            subprocess.run(["callgrind_control", "-i", "off", str(p.pid)], stdout=subprocess.DEVNULL)
            total = 0
            for f in sorted(glob.glob(out + ".*"), key=os.path.getmtime)[-1:]:
                for line in open(f):
                    if line.startswith("summary:") or line.startswith("totals:"):
                        total += int(line.split()[1])
                        break
            per = total / (reps * (1000 if row == "batch1000_wait" else 1))
            res[row] = per
        s.close()
    finally:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)
    return res

def main():
    a = sys.argv[1:]
    n = 2000
    if len(a) >= 2 and a[0] == "--n":
        n = int(a[1])
        a = a[2:]
    if not a:
        raise SystemExit(__doc__)
    allres = []
    for b in a:
        v = subprocess.run([b, "--version"], capture_output=True, text=True).stdout.strip()
        print("build %s: %s" % (b, v))
        allres.append(run(b, n))
    print("%-16s" % "row" + "".join("%14s" % ("build %d" % i) for i in range(len(a))) +
          ("%10s" % "new/old" if len(a) == 2 else ""))
    for row in ROWS:
        line = "%-16s" % row + "".join("%14.0f" % r[row] for r in allres)
        if len(a) == 2:
            line += "%10.3f" % (allres[1][row] / allres[0][row])
        print(line + "  instructions per %s" % ("job" if row.startswith("batch") else "request"))

main()
