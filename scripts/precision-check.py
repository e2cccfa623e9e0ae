#!/usr/bin/env python3
"""Precision checker: a randomized, model-based test of observable-server.

The promise of the service is precision: an observer hears every change to
what it read, once, in order, with the right values, and nothing else, across
restarts, replays and instances (SPEC §2, §2a, §3a, §5). This script checks
that promise the way Jepsen's checkers or FoundationDB's simulation do: it
drives real server processes with random operations chosen from a seed, keeps
a reference model of everything, and compares every answer with the model.

Run it (Python 3.11, standard library only; the server binary must be built):

    scripts/precision-check.py --mode sequential            # CI scale
    scripts/precision-check.py --mode concurrent
    scripts/with-postgres scripts/precision-check.py --mode cluster
    scripts/precision-check.py --planted-faults             # each fault is caught
    scripts/precision-check.py --mode sequential --seed 42  # replay a run
    scripts/precision-check --full      # every mode at full scale, see below
    scripts/precision-check --ci        # every mode at CI scale + planted faults

Full scale (what the wrapper's --full runs):

    scripts/precision-check.py --mode sequential --ops 100000 --observers 1000 --restarts 6
    scripts/precision-check.py --mode concurrent --ops 100000 --observers 1000 --restarts 6
    scripts/with-postgres scripts/precision-check.py --mode cluster --ops 100000 --observers 1000 --restarts 6

It prints `seed: N` first; `--seed N` replays the same choices (the server's
own randomness, `POST /grid/random` and ids, is learned from its answers).

What the model holds
--------------------
* The state of every seed system: the truck (name, donuts, orders, computed
  orderCount), the account's userName, the grid (rows of dots, their two
  flags), posts, client-reported jobs (progress, isComplete) and memory games
  (cards by the lecture's `choose` rules, computed isOver).
* The change log, learned from an "all-seeing" observer that reads every
  resource at start (and so, through inserts, every element made later) and
  polls with an explicit `since`. Every write's changes are predicted by the
  model (path, op, old, new; nothing for no-ops and refused writes; the
  computed orderCount when it moves; tap as two transactions) and compared
  with what the log shows; the seqs come from the log, never guessed.
  Transactions (for `limit` and for stream events) are the model's: each
  request's changes are one transaction, a tap two.
* Per observer: every path it read and the seq from which it counts (the
  Observation-Cursor of the answer that first read it), collection membership
  included; an element inserted later counts as read from the insert's seq by
  every observer that read the collection before (SPEC §3a "Collections");
  a remove reaches readers of the collection and of any property of the
  element. `DELETE /observers/{id}/reads` forgets everything, and later polls
  (replays too) no longer deliver what was forgotten. The implicit cursor is
  the cursor last answered to the observer by any poll, with or without
  `since`.

What each answer is checked for
-------------------------------
* Reads (every resource, with and without `fields=`, with and without an
  observer): body equals the model, `Observation-Cursor` is the newest seq,
  unknown fields are 400. `HEAD` tracks nothing and sends the cursor.
  `If-None-Match` with the tag of an unchanged representation is 304 and,
  as docs/API.md documents, still tracks the read.
* Writes of every kind, valid, no-op and refused (400/404/412/422): status,
  answer body, and exactly the predicted changes in the log (a refused or
  no-op write commits nothing).
* Polls of every kind: implicit (no `since`), explicit, replays from older
  cursors and from 0 (the range (since, cursor] must give the same answer
  however often it is asked), `limit` (never splitting a transaction),
  `coalesce=true` (one change per path, first old, last new, at the last
  seq; a path back where it started is left out), `Prefer: wait=N`.
  Every answer is compared with the changes the model says the observer
  receives in (since, cursor]: a change it should have had and did not is
  *missed*; one for a path it never read (or forgot) is *spurious*; one at or
  before the cursor it polled from, which it had been told already, is
  *repeated*; a right seq with another path/op/old/new is *wrong-value*;
  seqs not strictly increasing are *out-of-order*. The cursor must cover the
  last change's transaction, not stop short when the answer is under `limit`,
  and not pass the newest seq.
* Long-polls: one parked for an observer must wake promptly (< 1 s) when a
  change it reads commits (else *late-wake*), and must not answer before its
  timeout when the commit is one it does not read (else *early-wake*).
  Displacement: a second poll answers the first at once, empty, with its
  cursor.
* Streams (`Accept: text/event-stream`), started with `since`, with
  `Last-Event-ID` (resuming a previous stream of the observer, across restarts
  too) or at the observer's cursor: one event per transaction that concerns
  the observer, `id` the seq of the event's last change, data equal to what a
  poll answers for that transaction.
* Inspections: `GET /observers/{id}` lists exactly the model's read paths and
  the model's implicit cursor. Unknown and deleted observers are 404; bad
  poll parameters are 400.
* Restarts (`--restarts`), alternately SIGTERM (must exit 0) and kill -9:
  afterwards the whole state read again equals the model (every acknowledged
  write present), every observer's reads are unchanged, and after SIGTERM
  every implicit cursor is exactly the one last answered. After kill -9 the
  documented allowance (docs: an implicit cursor may be up to about a second
  old) is granted precisely: the server's cursor must lie between the cursor
  answered at least 1.5 s before the kill and the last one answered; the model
  then adopts the server's value (a client that leaves out `since` may hear
  up to a second of changes again, which is the documented allowance).

Modes
-----
* `sequential`: one client, one server on a temporary SQLite file.
* `concurrent`: `--writers` writer threads (default 8) and `--readers`
  reader/poller threads (default 8) on one server, the group commit in play.
  Each writer owns its own objects (donuts, dots, posts, jobs, games), so the
  model predicts their changes exactly whatever the interleaving; shared
  things (truck name, account, orders and the computed orderCount,
  collection memberships, appended rows) are checked against the full log
  read by the all-seeing observer: the log is the oracle for order and seqs
  (each acknowledged write is in it exactly once, as one transaction of
  consecutive seqs, and replaying the log through the model gives every
  old/new value it shows and the state the server ends with). Each reader
  owns its observers; every poll is checked against the log once the log
  reaches the poll's cursor. Restarts pause all threads first; writes whose
  answer was lost to a kill -9 are resolved by the log.
* `cluster`: three instances on one PostgreSQL database (created by the
  checker at OBSERVABLE_TEST_POSTGRES_ADMIN_URL, which scripts/with-postgres
  exports, or given with --postgres-url), each request sent to one of them at
  random (no stickiness: a poll through A, the next through B), long-polls
  parked on one instance woken by writes through another, and restarts of
  one instance at a time.

`--planted-faults` runs a short sequential run (cluster for the cursor fault
when PostgreSQL is at hand) for each value of OBSERVABLE_PLANTED_FAULT the
server honours (drop-implied-reads, forget-cursor, wake-every-poll) and
checks that each is caught; it exits 1 if one goes unnoticed.

Output: each failure with the observer, the reads that matter, the request
and the change; then a table of counts. Exit 1 if any count is non-zero.

Not checked (yet): server-advanced jobs (step/intervalMs), retention and
`repair=true` (the checker keeps every change: --retain-changes is raised),
TTL expiry, pages (`limit`/`after` on collections), tokens and CORS.
"""

