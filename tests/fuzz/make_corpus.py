#!/usr/bin/env python3
"""tests/fuzz/make_corpus.py: writes the seed corpus of the fuzz targets.

corpus/request/: one frame payload per file: every example of proto/PROTOCOL.md, the
                 daemon's replies and events, and a few near misses.
corpus/fastreq/: the hot requests in the shapes libjsched writes them (compact, op first),
                 each also with its members in another order and with whitespace, and
                 every request of corpus/request.
corpus/frame/:   one byte choosing the decoder's limit, then a byte stream: frames one after
                 another, zero-length, oversize, truncated, garbage.
Run it from anywhere after changing the protocol; commit what it writes.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

REQUESTS = [
    {"op": "hello", "id": 0, "version": 1, "client": "nightly-ci"},
    {"op": "hello", "id": 0, "version": 2},
    {"op": "submit", "id": 3, "job": {"kind": "call", "fn": "echo", "args": {"x": 1}}},
    {"op": "submit", "id": 4, "jobs": [
        {"ref": "fetch", "kind": "exec", "argv": ["git", "pull"], "cwd": "/srv/app"},
        {"ref": "build", "kind": "exec", "argv": ["make"], "cwd": "/srv/app", "after": ["fetch"]},
        {"ref": "test", "kind": "exec", "argv": ["make", "test"], "cwd": "/srv/app",
         "after": ["build"]},
        {"kind": "call", "fn": "echo", "args": "tests failed",
         "after": [{"ref": "test", "on": "failure"}]}]},
    {"op": "submit", "id": 5, "job": {
        "kind": "exec", "name": "unit tests", "argv": ["make", "test"],
        "cwd": "/home/ana/src/app", "env": {"PATH": "/usr/bin:/bin", "HOME": "/home/ana"},
        "timeout_ms": 600000, "priority": "high", "after": [{"job": 41, "on": "success"}]}},
    {"op": "submit", "id": 6, "job": {"kind": "exec", "argv": ["wc", "-c"], "stdin": "aGVsbG8K"}},
    {"op": "submit", "id": 7, "job": {"kind": "call", "fn": "sleep", "args": {"ms": 250},
                                      "deadline_in_ms": 10000, "cost": 5}},
    {"op": "submit", "id": 8, "jobs": [
        {"ref": "a", "kind": "call", "fn": "noop", "after": ["b"]},
        {"ref": "b", "kind": "call", "fn": "noop", "any_of": ["a", 7]}]},
    {"op": "submit", "id": 9, "job": {"kind": "call", "fn": "noop", "deadline_at_ms": 1764460800000,
                                      "any_of": [{"job": 1, "on": "any"}, "x"], "priority": "critical"}},
    {"op": "submit", "id": 10, "job": {"kind": "exec", "argv": ["x"], "prio": "high"}},
    {"op": "status", "id": 7, "job": 42},
    {"op": "status", "id": 7, "jobs": [42, 43]},
    {"op": "wait", "id": 9, "jobs": [102, 103], "mode": "any", "timeout_ms": 30000},
    {"op": "wait", "id": 9, "job": 102},
    {"op": "cancel", "id": 10, "jobs": [102, 103, 90]},
    {"op": "list", "id": 11, "states": ["queued", "running"], "client": "ci", "all": False,
     "after_job": 100, "limit": 50},
    {"op": "output", "id": 11, "job": 102},
    {"op": "watch", "id": 13, "from_seq": 117, "instance": "1764460800123-4242"},
    {"op": "unwatch", "id": 14},
    {"op": "metrics", "id": 15},
    {"op": "drain", "id": 16, "client": "batch", "running": True},
    {"op": "ping", "id": 17},
    {"op": "reload", "id": 18},
    {"op": "set_client", "id": 12, "client": "batch", "weight": 3, "overflow": "drop_oldest",
     "max_queued": 100},
    {"op": "shutdown", "id": 19, "mode": "immediate"},
    {"op": "frobnicate", "id": 20},
    {"id": -1},
]

FROM_DAEMON = [
    {"id": 0, "ok": True, "version": 1, "daemon": "0.1.0", "instance": "1764460800123-4242",
     "identity": {"uid": 1000, "gid": 1000, "pid": 31337, "client": "nightly-ci", "admin": False},
     "limits": {"frame_bytes": 1048576, "reply_frame_bytes": 16777216, "jobs_per_submit": 10000,
                "max_queued": 10000, "argv_items": 4096, "env_items": 4096, "stdin_bytes": 262144,
                "deps_per_job": 1024, "output_bytes": 1048576, "events_retained": 4096}},
    {"id": 0, "ok": False, "error": {"code": "version_mismatch", "message": "client speaks 2",
                                     "supported": [1]}},
    {"id": 7, "ok": False, "error": {"code": "bad_request", "message": "argv must be",
                                     "field": "jobs[2].argv"}},
    {"id": None, "ok": False, "error": {"code": "bad_frame", "message": "not JSON"}},
    {"job": 42, "name": "unit tests", "client": "nightly-ci", "uid": 1000, "kind": "exec",
     "priority": "high", "state": "failed", "submitted_ms": 1764460812345,
     "started_ms": 1764460812350, "finished_ms": 1764460873002, "exit_code": 2,
     "cause": "exit", "reason": "exited with status 2"},
    {"job": 43, "client": "ci", "uid": 0, "kind": "call", "priority": "low",
     "state": "succeeded", "submitted_ms": 1, "value": {"x": [1, 2.5, None]}},
    {"event": "job", "seq": 118, "job": {"job": 104, "state": "running"}},
    {"event": "shutdown", "mode": "graceful"},
    {"id": 11, "ok": True, "complete": True,
     "stdout": {"data": "QWxyZWFkeSB1cCB0byBkYXRlLgo=", "bytes": 20, "truncated": False},
     "stderr": {"data": "", "bytes": 0, "truncated": False}},
    {"kind": "exec", "argv": ["sh", "-c", "exit 3"], "env": {"A": "1"}, "stdin": "AAEC/w=="},
]


WIDE = ["\u00e9", "\u20ac", "\U0001F600"]


def utf8_seeds():
    """Requests whose error quotes client text cut near a buffer's size: the op (64 bytes
    quoted), a member name (64 in the message, 128 as the field), an env name (64 at the end
    of a field path), a handler's error (160 in the reason)."""
    out = {}
    for w, ch in enumerate(WIDE):
        for n in (60, 62, 63, 64, 126, 127):
            a = "a" * n + ch
            out["utf8-op-%d-%d" % (w, n)] = {"op": a, "id": 1}
            out["utf8-member-%d-%d" % (w, n)] = {"op": "ping", "id": 2, a: 1}
            out["utf8-env-%d-%d" % (w, n)] = {"op": "submit", "id": 3, "job": {
                "kind": "exec", "argv": ["true"], "env": {a: 1}}}
        for n in (130, 135, 140):
            out["utf8-fail-%d-%d" % (w, n)] = {"op": "submit", "id": 4, "job": {
                "kind": "call", "fn": "fail", "args": {"message": "a" * n + WIDE[w]}}}
    return out


