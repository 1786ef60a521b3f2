#!/usr/bin/env python3
"""tests/libclient/test_dashboard.py: `jsched dashboard` in a real browser.

Starts a real jschedd in a temp dir, `jsched dashboard` against it, and headless Chromium
driven through chromedriver (the W3C WebDriver protocol over loopback, with nothing but
Python's standard library).  Checks, in the page's DOM: the jobs two clients submitted
appear and change state as they run; the share chart has one realized-share series per
client; the cancel button of a running job cancels it (the daemon says so, not the page);
requests without the token, or with another Host header, are refused.  Screenshots go to
$JSCHED_BUILD_DIR/dashboard/.  Every wait is bounded; a bound that runs out fails the test.
Skips (exit 0, "skipped: ..." on stderr) when chromium or chromedriver is not installed.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BUILD = os.path.abspath(os.environ.get("JSCHED_BUILD_DIR", "build/rel"))
JSCHEDD = os.path.join(BUILD, "bin", "jschedd")
JSCHED = os.path.join(BUILD, "bin", "jsched")
SHOTS = os.path.join(BUILD, "dashboard")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def until(fn, what, seconds=30.0):
    """Poll fn (bounded in time) until it returns a true value; return it."""
    end = time.monotonic() + seconds
    last = None
    while time.monotonic() < end:
        try:
            last = fn()
        except Exception as e:  # the page may be between states
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class WebDriver:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1100", "--no-first-run", "--disable-extensions"]}}}}
        self.sid = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read() or b"{}").get("value", {}) if path != "/session" \
                    else json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError("webdriver %s %s: %s" % (method, path, e.read()[:300]))

    def s(self, method, path, body=None):
        return self.call(method, "/session/%s%s" % (self.sid, path), body)

    def go(self, url):
        self.s("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def click(self, css):
        el = self.s("POST", "/element", {"using": "css selector", "value": css})
        eid = list(el.values())[0]
        self.s("POST", "/element/%s/click" % eid, {})

    def shot(self, name):
        import base64
        os.makedirs(SHOTS, exist_ok=True)
        png = base64.b64decode(self.s("GET", "/screenshot"))
        with open(os.path.join(SHOTS, name), "wb") as f:
            f.write(png)

    def quit(self):
        try:
            self.s("DELETE", "")
        except Exception:
            pass


def jsched(sock, *args, client=None):
    cmd = [JSCHED, "-s", sock] + (["-C", client] if client else []) + list(args)
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=30).stdout


def state_of(sock, job):
    """The job's state as the daemon says it (jsched status --json: {"jobs": [record]})."""
    return json.loads(jsched(sock, "status", "--json", str(job)))["jobs"][0]["state"]