import argparse
import collections
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")
INF = float("inf")

CATEGORIES = [
    "missed", "spurious", "repeated", "wrong-value", "out-of-order",
    "split-transaction", "lost-write", "wrong-state", "wrong-reads",
    "wrong-cursor", "wrong-status", "late-wake", "early-wake", "stream", "crash",
]
DELIVERY = ("missed", "spurious", "repeated", "wrong-value", "out-of-order")

# Collections whose elements can be removed: a remove reaches readers of
# any property of the element (path prefix collection/id/).
REMOVABLE = ("/truck/donuts", "/truck/orders", "/posts", "/jobs", "/games")
DONUT_FIELDS = ("name", "dough", "glaze", "topping")
DOT_FIELDS = ("isTapAnimated", "isRandomAnimated")
CARD_FIELDS = ("content", "isFaceUp", "isMatched")


def jdump(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def short(value, limit=300):
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "…"


def elem_prefix(path):
    """The element a property path belongs to, for removable collections."""
    for c in REMOVABLE:
        if path.startswith(c + "/"):
            rest = path[len(c) + 1:]
            return c + "/" + rest.split("/", 1)[0]
    return None


# ---------------------------------------------------------------------------
# Reporting


class Report:
    def __init__(self, max_print=25):
        self.counts = collections.Counter()
        self.printed = collections.Counter()
        self.max_print = max_print
        self.lock = threading.Lock()

    def fail(self, category, message, n=1):
        with self.lock:
            self.counts[category] += n
            if self.printed[category] < self.max_print:
                self.printed[category] += 1
                print(f"FAIL [{category}] x{n}: {message}", flush=True)
            elif self.printed[category] == self.max_print:
                self.printed[category] += 1
                print(f"FAIL [{category}]: more failures of this kind are counted, not printed", flush=True)

    def total(self):
        return sum(self.counts.values())

    def table(self, title=""):
        lines = [f"counts{(' (' + title + ')') if title else ''}:"]
        for c in CATEGORIES:
            lines.append(f"  {c:<18} {self.counts.get(c, 0)}")
        lines.append(f"  {'TOTAL':<18} {self.total()}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# HTTP


class ConnectionLost(Exception):
    pass


class Client:
    """One keep-alive HTTP/1.1 connection to one port."""

    def __init__(self, port, timeout=30.0):
        self.port = port
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, body=None, headers=None, raw=None, timeout=None):
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        h = {}
        if data is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout or self.timeout)
            elif timeout is not None:
                self.conn.timeout = timeout
                if self.conn.sock is not None:
                    self.conn.sock.settimeout(timeout)
            sent = False
            try:
                self.conn.request(method, path, body=data, headers=h)
                sent = True
                resp = self.conn.getresponse()
                payload = resp.read()
            except (OSError, http.client.HTTPException) as e:
                self.close()
                # A keep-alive connection the server closed meanwhile: the
                # request never reached it; retry once on a new connection.
                if attempt == 0 and isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)) and method in ("GET", "HEAD"):
                    continue
                raise ConnectionLost(f"{method} {path}: {type(e).__name__}: {e}")
            break
        if timeout is not None and self.conn is not None:
            self.conn.timeout = self.timeout
            if self.conn.sock is not None:
                self.conn.sock.settimeout(self.timeout)
        headers_out = {k.lower(): v for k, v in resp.getheaders()}
        if headers_out.get("connection", "").lower() == "close":
            self.close()
        value = None
        if payload and "json" in headers_out.get("content-type", ""):
            try:
                value = json.loads(payload.decode("utf-8"))
            except ValueError:
                value = None
        return resp.status, headers_out, value

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None


# ---------------------------------------------------------------------------
# Server processes


def postgres_admin_url(args):
    return args.postgres_url or os.environ.get("OBSERVABLE_TEST_POSTGRES_ADMIN_URL")


def create_pg_database(admin_url):
    """Makes a fresh database next to admin_url's; returns its URL."""
    u = urllib.parse.urlparse(admin_url)
    name = f"precision_{os.getpid()}_{random.randrange(1 << 30)}"
    env = dict(os.environ)
    if u.password:
        env["PGPASSWORD"] = u.password
    cmd = ["psql", "-h", u.hostname or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "postgres",
           "-d", (u.path or "/postgres").lstrip("/") or "postgres", "-v", "ON_ERROR_STOP=1", "-q",
           "-c", f"CREATE DATABASE {name}"]
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return urllib.parse.urlunparse(u._replace(path="/" + name))