DAEMON = {
    "submit-wait": [{"op": "submit", "id": 1, "job": {"kind": "call", "fn": "echo", "args": [1]}},
                    {"op": "wait", "id": 2, "job": 1, "timeout_ms": 1000},
                    {"op": "status", "id": 3, "jobs": [1, 2]},
                    {"op": "list", "id": 4, "states": ["succeeded"], "limit": 5}],
    "graph": [{"op": "submit", "id": 1, "jobs": [
        {"ref": "a", "kind": "call", "fn": "sleep", "args": {"ms": 5}},
        {"ref": "b", "kind": "call", "fn": "fail", "after": ["a"]},
        {"kind": "call", "fn": "noop", "after": [{"ref": "b", "on": "failure"}],
         "deadline_in_ms": 18446744073710}]},
              {"op": "wait", "id": 2, "jobs": [1, 2, 3], "mode": "any"},
              {"op": "cancel", "id": 3, "jobs": [1, 2, 3]}],
    "block": [{"op": "set_client", "id": 1, "client": "fuzz", "max_queued": 1,
               "overflow": "block"},
              {"op": "submit", "id": 2, "job": {"kind": "call", "fn": "sleep", "args": {"ms": 50}}},
              {"op": "submit", "id": 3, "job": {"kind": "call", "fn": "noop"}},
              {"op": "set_client", "id": 4, "client": "fuzz", "max_queued": 10000,
               "overflow": "reject"}],
    "watch": [{"op": "watch", "id": 1, "from_seq": 0},
              {"op": "submit", "id": 2, "job": {"kind": "call", "fn": "noop", "priority": "high"}},
              {"op": "metrics", "id": 3}, {"op": "unwatch", "id": 4},
              {"op": "drain", "id": 5, "running": True}],
    "hello-first": [{"op": "hello", "id": 7, "version": 1, "client": "other"},
                    {"op": "ping", "id": 1}, {"op": "hello", "id": 2, "version": 1}],
    "hello-mismatch": [{"op": "hello", "id": 0, "version": 2}, {"op": "ping", "id": 1}],
    "errors": [{"op": "status", "id": 1, "job": 999999},
               {"op": "output", "id": 2, "job": 1},
               {"op": "drain", "id": 3, "client": "nobody"},
               {"op": "frobnicate", "id": 4}, {"id": 5}, b"{not json",
               {"op": "ping", "id": 6}],
    "big-id": [{"op": "ping", "id": 1}, b'{"op":"ping","id":9007199254740992}',
               {"op": "ping", "id": 2}],
    "pause-hold": [{"op": "pause", "id": 1, "client": "fuzz"},
                   {"op": "submit", "id": 2, "job": {"kind": "call", "fn": "noop"}},
                   {"op": "hold", "id": 3, "job": 1}, {"op": "release", "id": 4, "jobs": [1, 2]},
                   {"op": "resume", "id": 5, "client": "fuzz"}, {"op": "pause", "id": 6, "all": True},
                   {"op": "resume", "id": 7, "all": True}],
    "retry-result": [{"op": "submit", "id": 1, "job": {"kind": "call", "fn": "fail",
                                                     "retry": {"max_attempts": 2, "backoff_ms": 1}}},
                     {"op": "wait", "id": 2, "job": 1, "timeout_ms": 100},
                     {"op": "retry", "id": 3, "job": 1}, {"op": "result", "id": 4, "job": 1},
                     {"op": "status", "id": 5, "job": 1, "detail": True}],
    "hook": [{"op": "submit", "id": 1, "job": {"kind": "call", "fn": "noop", "on_exit": "true"}},
             {"op": "hook", "id": 2, "job": 1, "state": "running"},
             {"op": "hook", "id": 3, "job": 1, "state": "failed", "exit_code": 1, "reason": "r"}],
    "scheduled-array": [{"op": "submit", "id": 1, "job": {"kind": "call", "fn": "noop",
                                                        "not_before": 4102444800000}},
                        {"op": "submit", "id": 2, "job": {"kind": "call", "fn": "echo",
                                                        "array": "1-5%2"}},
                        {"op": "list", "id": 3, "states": ["scheduled"], "limit": 2},
                        {"op": "test_clock", "id": 4, "advance_ms": 1000}],
    "metrics-prometheus": [{"op": "metrics", "id": 1, "format": "prometheus"}],
    "metrics-histograms": [{"op": "metrics", "id": 1, "histograms": True}],
    "admin": [{"op": "reload", "id": 1},
              {"op": "set_client", "id": 2, "client": "fuzz", "weight": 3},
              {"op": "list", "id": 3, "all": True, "after_job": 2}],
}


