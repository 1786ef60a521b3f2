#!/usr/bin/env python3
"""bench/dashboard/bench_dashboard.py [--json FILE] [--runs N] [--quick]: what the dashboard
costs the daemon, and how fast its page loads.

In one session: a jschedd of its own, a load of noop jobs at 1,000 jobs/s (batches of 10
every 10 ms, from this process over the Unix socket), and the daemon's CPU time (utime +
stime from /proc) over a fixed window, first with nobody watching (the baseline), then with
`jsched dashboard` open in headless Chromium (its event stream sends the metrics document
every second and every job event).  Also the page's load time (navigation start to the load
event) and the time to its first live figures (the first metrics event), medians of N
loads.  Needs chromium and chromedriver (Debian's chromium, chromium-driver); prints the
build's version first, as every benchmark in bench/ does.
"""
import json
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "libclient"))
import test_dashboard as T  # noqa: E402  (its WebDriver client and helpers)

BUILD = T.BUILD


def args():
    a = {"json": None, "runs": 5, "quick": False}
    argv = sys.argv[1:]
    while argv:
        o = argv.pop(0)
        if o == "--json":
            a["json"] = argv.pop(0)
        elif o == "--runs":
            a["runs"] = int(argv.pop(0))
        elif o == "--quick":
            a["quick"] = True
        elif o in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        else:
            sys.exit("bench_dashboard: unknown option %s" % o)
    return a


class Client:
    """The protocol over the socket: 4-byte big-endian length, one JSON object."""

    def __init__(self, path, name):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.n = 0
        self.call({"op": "hello", "version": 1, "client": name})

    def send(self, msg):
        self.n += 1
        msg["id"] = self.n
        b = json.dumps(msg).encode()
        self.s.sendall(struct.pack(">I", len(b)) + b)

    def recv(self):
        hdr = self._exact(4)
        return json.loads(self._exact(struct.unpack(">I", hdr)[0]))

    def _exact(self, n):
        b = b""
        while len(b) < n:
            part = self.s.recv(n - len(b))
            if not part:
                raise EOFError("jschedd hung up")
            b += part
        return b

    def call(self, msg):
        self.send(msg)
        return self.recv()


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(client, seconds, rate=1000, batch=10):
    """Submit noop jobs at `rate` per second for `seconds`; every reply read."""
    period = batch / rate
    end = time.monotonic() + seconds
    nxt = time.monotonic()
    sent = 0
    spec = [{"kind": "call", "fn": "noop"}] * batch
    while time.monotonic() < end:
        client.send({"op": "submit", "jobs": spec})
        r = client.recv()
        if not r.get("ok"):
            raise RuntimeError("submit refused: %s" % r)
        sent += batch
        nxt += period
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    return sent


def main():
    a = args()
    version = subprocess.run([T.JSCHEDD, "--version"], capture_output=True, text=True).stdout.strip()
    print(version)
    print("bench-dashboard: medians of %d runs" % a["runs"])
    if not T.CHROMIUM or not T.CHROMEDRIVER:
        print("bench-dashboard: chromium and chromedriver are not installed: nothing measured")
        return 0
    window = 2.0 if a["quick"] else 10.0
    tmp = tempfile.mkdtemp(prefix="jsched-bdash-")
    os.chmod(tmp, 0o755)
    sock = os.path.join(tmp, "s")
    with open(os.path.join(tmp, "c.json"), "w") as f:
        json.dump({"socket": sock, "workers": 2, "retention": {"jobs": 5000}}, f)
    procs, driver, rows = [], None, []
    try:
        daemon = subprocess.Popen([T.JSCHEDD, "-c", os.path.join(tmp, "c.json")],
                                  stderr=open(os.path.join(tmp, "log"), "w"))
        procs.append(daemon)
        T.until(lambda: os.path.exists(sock), "the socket", 15)
        client = T.until(lambda: Client(sock, "load"), "a connection", 15)

        def cpu_at_load():
            c0, t0 = cpu_seconds(daemon.pid), time.monotonic()
            n = load(client, window)
            c1, t1 = cpu_seconds(daemon.pid), time.monotonic()
            return (c1 - c0) / (t1 - t0), n / (t1 - t0)

        idle = [cpu_at_load() for _ in range(max(1, a["runs"] // 2))]
        dash = subprocess.Popen([T.JSCHED, "-s", sock, "dashboard"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        procs.append(dash)
        url = dash.stdout.readline().strip().split(": ", 1)[1]
        port = T.free_port()
        cd = subprocess.Popen([T.CHROMEDRIVER, "--port=%d" % port], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        procs.append(cd)
        T.until(lambda: T.http_status("http://127.0.0.1:%d/status" % port) == 200, "chromedriver", 20)
        driver = T.WebDriver(port)
        loads, firsts = [], []
        for _ in range(a["runs"]):
            t0 = time.monotonic()
            driver.go(url)
            T.until(lambda: driver.js("return window.jschedStats && window.jschedStats.metrics > 0;"),
                    "the first metrics event", 30)
            firsts.append((time.monotonic() - t0) * 1000)
            loads.append(driver.js("const n = performance.getEntriesByType('navigation')[0];"
                                   "return n.loadEventEnd - n.startTime;"))
        watched = [cpu_at_load() for _ in range(max(1, a["runs"] // 2))]
        base = statistics.median(c for c, _ in idle)
        with_dash = statistics.median(c for c, _ in watched)
        rows = [
            ("daemon CPU at 1,000 jobs/s, nobody watching", "CPU share", base, None, None),
            ("daemon CPU at 1,000 jobs/s, dashboard open", "CPU share", with_dash,
             "nobody watching", base),
            ("submitted rate during the measurement (dashboard open)", "jobs/s",
             statistics.median(r for _, r in watched), "target", 1000.0),
            ("page load (navigation start to load event)", "ms", statistics.median(loads), None, None),
            ("page load to the first live figures", "ms", statistics.median(firsts),
             "page load", statistics.median(loads)),
        ]
    finally:
        if driver:
            driver.quit()
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%-60s %12s %-10s %-18s %12s %8s" % ("row", "value", "unit", "baseline", "base value", "ratio"))
    out = []
    for name, unit, v, bname, bv in rows:
        ratio = v / bv if bv else None
        print("%-60s %12.4g %-10s %-18s %12s %8s" % (name, v, unit, bname or "-",
              "%.4g" % bv if bv else "-", "%.2fx" % ratio if ratio else "-"))
        out.append({"name": name, "unit": unit, "policy": None, "value": v, "baseline": bname,
                    "baseline_value": bv, "ratio": ratio})
    with open("/proc/loadavg") as f:
        print("bench-dashboard: load average %s at the end" % f.read().split()[0])
    if a["json"]:
        with open(a["json"], "w") as f:
            json.dump({"version": version, "program": "bench-dashboard", "runs": a["runs"],
                       "quick": a["quick"], "rows": out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