class Instance:
    def __init__(self, binary, database, log_path, env, extra_args, report, name):
        self.binary = binary
        self.database = database
        self.log_path = log_path
        self.env = env
        self.extra = extra_args
        self.report = report
        self.name = name
        self.proc = None
        self.port = None
        self.starts = 0

    def start(self):
        log = open(self.log_path, "ab")
        before = os.path.getsize(self.log_path)
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--host", "127.0.0.1", "--port", "0", "--database", self.database,
             "--retain-changes", "100000000", "--max-long-poll", "60", "--idle-timeout", "120"] + self.extra,
            stdout=log, stderr=subprocess.STDOUT, env=self.env)
        log.close()
        deadline = time.monotonic() + 60
        self.port = None
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(before)
                found = LISTENING.findall(f.read().decode("utf-8", "replace"))
            if found:
                self.port = int(found[-1])
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} at start; see {self.log_path}")
            time.sleep(0.02)
        if self.port is None:
            raise RuntimeError(f"{self.name} did not start; see {self.log_path}")
        c = Client(self.port, timeout=5)
        while time.monotonic() < deadline:
            try:
                status, _, _ = c.request("GET", "/healthz")
                if status == 200:
                    break
            except ConnectionLost:
                pass
            time.sleep(0.05)
        c.close()
        self.starts += 1

    def stop(self, how):
        if self.proc is None:
            return
        if how == "kill":
            self.proc.kill()
            self.proc.wait()
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.report.fail("crash", f"{self.name} did not stop within 30 s of SIGTERM; killed")
                self.proc.kill()
                self.proc.wait()
                code = None
            if code not in (0, None):
                self.report.fail("crash", f"{self.name} exited {code} after SIGTERM (expected 0); see {self.log_path}")
        self.proc = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


# ---------------------------------------------------------------------------
# The model of the state


class State:
    """The state of every seed system, as the server should hold it."""

    def __init__(self):
        self.truck_name = None
        self.donuts = {}      # id -> {name, dough, glaze, topping}
        self.orders = {}      # id -> {donutId, quantity}
        self.user = None
        self.rows = []        # list of lists of dot ids
        self.dots = {}        # id -> {isTapAnimated, isRandomAnimated}
        self.posts = {}       # id -> {imageURL, height}
        self.jobs = {}        # id -> {current, total}
        self.games = {}       # id -> {"cards": [{id, content, isFaceUp, isMatched}], "isOver"}

    # representations, as the server answers them
    def donut(self, i):
        d = self.donuts[i]
        return {"id": i, "name": d["name"], "dough": d["dough"], "glaze": d["glaze"], "topping": d["topping"]}

    def order(self, i):
        o = self.orders[i]
        return {"id": i, "donutId": o["donutId"], "quantity": o["quantity"]}

    def dot(self, i):
        d = self.dots[i]
        return {"id": i, "isTapAnimated": d["isTapAnimated"], "isRandomAnimated": d["isRandomAnimated"]}

    def post(self, i):
        p = self.posts[i]
        return {"id": i, "imageURL": p["imageURL"], "height": p["height"]}

    def job(self, i):
        j = self.jobs[i]
        return {"id": i, "progress": {"current": j["current"], "total": j["total"]},
                "isComplete": j["current"] == j["total"]}

    def game(self, i):
        g = self.games[i]
        return {"id": i, "cards": [dict(c) for c in g["cards"]], "isOver": g["isOver"]}

    def truck(self):
        return {"name": self.truck_name, "donuts": [self.donut(i) for i in self.donuts],
                "orders": [self.order(i) for i in self.orders], "orderCount": len(self.orders)}

    def grid(self):
        return {"rows": [[self.dot(i) for i in row] for row in self.rows]}

    def dot_position(self, dot_id):
        for r, row in enumerate(self.rows):
            if dot_id in row:
                return r, row.index(dot_id)
        return None

    def load(self, truck, account, grid, posts, jobs, games):
        self.truck_name = truck["name"]
        self.donuts = {d["id"]: {k: d[k] for k in DONUT_FIELDS} for d in truck["donuts"]}
        self.orders = {o["id"]: {"donutId": o["donutId"], "quantity": o["quantity"]} for o in truck["orders"]}
        self.user = account["userName"]
        self.rows = [[d["id"] for d in row] for row in grid["rows"]]
        self.dots = {d["id"]: {k: d[k] for k in DOT_FIELDS} for row in grid["rows"] for d in row}
        self.posts = {p["id"]: {"imageURL": p["imageURL"], "height": p["height"]} for p in posts["posts"]}
        self.jobs = {j["id"]: {"current": j["progress"]["current"], "total": j["progress"]["total"]} for j in jobs["jobs"]}
        self.games = {g["id"]: {"cards": [dict(c) for c in g["cards"]], "isOver": g["isOver"]} for g in games["games"]}


def implied_paths(collection, new):
    """Paths an insert makes read for the observers that receive it."""
    if collection == "/truck/donuts":
        return [f"/truck/donuts/{new['id']}/{f}" for f in DONUT_FIELDS]
    if collection == "/truck/orders":
        return [f"/truck/orders/{new['id']}/donutId", f"/truck/orders/{new['id']}/quantity"]
    if collection == "/grid/rows":
        dots = new["dots"] if "dots" in new else [new["dot"]]
        return [f"/grid/dots/{d['id']}/{f}" for d in dots for f in DOT_FIELDS]
    if collection == "/posts":
        return [f"/posts/{new['id']}/imageURL", f"/posts/{new['id']}/height"]
    if collection == "/jobs":
        return [f"/jobs/{new['id']}/progress", f"/jobs/{new['id']}/isComplete"]
    if collection == "/games":
        g = new["id"]
        out = [f"/games/{g}/cards"]
        for c in new["cards"]:
            out += [f"/games/{g}/cards/{c['id']}/{f}" for f in CARD_FIELDS]
        out.append(f"/games/{g}/isOver")
        return out
    return []


# ---------------------------------------------------------------------------
# The change log and the observers' model