def lines(reqs):
    return b"\n".join(r if isinstance(r, bytes) else json.dumps(r).encode() for r in reqs)


def frame(obj):
    payload = json.dumps(obj, separators=(",", ":")).encode() if not isinstance(obj, bytes) else obj
    return struct.pack(">I", len(payload)) + payload


def write(folder, name, data):
    path = os.path.join(HERE, "corpus", folder)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, name), "wb") as f:
        f.write(data)


FASTREQ = [
    {"op": "ping", "id": 1},
    {"op": "status", "id": 2, "job": 5},
    {"op": "status", "id": 2, "jobs": [5, 6, 7], "detail": True},
    {"op": "wait", "id": 3, "job": 5},
    {"op": "wait", "id": 3, "jobs": [5, 6], "mode": "any", "timeout_ms": 100},
    {"op": "cancel", "id": 4, "jobs": [5, 6]},
    {"op": "submit", "id": 5, "job": {"kind": "call", "fn": "noop"}},
    {"op": "submit", "id": 5, "job": {"kind": "call", "fn": "noop"}, "wait": True},
    {"op": "submit", "id": 5, "job": {"kind": "call", "fn": "spin", "args": {"us": 10}},
     "wait": {"timeout_ms": 1000, "mode": "any", "output": True}},
    {"op": "submit", "id": 5, "jobs": [{"kind": "call", "fn": "spin", "args": {"us": 0}}] * 8,
     "wait": True},
    {"op": "submit", "id": 6, "job": {"kind": "exec", "argv": ["/bin/true"], "cwd": "/tmp",
                                      "env": {"PATH": "/bin", "HOME": "/root"}, "timeout_ms": 5000}},
    {"op": "submit", "id": 7, "jobs": [
        {"kind": "call", "fn": "noop", "ref": "a", "name": "caf\u00e9 \U0001F600 \"q\"\n"},
        {"kind": "call", "fn": "noop", "ref": "b", "after": ["a", 3, {"job": 4, "on": "any"}],
         "any_of": [{"ref": "a", "on": "failure"}], "priority": "high", "cost": 7, "key": "k"}]},
]