def http_status(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    if not CHROMIUM or not CHROMEDRIVER:
        print("skipped: chromium and chromedriver are not installed (Debian's chromium and"
              " chromium-driver): the dashboard was not tried in a browser", file=sys.stderr)
        return 0
    tmp = tempfile.mkdtemp(prefix="jsched-dash-")
    os.chmod(tmp, 0o755)
    sock = os.path.join(tmp, "s")
    with open(os.path.join(tmp, "c.json"), "w") as f:
        json.dump({"socket": sock, "workers": 2,
                   "journal": {"dir": os.path.join(tmp, "journal")}}, f)
    procs = []
    driver = None
    try:
        daemon = subprocess.Popen([JSCHEDD, "-c", os.path.join(tmp, "c.json")],
                                  stderr=open(os.path.join(tmp, "jschedd.log"), "w"))
        procs.append(daemon)
        until(lambda: os.path.exists(sock) and subprocess.run(
            [JSCHED, "-s", sock, "metrics", "--json"], capture_output=True).returncode == 0,
            "jschedd to answer", 15)
        dash = subprocess.Popen([JSCHED, "-s", sock, "dashboard"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        procs.append(dash)
        line = dash.stdout.readline().strip()
        check(line.startswith("jsched dashboard: http://127.0.0.1:"), "the dashboard prints its URL")
        url = line.split(": ", 1)[1]
        port = int(url.split(":")[2].split("/")[0])
        token = url.split("token=")[1]

        # The token and the Host header are checked on every request.
        check(http_status("http://127.0.0.1:%d/" % port) == 403, "no token: 403")
        check(http_status("http://127.0.0.1:%d/?token=%s" % (port, "0" * 32)) == 403,
              "a wrong token: 403")
        check(http_status(url, {"Host": "evil.example:%d" % port}) == 403,
              "another Host header: 403 (DNS rebinding)")
        check(http_status("http://127.0.0.1:%d/api/jobs?token=%s" % (port, token)) == 403,
              "the API without the token header: 403")
        check(http_status(url) == 200, "the URL it printed: 200")

        # Two clients' jobs: alpha's suspend in the daemon, beta's are commands.
        ids = {}
        for client in ("alpha", "beta"):
            for _ in range(2):
                if client == "alpha":
                    out = jsched(sock, "submit", "--fn", "sleep", "--args", '{"ms": 20000}',
                                 client=client)
                else:
                    out = jsched(sock, "submit", "--", "sleep", "20", client=client)
                ids.setdefault(client, []).append(int(out.split()[-1]))

        cd_port = free_port()
        cd = subprocess.Popen([CHROMEDRIVER, "--port=%d" % cd_port],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(cd)
        until(lambda: http_status("http://127.0.0.1:%d/status" % cd_port) == 200,
              "chromedriver to listen", 20)
        driver = WebDriver(cd_port)
        driver.go(url)

        all_ids = ids["alpha"] + ids["beta"]
        rows = until(lambda: (lambda r: r if len(r) == 4 else None)(driver.js(
            "return [...document.querySelectorAll('#jobs tbody tr')]"
            ".map(tr => [Number(tr.dataset.job), tr.dataset.state, tr.cells[2].textContent]);")),
            "the four jobs in the job list")
        check(sorted(r[0] for r in rows) == sorted(all_ids), "the job list shows the submitted ids")
        check(all(r[1] in ("waiting", "queued", "running") for r in rows),
              "each is waiting, queued or running")
        check(sorted(set(r[2] for r in rows)) == ["alpha", "beta"], "with their clients")
        until(lambda: all(s == "running" for s in driver.js(
            "return [...document.querySelectorAll('#jobs tbody tr')].map(tr => tr.dataset.state);")),
            "all four to be running (the page follows the state changes)")
        check(True, "the page shows every job running once it runs")

        # A job submitted while the page is open reaches it only through the event stream
        # (the list is not reloaded): its row appears and follows it to its end.
        late = int(jsched(sock, "submit", "--fn", "sleep", "--args", '{"ms": 300}',
                          client="alpha").split()[-1])
        until(lambda: driver.js("const tr = document.querySelector('#jobs tr[data-job=\"%d\"]');"
                                "return tr && tr.dataset.state;" % late) == "succeeded",
              "the job submitted while the page is open to appear and end, through events")
        check(driver.js("return window.jschedStats.jobEvents;") >= 3,
              "the page received that job's events (waiting/queued, running, succeeded)")

        labels = until(lambda: (lambda l: l if "alpha" in l and "beta" in l else None)(driver.js(
            "return Chart.getChart('share').data.datasets.map(d => d.label);")),
            "one share series per client")
        # Every client the daemon reports (the two that submitted, and the dashboard's own
        # connection's) has exactly one realized-share series and one target series.
        known = sorted(c["name"] for c in json.loads(jsched(sock, "metrics", "--json"))["clients"])
        labels = driver.js("return Chart.getChart('share').data.datasets.map(d => d.label);")
        realized = sorted(l for l in labels if not l.endswith(" target") and l != "Jain's index")
        check(realized == known, "the share chart has one realized series per client (%s)" % realized)
        check(sorted(l[:-7] for l in labels if l.endswith(" target")) == known,
              "and one target series per client")
        check("Jain's index" in labels, "and Jain's index")
        clients = driver.js("return [...document.querySelectorAll('#clients tbody tr')]"
                            ".map(tr => tr.dataset.client);")
        check(sorted(clients) == known, "the client table has every client")
        driver.shot("dashboard.png")

        victim = ids["beta"][0]
        driver.click('#jobs tr[data-job="%d"] button.cancel' % victim)
        # The daemon is the judge: the job ends cancelled.  Then the page: its row says
        # cancelled, or has left the list of waiting, queued and running jobs.
        try:
            until(lambda: state_of(sock, victim)
                  == "cancelled", "the daemon to report the clicked job cancelled")
        except AssertionError:
            print("page error line: %r" % driver.js("return document.getElementById('error').textContent;"))
            print("row: %r" % driver.js("const tr = document.querySelector('#jobs tr[data-job=\"%d\"]');"
                                        "return tr && tr.outerHTML;" % victim))
            raise
        try:
            until(lambda: driver.js("const tr = document.querySelector('#jobs tr[data-job=\"%d\"]');"
                                    "return !tr || tr.dataset.state === 'cancelled';" % victim),
                  "the cancelled job's row to say cancelled or leave the active list")
        except AssertionError:
            print("page: %r" % driver.js(
                "return [JSON.stringify(window.jschedStats), document.getElementById('conn').textContent,"
                " document.getElementById('error').textContent,"
                " document.querySelector('#jobs tbody').innerText];"))
            raise
        check(state_of(sock, victim) == "cancelled", "the daemon says the job is cancelled")
        others = [state_of(sock, i) for i in all_ids if i != victim]
        check(others == ["running"] * 3, "and the others still run")
        driver.shot("dashboard-cancelled.png")

        # The retry button's request (the page's own act_on, as a click sends it): the
        # cancelled command runs again as attempt 2 of the same id.
        driver.js("act_on('retry', %d);" % victim)
        until(lambda: state_of(sock, victim) in ("queued", "running"),
              "the daemon to run the retried job again")
        rec = json.loads(jsched(sock, "status", "--json", str(victim)))
        rec = rec["jobs"][0] if "jobs" in rec else rec
        check(rec.get("attempt") == 2 and len(rec.get("attempts", [])) == 1,
              "the retry button made attempt 2 of the same id (%r)" % rec.get("attempts"))
        check(driver.js("return document.getElementById('error').textContent;") == "",
              "the page shows no error for the retry")
    finally:
        if driver:
            driver.quit()
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM if p is not procs[0] else signal.SIGINT)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