class Entry:
    __slots__ = ("seq", "path", "op", "old", "new", "txn", "elem", "implied", "coll")

    def __init__(self, seq, path, op, old, new, txn):
        self.seq, self.path, self.op, self.old, self.new, self.txn = seq, path, op, old, new, txn
        self.elem = None
        self.implied = None
        self.coll = None
        if op == "insert":
            self.coll = path
            self.implied = implied_paths(path, new)
        elif op == "remove":
            self.coll = path
            if path in REMOVABLE and isinstance(old, dict) and "id" in old:
                self.elem = f"{path}/{old['id']}"

    def json(self):
        d = {"seq": self.seq, "path": self.path, "op": self.op}
        if self.op in ("set", "remove"):
            d["old"] = self.old
        if self.op in ("set", "insert"):
            d["new"] = self.new
        return d

    def same(self, c):
        return (c.get("path") == self.path and c.get("op") == self.op
                and jdump(c.get("old")) == jdump(self.old if self.op in ("set", "remove") else None)
                and jdump(c.get("new")) == jdump(self.new if self.op in ("set", "insert") else None))


class Log:
    """Every committed change, in seq order, with its transaction."""

    def __init__(self):
        self.entries = []
        self.seqs = []
        self.by_seq = {}
        self.txn_end = {}       # txn id -> last seq
        self.txn_entries = collections.defaultdict(list)
        self.by_path = collections.defaultdict(list)   # path -> [entry] (collection path for insert/remove)
        self.removes_by_elem = collections.defaultdict(list)
        self.inserts = []       # entries with op insert, in order
        self.next_txn = 0
        self.newest = 0

    def new_txn(self):
        self.next_txn += 1
        return self.next_txn

    def append(self, e):
        if e.seq in self.by_seq:
            return
        if self.seqs and e.seq <= self.seqs[-1]:
            raise ValueError(f"log out of order: {e.seq} after {self.seqs[-1]}")
        self.entries.append(e)
        self.seqs.append(e.seq)
        self.by_seq[e.seq] = e
        self.txn_end[e.txn] = max(self.txn_end.get(e.txn, 0), e.seq)
        self.txn_entries[e.txn].append(e)
        self.by_path[e.path].append(e)
        if e.op == "insert":
            self.inserts.append(e)
        if e.elem:
            self.removes_by_elem[e.elem].append(e)
        self.newest = max(self.newest, e.seq)

    def index_after(self, seq):
        import bisect
        return bisect.bisect_right(self.seqs, seq)


class Observer:
    def __init__(self, oid, cursor, created_at):
        self.id = oid
        self.reads = {}           # path -> from seq
        self.elem_from = {}       # element prefix -> min from seq of its properties
        self.implicit = cursor    # None when unknown (after a stream)
        self.creation = cursor
        self.ins_ptr = 0          # index into log.inserts processed for implied reads
        self.history = [(created_at, cursor)]   # (time answered, cursor), for kill -9 allowance
        self.cursors = [cursor]   # cursors seen, for replays
        self.last_event_id = None
        self.deleted = False
        self.lock = threading.Lock()

    def track(self, path, frm):
        old = self.reads.get(path)
        if old is None or frm < old:
            self.reads[path] = frm
            e = elem_prefix(path)
            if e is not None:
                cur = self.elem_from.get(e)
                if cur is None or frm < cur:
                    self.elem_from[e] = frm

    def forget(self):
        self.reads.clear()
        self.elem_from.clear()

    def answered(self, cursor):
        self.implicit = cursor
        self.history.append((time.monotonic(), cursor))
        if len(self.history) > 64:
            self.history = self.history[-32:]
        self.cursors.append(cursor)
        if len(self.cursors) > 16:
            self.cursors = self.cursors[-12:]


def advance_implied(obs, log, upto=INF):
    """Applies inserts in the log (up to seq `upto`) to the observer's reads."""
    ins = log.inserts
    while obs.ins_ptr < len(ins) and ins[obs.ins_ptr].seq <= upto:
        e = ins[obs.ins_ptr]
        frm = obs.reads.get(e.coll)
        if frm is not None and frm < e.seq:
            for p in e.implied:
                obs.track(p, e.seq)
        obs.ins_ptr += 1


def receives(obs, e):
    s = e.seq
    f = obs.reads.get(e.path)
    if f is not None and f < s:
        return True
    if e.op == "remove" and e.elem is not None:
        f = obs.elem_from.get(e.elem)
        if f is not None and f < s:
            return True
    return False


def delivered(obs, log, since, cursor):
    """The log entries in (since, cursor] the observer receives, in seq order."""
    lo = log.index_after(since)
    hi = log.index_after(cursor)
    span = hi - lo
    if span <= 0:
        return []
    if span <= 8 * (len(obs.reads) + len(obs.elem_from)) + 64:
        return [e for e in log.entries[lo:hi] if receives(obs, e)]
    out = {}
    import bisect
    for path, frm in obs.reads.items():
        lst = log.by_path.get(path)
        if not lst:
            continue
        start = max(since, frm)
        keys = [x.seq for x in lst] if len(lst) < 32 else None
        if keys is None:
            i = bisect.bisect_right(lst, start, key=lambda x: x.seq)
        else:
            i = bisect.bisect_right(keys, start)
        for x in lst[i:]:
            if x.seq > cursor:
                break
            out[x.seq] = x
    for elem, frm in obs.elem_from.items():
        for x in log.removes_by_elem.get(elem, ()):
            if max(since, frm) < x.seq <= cursor:
                out[x.seq] = x
    return [out[s] for s in sorted(out)]


def coalesce(entries):
    """What coalesce=true folds these changes into (as JSON change objects)."""
    folded = []   # (seq, change)
    sets = {}     # path -> [first old, last new, last seq]
    order = []
    for e in entries:
        if e.op == "set":
            if e.path in sets:
                sets[e.path][1] = e.new
                sets[e.path][2] = e.seq
            else:
                sets[e.path] = [e.old, e.new, e.seq]
        else:
            folded.append((e.seq, e.json()))
    for path, (old, new, seq) in sets.items():
        if jdump(old) != jdump(new):
            folded.append((seq, {"seq": seq, "path": path, "op": "set", "old": old, "new": new}))
    folded.sort(key=lambda x: x[0])
    return [c for _, c in folded]


# ---------------------------------------------------------------------------
# Writes: each plan says what to send, what status to expect, which paths it
# touches (for long-poll tests) and, once answered, which changes it committed.