def main():
    for i, r in enumerate(FASTREQ):
        compact = json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()
        write("fastreq", "hot-%02d-%s.json" % (i, r["op"]), compact)
        spaced = json.dumps(dict(reversed(list(r.items()))), indent=1).encode()  # \u escapes
        write("fastreq", "hot-%02d-%s-reordered.json" % (i, r["op"]), spaced)
    for i, r in enumerate(REQUESTS):
        write("fastreq", "req-%02d-%s.json" % (i, r.get("op", "none")),
              json.dumps(r, separators=(",", ":")).encode())
    for i, r in enumerate(REQUESTS):
        write("request", "req-%02d-%s.json" % (i, r.get("op", "none")),
              json.dumps(r).encode())
    for i, m in enumerate(FROM_DAEMON):
        write("request", "daemon-%02d.json" % i, json.dumps(m).encode())
    write("request", "bad-utf8.json", b'{"op":"ping","id":1,"x":"\xff"}')
    write("request", "dup-key.json", b'{"op":"ping","id":1,"id":2}')
    for name, r in utf8_seeds().items():
        write("request", name + ".json", json.dumps(r, ensure_ascii=False).encode())
        write("daemon", name, lines([{"op": "ping", "id": 9}, r]))
    for name, reqs in DAEMON.items():
        write("daemon", name, lines(reqs))

    big = 255  # limit 16 + 255*64 = 16336 bytes
    write("frame", "one", bytes([big]) + frame(REQUESTS[0]))
    write("frame", "several", bytes([big]) + b"".join(frame(r) for r in REQUESTS[:8]))
    write("frame", "zero-length", bytes([big]) + struct.pack(">I", 0) + frame({"op": "ping", "id": 1}))
    write("frame", "oversize", bytes([0]) + frame(REQUESTS[3]))
    write("frame", "huge-header", bytes([big]) + b"\x7f\xff\xff\xff{\"op\":")
    write("frame", "truncated", bytes([big]) + frame(REQUESTS[4])[:-7])
    write("frame", "garbage", bytes([big]) + frame(b"not json at all") + frame(b"[1,2]") +
          frame(b'"s"') + frame(b'{"a":1}{"b":2}') + frame({"ok": True}))
    write("frame", "http", bytes([big]) + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")


if __name__ == "__main__":
    main()