class Plan:
    def __init__(self, name, method, path, body=None, raw=None, headers=None, status=(200,), touch=(), finish=None):
        self.name = name
        self.method = method
        self.path = path
        self.body = body
        self.raw = raw
        self.headers = headers or {}
        self.status = status if isinstance(status, tuple) else (status,)
        self.touch = list(touch)   # (path, op, elem)
        self.finish = finish       # (status, body) -> list of transactions, each a list of (path, op, old, new)

    def describe(self):
        b = self.raw.decode("utf-8", "replace") if self.raw is not None else (json.dumps(self.body) if self.body is not None else "")
        h = "".join(f" -H '{k}: {v}'" for k, v in self.headers.items())
        return f"{self.method} {self.path}{h}{(' ' + short(b, 200)) if b else ''}"


NAMES = ["Glazed", "Maple Bar", "Cruller", "Bear Claw", "Old Fashioned", "Boston Cream", "Jelly"]
DOUGHS = ["plain", "chocolate", "cake", "yeast"]
GLAZES = [None, "sugar", "honey", "maple", "chocolate"]
TOPPINGS = [None, "sprinkles", "oats", "nuts"]
TRUCK_NAMES = ["Food Truck", "Donut Truck", "Night Truck", "Truck №1"]
USERS = ["ada", "grace", "linus", "Ω-user"]


class Writes:
    """Plans of valid, no-op and refused writes against the model's state."""

    def __init__(self, checker):
        self.c = checker
        self.rng = checker.rng
        self.st = checker.st

    # -- helpers
    def any_id(self, d):
        return self.rng.choice(list(d)) if d else None

    def missing_id(self):
        return "00000000-0000-7000-8000-%012x" % self.rng.randrange(1 << 40)

    def check_body(self, plan, got, want):
        if jdump(got) != jdump(want):
            self.c.report.fail("wrong-state", f"{plan.describe()} answered {short(got)}; the model says {short(want)}")

    # -- truck
    def truck_rename(self):
        st = self.st
        name = self.rng.choice(TRUCK_NAMES)
        old = st.truck_name
        touch = [("/truck/name", "set", None)] if name != old else []

        def finish(status, body):
            st.truck_name = name
            return [[("/truck/name", "set", old, name)]] if name != old else []
        headers = {}
        if self.rng.random() < 0.2:
            tag = self.c.current_etag("/truck")
            if tag:
                headers["If-Match"] = tag
        p = Plan("truck-rename", "PATCH", "/truck", {"name": name}, headers=headers, touch=touch, finish=finish)
        orig = p.finish

        def fin(status, body):
            t = orig(status, body)
            self.check_body(p, body, st.truck())
            return t
        p.finish = fin
        return p

    def donut_create(self):
        st = self.st
        body = {"name": self.rng.choice(NAMES)}
        for f, pool in (("dough", DOUGHS), ("glaze", GLAZES), ("topping", TOPPINGS)):
            if self.rng.random() < 0.5:
                body[f] = self.rng.choice(pool)

        def finish(status, resp):
            i = resp["id"]
            d = {"name": body["name"], "dough": body.get("dough", "plain"), "glaze": body.get("glaze"), "topping": body.get("topping")}
            st.donuts[i] = d
            self.check_body(p, resp, st.donut(i))
            return [[("/truck/donuts", "insert", None, st.donut(i))]]
        p = Plan("donut-create", "POST", "/truck/donuts", body, status=201, touch=[("/truck/donuts", "insert", None)], finish=finish)
        return p

    def donut_patch(self):
        st = self.st
        i = self.any_id(st.donuts)
        if i is None:
            return self.donut_create()
        body = {}
        for f, pool in (("name", NAMES), ("dough", DOUGHS), ("glaze", GLAZES), ("topping", TOPPINGS)):
            if self.rng.random() < 0.45:
                body[f] = self.rng.choice(pool)
        d = st.donuts[i]
        changes = [(f"/truck/donuts/{i}/{f}", "set", d[f], body[f]) for f in DONUT_FIELDS if f in body and body[f] != d[f]]
        headers = {}
        if self.rng.random() < 0.2:
            tag = self.c.current_etag(f"/truck/donuts/{i}")
            if tag:
                headers["If-Match"] = tag

        def finish(status, resp):
            for f in DONUT_FIELDS:
                if f in body:
                    d[f] = body[f]
            self.check_body(p, resp, st.donut(i))
            return [changes] if changes else []
        p = Plan("donut-patch", "PATCH", f"/truck/donuts/{i}", body, headers=headers,
                 touch=[(c[0], "set", None) for c in changes], finish=finish)
        return p

    def donut_delete(self):
        st = self.st
        i = self.any_id(st.donuts)
        if i is None:
            return self.donut_create()
        old = st.donut(i)

        def finish(status, resp):
            del st.donuts[i]
            return [[("/truck/donuts", "remove", old, None)]]
        return Plan("donut-delete", "DELETE", f"/truck/donuts/{i}", status=204,
                    touch=[("/truck/donuts", "remove", f"/truck/donuts/{i}")], finish=finish)

    def order_create(self):
        st = self.st
        i = self.any_id(st.donuts)
        if i is None:
            return self.donut_create()
        q = self.rng.randint(1, 1000)
        n = len(st.orders)

        def finish(status, resp):
            oid = resp["id"]
            st.orders[oid] = {"donutId": i, "quantity": q}
            self.check_body(p, resp, st.order(oid))
            return [[("/truck/orders", "insert", None, st.order(oid)), ("/truck/orderCount", "set", n, n + 1)]]
        p = Plan("order-create", "POST", "/truck/orders", {"donutId": i, "quantity": q}, status=201,
                 touch=[("/truck/orders", "insert", None), ("/truck/orderCount", "set", None)], finish=finish)
        return p

    def order_delete(self):
        st = self.st
        i = self.any_id(st.orders)
        if i is None:
            return self.order_create()
        old = st.order(i)
        n = len(st.orders)

        def finish(status, resp):
            del st.orders[i]
            return [[("/truck/orders", "remove", old, None), ("/truck/orderCount", "set", n, n - 1)]]
        return Plan("order-delete", "DELETE", f"/truck/orders/{i}", status=204,
                    touch=[("/truck/orders", "remove", f"/truck/orders/{i}"), ("/truck/orderCount", "set", None)], finish=finish)

    # -- account
    def login(self):
        st = self.st
        u = self.rng.choice(USERS)
        old = st.user

        def finish(status, resp):
            st.user = u
            self.check_body(p, resp, {"userName": u})
            return [[("/account/userName", "set", old, u)]] if old != u else []
        p = Plan("login", "POST", "/account/login", {"userName": u},
                 touch=[("/account/userName", "set", None)] if old != u else [], finish=finish)
        return p

    def logout(self):
        st = self.st
        old = st.user

        def finish(status, resp):
            st.user = None
            self.check_body(p, resp, {"userName": None})
            return [[("/account/userName", "set", old, None)]] if old is not None else []
        p = Plan("logout", "POST", "/account/logout", self.rng.choice([None, {}]),
                 touch=[("/account/userName", "set", None)] if old is not None else [], finish=finish)
        return p

    # -- grid
    def dot_patch(self):
        st = self.st
        i = self.any_id(st.dots)
        body = {}
        for f in DOT_FIELDS:
            if self.rng.random() < 0.6:
                body[f] = self.rng.random() < 0.5
        d = st.dots[i]
        changes = [(f"/grid/dots/{i}/{f}", "set", d[f], body[f]) for f in DOT_FIELDS if f in body and body[f] != d[f]]
        headers = {}
        if self.rng.random() < 0.2:
            tag = self.c.current_etag(f"/grid/dots/{i}")
            if tag:
                headers["If-Match"] = tag

        def finish(status, resp):
            for f in DOT_FIELDS:
                if f in body:
                    d[f] = body[f]
            self.check_body(p, resp, st.dot(i))
            return [changes] if changes else []
        p = Plan("dot-patch", "PATCH", f"/grid/dots/{i}", body, headers=headers,
                 touch=[(c[0], "set", None) for c in changes], finish=finish)
        return p

    def dot_tap(self):
        st = self.st
        i = self.any_id(st.dots)
        d = st.dots[i]
        path = f"/grid/dots/{i}/isTapAnimated"
        txns = []
        if not d["isTapAnimated"]:
            txns.append([(path, "set", False, True)])
        txns.append([(path, "set", True, False)])

        def finish(status, resp):
            d["isTapAnimated"] = False
            self.check_body(p, resp, st.dot(i))
            return txns
        p = Plan("dot-tap", "POST", f"/grid/dots/{i}/tap", self.rng.choice([None, {}]),
                 touch=[(path, "set", None)], finish=finish)
        return p

    def grid_random(self):
        st = self.st

        def finish(status, resp):
            r, c, dot = resp.get("row"), resp.get("col"), resp.get("dot") or {}
            if not (isinstance(r, int) and 0 <= r < len(st.rows) and isinstance(c, int) and 0 <= c < len(st.rows[r])) \
                    or st.rows[r][c] != dot.get("id"):
                self.c.report.fail("wrong-state", f"POST /grid/random answered {short(resp)}: no such dot at that place in the model")
                return []
            i = dot["id"]
            d = st.dots[i]
            old = d["isRandomAnimated"]
            d["isRandomAnimated"] = True
            self.check_body(p, resp, {"row": r, "col": c, "dot": st.dot(i)})
            return [[(f"/grid/dots/{i}/isRandomAnimated", "set", False, True)]] if not old else []
        p = Plan("grid-random", "POST", "/grid/random", self.rng.choice([None, {}]), touch=[("?", "set", None)], finish=finish)
        return p

    def row_append(self):
        st = self.st
        n = self.rng.randint(1, 3)

        def finish(status, resp):
            r = len(st.rows)
            dots = resp.get("dots") or []
            ids = [d.get("id") for d in dots]
            st.rows.append(ids)
            for d in ids:
                st.dots[d] = {"isTapAnimated": False, "isRandomAnimated": False}
            want = {"row": r, "dots": [st.dot(d) for d in ids]}
            self.check_body(p, resp, want)
            if len(ids) != n:
                self.c.report.fail("wrong-state", f"{p.describe()} made {len(ids)} dots")
            return [[("/grid/rows", "insert", None, want)]]
        p = Plan("row-append", "POST", "/grid/rows", {"dots": n}, status=201, touch=[("/grid/rows", "insert", None)], finish=finish)
        return p

    def dot_append(self):
        st = self.st
        r = self.rng.randrange(len(st.rows))
        if len(st.rows[r]) >= 100:
            return self.dot_patch()

        def finish(status, resp):
            dot = resp.get("dot") or {}
            i = dot.get("id")
            c = len(st.rows[r])
            st.rows[r].append(i)
            st.dots[i] = {"isTapAnimated": False, "isRandomAnimated": False}
            want = {"row": r, "col": c, "dot": st.dot(i)}
            self.check_body(p, resp, want)
            return [[("/grid/rows", "insert", None, want)]]
        p = Plan("dot-append", "POST", f"/grid/rows/{r}/dots", self.rng.choice([None, {}]),
                 touch=[("/grid/rows", "insert", None)], finish=finish)
        return p

    # -- posts
    def post_create(self):
        st = self.st
        h = self.rng.choice([self.rng.randint(50, 400), self.rng.randint(50, 400) + 0.5])
        url = f"https://images.example/{self.rng.randrange(10**6)}.jpg"

        def finish(status, resp):
            i = resp["id"]
            st.posts[i] = {"imageURL": url, "height": h}
            self.check_body(p, resp, st.post(i))
            return [[("/posts", "insert", None, st.post(i))]]
        p = Plan("post-create", "POST", "/posts", {"imageURL": url, "height": h}, status=201,
                 touch=[("/posts", "insert", None)], finish=finish)
        return p

    def post_delete(self):
        st = self.st
        i = self.any_id(st.posts)
        if i is None:
            return self.post_create()
        old = st.post(i)
        headers = {}
        if self.rng.random() < 0.2:
            tag = self.c.current_etag(f"/posts/{i}")
            if tag:
                headers["If-Match"] = tag

        def finish(status, resp):
            del st.posts[i]
            return [[("/posts", "remove", old, None)]]
        return Plan("post-delete", "DELETE", f"/posts/{i}", status=204, headers=headers,
                    touch=[("/posts", "remove", f"/posts/{i}")], finish=finish)

    # -- jobs (progress reported by clients)
    def job_create(self):
        st = self.st
        total = self.rng.choice([1, 5, 10, 100, 1000])

        def finish(status, resp):
            i = resp["id"]
            st.jobs[i] = {"current": 0, "total": total}
            self.check_body(p, resp, st.job(i))
            return [[("/jobs", "insert", None, st.job(i))]]
        p = Plan("job-create", "POST", "/jobs", {"total": total}, status=201, touch=[("/jobs", "insert", None)], finish=finish)
        return p

    def job_progress(self):
        st = self.st
        i = self.any_id(st.jobs)
        if i is None:
            return self.job_create()
        j = st.jobs[i]
        cur, total = j["current"], j["total"]
        r = self.rng.random()
        if r < 0.15 and cur > 0:
            value = self.rng.randrange(cur)          # backwards: 422
            return Plan("job-backwards", "POST", f"/jobs/{i}/progress", {"current": value}, status=422, finish=lambda s, b: [])
        if r < 0.3:
            value = cur                               # no-op
        elif r < 0.4:
            value = total + self.rng.randint(1, 50)   # clamped
        else:
            value = min(total, cur + self.rng.randint(1, max(1, total // 3)))
        new = min(value, total)
        changes = []
        if new != cur:
            changes.append((f"/jobs/{i}/progress", "set", {"current": cur, "total": total}, {"current": new, "total": total}))
            if new == total:
                changes.append((f"/jobs/{i}/isComplete", "set", False, True))

        def finish(status, resp):
            j["current"] = new
            self.check_body(p, resp, st.job(i))
            return [changes] if changes else []
        p = Plan("job-progress", "POST", f"/jobs/{i}/progress", {"current": value},
                 touch=[(c[0], "set", None) for c in changes], finish=finish)
        return p

    def job_delete(self):
        st = self.st
        i = self.any_id(st.jobs)
        if i is None:
            return self.job_create()
        old = st.job(i)

        def finish(status, resp):
            del st.jobs[i]
            return [[("/jobs", "remove", old, None)]]
        return Plan("job-delete", "DELETE", f"/jobs/{i}", status=204, touch=[("/jobs", "remove", f"/jobs/{i}")], finish=finish)

    # -- games
    def game_create(self):
        st = self.st
        pairs = self.rng.randint(1, 4)
        body = {"pairs": pairs}
        if self.rng.random() < 0.5:
            body["seed"] = self.rng.randrange(-(1 << 40), 1 << 40)

        def finish(status, resp):
            i = resp["id"]
            cards = resp.get("cards") or []
            contents = collections.Counter(c.get("content") for c in cards)
            if len(cards) != 2 * pairs or any(v != 2 for v in contents.values()) \
                    or any(c.get("isFaceUp") or c.get("isMatched") for c in cards) or resp.get("isOver"):
                self.c.report.fail("wrong-state", f"{p.describe()} dealt {short(resp)}")
            st.games[i] = {"cards": [{"id": c["id"], "content": c["content"], "isFaceUp": False, "isMatched": False} for c in cards],
                           "isOver": False}
            return [[("/games", "insert", None, st.game(i))]]
        p = Plan("game-create", "POST", "/games", body, status=201, touch=[("/games", "insert", None)], finish=finish)
        return p

    def game_choose(self):
        st = self.st
        g = self.any_id(st.games)
        if g is None:
            return self.game_create()
        game = st.games[g]
        k = self.rng.randrange(len(game["cards"]))
        cards = [dict(c) for c in game["cards"]]
        card = cards[k]
        if not (card["isFaceUp"] or card["isMatched"]):
            up = [c for c in cards if c["isFaceUp"] and not c["isMatched"]]
            if len(up) == 1:
                card["isFaceUp"] = True
                if up[0]["content"] == card["content"]:
                    up[0]["isMatched"] = True
                    card["isMatched"] = True
            else:
                for c in cards:
                    if not c["isMatched"]:
                        c["isFaceUp"] = False
                card["isFaceUp"] = True
        changes = []
        for old, new in zip(game["cards"], cards):
            for f in ("isFaceUp", "isMatched"):
                if old[f] != new[f]:
                    changes.append((f"/games/{g}/cards/{new['id']}/{f}", "set", old[f], new[f]))
        over = all(c["isMatched"] for c in cards)
        if over != game["isOver"]:
            changes.append((f"/games/{g}/isOver", "set", game["isOver"], over))

        def finish(status, resp):
            game["cards"] = cards
            game["isOver"] = over
            self.check_body(p, resp, st.game(g))
            return [changes] if changes else []
        p = Plan("game-choose", "POST", f"/games/{g}/cards/{cards[k]['id']}/choose", self.rng.choice([None, {}]),
                 touch=[(c[0], "set", None) for c in changes], finish=finish)
        return p

    def game_delete(self):
        st = self.st
        g = self.any_id(st.games)
        if g is None:
            return self.game_create()
        old = st.game(g)

        def finish(status, resp):
            del st.games[g]
            return [[("/games", "remove", old, None)]]
        return Plan("game-delete", "DELETE", f"/games/{g}", status=204, touch=[("/games", "remove", f"/games/{g}")], finish=finish)

    # -- refused writes: each must change nothing
    def refused(self):
        st = self.st
        rng = self.rng
        none = lambda s, b: []
        donut = self.any_id(st.donuts) or "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
        dot = self.any_id(st.dots)
        choices = [
            lambda: Plan("bad-json", "POST", "/truck/donuts", raw=b'{"name": "Bear Claw"', status=400, finish=none),
            lambda: Plan("wrong-type", "POST", "/truck/donuts", {"name": 7}, status=400, finish=none),
            lambda: Plan("unknown-field", "POST", "/truck/donuts", {"name": "X", "colour": "brown"}, status=400, finish=none),
            lambda: Plan("not-object", "POST", "/truck/donuts", ["Bear Claw"], status=400, finish=none),
            lambda: Plan("no-name", "POST", "/truck/donuts", {"glaze": "sugar"}, status=422, finish=none),
            lambda: Plan("long-name", "POST", "/truck/donuts", {"name": "x" * 201}, status=422, finish=none),
            lambda: Plan("empty-patch-name", "PATCH", f"/truck/donuts/{donut}", {"name": ""}, status=(422, 404), finish=none),
            lambda: Plan("unknown-donut", "PATCH", f"/truck/donuts/{self.missing_id()}", {"name": "X"}, status=404, finish=none),
            lambda: Plan("delete-unknown-donut", "DELETE", f"/truck/donuts/{self.missing_id()}", status=404, finish=none),
            lambda: Plan("bad-if-match", "PATCH", f"/truck/donuts/{donut}", {"name": "Zzz"}, headers={"If-Match": '"0123456789abcdef"'}, status=(412, 404), finish=none),
            lambda: Plan("truck-bad-if-match", "PATCH", "/truck", {"name": "Zzz"}, headers={"If-Match": '"0123456789abcdef"'}, status=412, finish=none),
            lambda: Plan("truck-empty-name", "PATCH", "/truck", {"name": ""}, status=422, finish=none),
            lambda: Plan("order-unknown-donut", "POST", "/truck/orders", {"donutId": self.missing_id(), "quantity": 1}, status=422, finish=none),
            lambda: Plan("order-quantity", "POST", "/truck/orders", {"donutId": donut, "quantity": rng.choice([0, 1001, 5000])}, status=422, finish=none),
            lambda: Plan("order-fraction", "POST", "/truck/orders", {"donutId": donut, "quantity": 1.5}, status=400, finish=none),
            lambda: Plan("order-delete-unknown", "DELETE", f"/truck/orders/{self.missing_id()}", status=404, finish=none),
            lambda: Plan("login-empty", "POST", "/account/login", {}, status=422, finish=none),
            lambda: Plan("login-blank", "POST", "/account/login", {"userName": ""}, status=422, finish=none),
            lambda: Plan("logout-field", "POST", "/account/logout", {"x": 1}, status=400, finish=none),
            lambda: Plan("dot-wrong-type", "PATCH", f"/grid/dots/{dot}", {"isRandomAnimated": "yes"}, status=400, finish=none),
            lambda: Plan("dot-bad-if-match", "PATCH", f"/grid/dots/{dot}", {"isTapAnimated": True}, headers={"If-Match": '"0123456789abcdef"'}, status=412, finish=none),
            lambda: Plan("dot-unknown", "PATCH", f"/grid/dots/{self.missing_id()}", {"isTapAnimated": True}, status=404, finish=none),
            lambda: Plan("tap-field", "POST", f"/grid/dots/{dot}/tap", {"x": 1}, status=400, finish=none),
            lambda: Plan("rows-too-many", "POST", "/grid/rows", {"dots": rng.choice([0, 101])}, status=422, finish=none),
            lambda: Plan("rows-type", "POST", "/grid/rows", {"dots": "2"}, status=400, finish=none),
            lambda: Plan("dot-append-no-row", "POST", f"/grid/rows/{len(st.rows) + rng.randint(0, 5)}/dots", status=404, finish=none),
            lambda: Plan("post-ftp", "POST", "/posts", {"imageURL": "ftp://images.example/a.jpg", "height": 10}, status=422, finish=none),
            lambda: Plan("post-height", "POST", "/posts", {"imageURL": "https://images.example/a.jpg", "height": 0}, status=422, finish=none),
            lambda: Plan("post-height-type", "POST", "/posts", {"imageURL": "https://images.example/a.jpg", "height": "10"}, status=400, finish=none),
            lambda: Plan("post-delete-unknown", "DELETE", f"/posts/{self.missing_id()}", status=404, finish=none),
            lambda: Plan("job-total", "POST", "/jobs", {"total": 0}, status=422, finish=none),
            lambda: Plan("job-step-only", "POST", "/jobs", {"total": 1000, "step": 230}, status=422, finish=none),
            lambda: Plan("job-type", "POST", "/jobs", {"total": "1000"}, status=400, finish=none),
            lambda: Plan("job-progress-unknown", "POST", f"/jobs/{self.missing_id()}/progress", {"current": 1}, status=404, finish=none),
            lambda: Plan("game-pairs", "POST", "/games", {"pairs": 27}, status=422, finish=none),
            lambda: Plan("game-type", "POST", "/games", {"pairs": "4"}, status=400, finish=none),
            lambda: Plan("game-unknown-card", "POST", f"/games/{self.any_id(st.games) or self.missing_id()}/cards/no-such-card/choose", status=404, finish=none),
        ]
        return rng.choice(choices)()

    def valid(self):
        st = self.st
        rng = self.rng
        total_dots = len(st.dots)
        table = [
            (self.truck_rename, 4), (self.donut_create, 3 if len(st.donuts) < 25 else 0.5),
            (self.donut_patch, 6), (self.donut_delete, 1 if len(st.donuts) < 25 else 4),
            (self.order_create, 4 if len(st.orders) < 30 else 1), (self.order_delete, 2 if len(st.orders) < 30 else 5),
            (self.login, 3), (self.logout, 2),
            (self.dot_patch, 6), (self.dot_tap, 3), (self.grid_random, 2),
            (self.row_append, 0.6 if total_dots < 120 else 0), (self.dot_append, 0.8 if total_dots < 120 else 0),
            (self.post_create, 3 if len(st.posts) < 25 else 0.5), (self.post_delete, 1 if len(st.posts) < 25 else 4),
            (self.job_create, 1.5 if len(st.jobs) < 15 else 0.3), (self.job_progress, 4), (self.job_delete, 0.5 if len(st.jobs) < 15 else 3),
            (self.game_create, 1 if len(st.games) < 6 else 0.1), (self.game_choose, 6), (self.game_delete, 0.4 if len(st.games) < 6 else 2),
        ]
        fns, weights = zip(*table)
        return rng.choices(fns, weights)[0]()
