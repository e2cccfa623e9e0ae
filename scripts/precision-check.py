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
* Per observer: every property key it read and the seq from which it
  counts (the Observation-Cursor of the answer that first read it), and every
  *shape* it read (SPEC §3b, /work/runs/shapes-semantics.md): a read of a
  collection (`/truck/donuts`, `/truck/orders`, `/posts`, `/jobs`, `/games`,
  the two shown in `GET /truck`, a game's `cards`), whole or a page, is one
  shape: the collection, the fields shown (`fields=`; None = all) and the
  window, kept as a range of creation-order indexes (the model knows each
  element's place in creation order, a deleted one keeps its place; the
  server's positions are needed only for `GET /observers/{id}` and are
  learned from the Links). Window of a page: asc from the element after the
  cursor's element to the last one shown, open at the far end when no Link
  came; desc the mirror image; an empty page is open at its far end. A
  shape's reader hears the insert of an element landing in the window, the
  remove of one in it, and a set of a shown field of one in it, or of any
  field of one made after the read (its insert showed every field); a
  card's change counts as a change of its game's field `cards`; computed
  fields (isComplete, isOver) are fields. The grid stays per-property keys:
  a row's insert makes its dots read by readers of `/grid/rows` (SPEC §3a).
  A remove reaches key readers of any property of the element too (and
  readers of a collection inside it: a game's cards). `DELETE
  /observers/{id}/reads` forgets everything, and later polls (replays too)
  no longer deliver what was forgotten. The implicit cursor is the cursor
  last answered to the observer by any poll, with or without `since`.

What each answer is checked for
-------------------------------
* Reads (every resource, with and without `fields=`, with and without an
  observer): body equals the model, `Observation-Cursor` is the newest seq,
  unknown fields are 400. `HEAD` tracks nothing and sends the cursor.
  `If-None-Match` with the tag of an unchanged representation is 304 and,
  as docs/API.md documents, still tracks the read.
* Pages: every collection read with random `limit` (1…4, so pages are
  small and many), `order=asc|desc`, `after` from a pool of cursors the
  Links gave (each remembered with the element that ended its page; also
  `after=0`), and `fields=`; `GET /truck` with `orders.limit/after/order`
  and `donuts.*`. The body must hold the right elements in the right order;
  `Link: <…>; rel="next"` (with `title=` in the truck) must come exactly
  when more follow, name the collection, the same limit, order and fields,
  and an `after` that is a position growing with creation order; the Link
  is followed (up to four hops) and must give the next page. Bad `limit`,
  `after`, `order` (and `orders.limit` …) are 400. Deletes often take the
  newest or oldest element, so inserts and removes land inside and outside
  windows.
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
* Inspections: `GET /observers/{id}`: `reads` lists every key the model has
  and each shape's collection, every shown field (all fields of elements made
  after the read) of every live element in each window of the top-level
  collections, and nothing outside the keys and the shapes' collections;
  `shapes` lists exactly the model's shapes (collection, fields, from,
  through in positions; a shape read again is kept once); and the model's
  implicit cursor. Unknown and deleted observers are 404; bad
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
  reader/poller threads (default 8) on one server, the group commit in play;
  each kind gets half of `--ops`. Each writer owns its own objects (donuts,
  its orders, dots, posts, jobs, games), so the model predicts their changes
  exactly whatever the interleaving; shared paths get unique values (truck
  name, userName) or are derived (orderCount). The full log read by the
  all-seeing observer is the oracle for order and seqs: every acknowledged
  write must be in it exactly once with the predicted values, each
  transaction at consecutive seqs; no change may come from nowhere; the log
  replayed through the model must show every `old` as the value before, and
  end in the state the server then serves. Each reader owns its observers
  and records every read (keys and shapes from the answer, from its cursor),
  every page it reads (limit, order, after from its own pool of Links,
  fields; the window is computed from the log's creation order once the run
  is over) and every poll; once the run is over, every poll answer is checked against the log
  as in sequential mode, and every long-poll that answered empty before its
  timeout is an early wake. Restarts pause every thread first (no write in
  flight), then check the cursors of every observer as above; kill -9 in the
  middle of writes is left to scripts/crash-test.py.
* `cluster`: three instances on one PostgreSQL database (created by the
  checker at OBSERVABLE_TEST_POSTGRES_ADMIN_URL, which scripts/with-postgres
  exports, or given with --postgres-url), each request sent to one of them at
  random (no stickiness: a poll through A, the next through B), long-polls
  parked on one instance woken by writes through another, and restarts of
  one instance at a time.

`--planted-faults` runs a short sequential run (cluster for the cursor fault
when PostgreSQL is at hand) for each value of OBSERVABLE_PLANTED_FAULT the
server honours (drop-implied-reads, forget-cursor, wake-every-poll,
ignore-shape-fields, narrow-page-window), prints which checks caught each,
and exits 1 if one goes unnoticed.

Output: each failure with the observer, the reads that matter, the request
and the change; then a table of counts. Exit 1 if any count is non-zero.

Streams and the implicit cursor: the documents do not say what a stream
does to the implicit cursor, so after each stream test the checker closes
it, ends it on the server with a poll (a poll ends the observer's stream),
and adopts the cursor `GET /observers/{id}` then shows. (A server learns
that a client closed a stream only when a write to it fails, and may count
the events written meanwhile as answered.)

Not checked (yet): server-advanced jobs (step/intervalMs), retention and
`repair=true` (the checker keeps every change: --retain-changes is raised),
TTL expiry, pages of a game's cards and of the grid, If-Match with a correct
tag on DELETE, tokens and CORS; in concurrent mode, reads lists (inserts race
with inspections), displacement, streams and bodies of reads (the state at a
read's cursor is not kept: a page is checked only to be in creation order past
its cursor, and full when it has a Link; its window comes from the log's
creation order); kill -9 with writes in flight.
"""

import argparse
import collections
import json
import os
import random
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.parse

from harness import Client, ConnectionLost, Postgres, admin_url, start_instances, trusted_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
# Server processes


# What every instance runs with: every change kept (the checker replays
# from 0), long-polls of up to a minute, and, since every observer's poll
# comes from 127.0.0.1, no share per address.
ARGUMENTS = ["--retain-changes", "100000000", "--retain-changes-bytes", "100000000000", "--max-long-poll", "60",
             "--idle-timeout", "120", "--max-connections-per-address", "1000000"]


def start_servers(args, folder, count, database, fault=None):
    """The instances of a run on `database`, started: one, or three named A, B
    and C; with OBSERVABLE_PLANTED_FAULT set to `fault` (unset if None) and the
    quotas of a trusted address."""
    env = trusted_environment()
    env.pop("OBSERVABLE_PLANTED_FAULT", None)
    if fault:
        env["OBSERVABLE_PLANTED_FAULT"] = fault
    names = [f"instance {'ABC'[i] if count > 1 else 'server'}" for i in range(count)]
    return start_instances(count, args.binary, database, folder, ARGUMENTS, env=env, names=names)


def stop_server(instance, how, report):
    """"kill": kill -9. "term": SIGTERM, after which the instance must exit 0 within 30 s."""
    if instance.process is None:
        return
    if how == "kill":
        instance.kill()
        return
    code = instance.stop(30)
    if code is None:
        report.fail("crash", f"{instance.name} did not stop within 30 s of SIGTERM; killed")
    elif code != 0:
        report.fail("crash", f"{instance.name} exited {code} after SIGTERM (expected 0); see {instance.log_path}")


def cluster_database(args):
    """A new database on the PostgreSQL server of --postgres-url or
    scripts/with-postgres; its URL (None without either)."""
    admin = admin_url(args.postgres_url)
    if not admin:
        return None
    return Postgres(admin).create(f"precision_{os.getpid()}_{random.randrange(1 << 30)}")


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
    __slots__ = ("seq", "path", "op", "old", "new", "txn", "elem", "implied", "coll", "places")

    def __init__(self, seq, path, op, old, new, txn):
        self.seq, self.path, self.op, self.old, self.new, self.txn = seq, path, op, old, new, txn
        self.elem = None
        self.implied = None
        self.coll = None
        self.places = ()   # where it lands for shapes: (collection, creation index, field or None, element's insert seq)
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
        # Creation order, all a shape's window needs: every element of every
        # paged collection (cards of a game too) by the order it was made in;
        # a deleted element keeps its place. Positions are the server's.
        self.order = collections.defaultdict(list)   # collection -> [id]
        self.idx = {}                                 # (collection, id) -> creation index
        self.made = {}                                # (collection, id) -> insert seq (0: seed)
        self.by_coll = collections.defaultdict(list)  # collection -> [entry with a place in it]

    def register(self, coll, i, seq):
        if (coll, i) not in self.idx:
            self.idx[(coll, i)] = len(self.order[coll])
            self.order[coll].append(i)
            self.made[(coll, i)] = seq

    def seed(self, st):
        """The elements there before the run, in creation order."""
        for coll, d in (("/truck/donuts", st.donuts), ("/truck/orders", st.orders), ("/posts", st.posts),
                        ("/jobs", st.jobs), ("/games", st.games)):
            for i in d:
                self.register(coll, i, 0)
        for g, game in st.games.items():
            for c in game["cards"]:
                self.register(f"/games/{g}/cards", c["id"], 0)

    def place(self, coll, i, field):
        k = (coll, i)
        n = self.idx.get(k)
        return None if n is None else (coll, n, field, self.made[k])

    def places_of(self, path, op, old=None, new=None, seq=0):
        """Where a change lands for shapes (registering an inserted element)."""
        if op == "insert":
            if path in REMOVABLE and isinstance(new, dict) and "id" in new:
                self.register(path, new["id"], seq)
                if path == "/games":
                    for c in new.get("cards") or ():
                        self.register(f"/games/{new['id']}/cards", c.get("id"), seq)
                return [self.place(path, new["id"], None)]
            return []
        if op == "remove":
            if path in REMOVABLE and isinstance(old, dict) and "id" in old:
                p = self.place(path, old["id"], None)
                return [p] if p else []
            return []
        parts = path.strip("/").split("/")
        out = []
        if parts[0] == "truck" and len(parts) == 4 and parts[1] in ("donuts", "orders"):
            out.append(self.place("/truck/" + parts[1], parts[2], parts[3]))
        elif parts[0] in ("posts", "jobs") and len(parts) == 3:
            out.append(self.place("/" + parts[0], parts[1], parts[2]))
        elif parts[0] == "games" and len(parts) == 3:
            out.append(self.place("/games", parts[1], parts[2]))
        elif parts[0] == "games" and len(parts) == 5 and parts[2] == "cards":
            # a card's change is a change of its game's field `cards` too
            out.append(self.place(f"/games/{parts[1]}/cards", parts[3], parts[4]))
            out.append(self.place("/games", parts[1], "cards"))
        return [x for x in out if x is not None]

    def new_txn(self):
        self.next_txn += 1
        return self.next_txn

    def append(self, e):
        if e.seq in self.by_seq:
            return
        if self.seqs and e.seq <= self.seqs[-1]:
            raise ValueError(f"log out of order: {e.seq} after {self.seqs[-1]}")
        e.places = self.places_of(e.path, e.op, e.old, e.new, e.seq)
        for c in {p[0] for p in e.places}:
            self.by_coll[c].append(e)
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
        self.shapes = {}          # shape key -> MShape (collection reads: whole, pages, a game's cards)
        self.shapes_by_coll = collections.defaultdict(list)
        self.implicit = cursor    # None when unknown (after a stream)
        self.creation = cursor
        self.ins_ptr = 0          # index into log.inserts processed for implied reads
        self.history = [(created_at, cursor)]   # (time answered, cursor), for kill -9 allowance
        self.cursors = [cursor]   # cursors seen, for replays
        self.last_event_id = None
        self.deleted = False
        self.lock = threading.Lock()
        self.trail = collections.deque(maxlen=6)   # the observer's last requests, for failure reports

    def note(self, text):
        self.trail.append(text)

    def track(self, path, frm):
        old = self.reads.get(path)
        if old is None or frm < old:
            self.reads[path] = frm
            e = elem_prefix(path)
            if e is not None:
                cur = self.elem_from.get(e)
                if cur is None or frm < cur:
                    self.elem_from[e] = frm

    def track_shape(self, sh):
        old = self.shapes.get(sh.key)
        if old is not None and old.frm <= sh.frm:
            return   # a shape read again keeps its seq
        self.shapes[sh.key] = sh
        lst = self.shapes_by_coll[sh.coll]
        if old is not None:
            lst.remove(old)
        lst.append(sh)
        e = elem_prefix(sh.coll)
        if e is not None:
            # a collection inside an element (a game's cards): the element's
            # remove reaches its readers, as for a property of it
            cur = self.elem_from.get(e)
            if cur is None or sh.frm < cur:
                self.elem_from[e] = sh.frm

    def forget(self):
        self.reads.clear()
        self.elem_from.clear()
        self.shapes.clear()
        self.shapes_by_coll.clear()

    def prune_history(self):
        """Keeps the cursors answered in the last 5 s and the last one before
        them: what a kill -9 may leave (the server saves once a second). By
        time, not count: a stream's events may be many in one second."""
        if len(self.history) < 64:
            return
        self.history.sort()
        cut = time.monotonic() - 5
        older = [e for e in self.history if e[0] <= cut]
        self.history = older[-1:] + [e for e in self.history if e[0] > cut]

    def answered(self, cursor):
        self.trail.append(f"answered cursor {cursor}")
        self.implicit = cursor
        self.history.append((time.monotonic(), cursor))
        self.prune_history()
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


class MShape:
    """A shape in the model: the collection, the fields shown (None: all),
    the window as creation indexes lo..hi (both included; -1 and INF where
    open), the seq it counts from, whether every field of an element made
    after the read counts as read (`newer`), and the window in the
    server's positions (None where open) for `GET /observers/{id}`."""
    __slots__ = ("coll", "fields", "lo", "hi", "frm", "newer", "pos_from", "pos_through", "key")

    def __init__(self, coll, fields, lo, hi, frm, newer=True, pos_from=None, pos_through=None, newest=None):
        self.coll = coll
        self.fields = None if fields is None else frozenset(fields)
        self.lo, self.hi, self.frm, self.newer = lo, hi, frm, newer
        self.pos_from, self.pos_through = pos_from, pos_through
        # the server keeps one read per (collection, fields, window in
        # positions, newest element then): two windows that hold the same
        # elements (from after a cursor, and from a Link's element) may be
        # two reads, since positions are not consecutive
        self.key = (coll, None if fields is None else tuple(sorted(set(fields))), lo, hi, pos_from, pos_through,
                    None if fields is None else (newest if newer else "max"))

    def listing(self):
        return (self.coll, None if self.fields is None else tuple(sorted(self.fields)), self.pos_from, self.pos_through)

    def hears(self, place, s):
        coll, i, field, made = place
        return (self.frm < s and self.lo <= i <= self.hi
                and (field is None or self.fields is None or field in self.fields or (self.newer and made > self.frm)))

    def describe(self):
        f = "all" if self.fields is None else ",".join(sorted(self.fields))
        hi = "∞" if self.hi == INF else self.hi
        return f"{self.coll}?shape[{self.lo}..{hi}] fields {f} (positions {self.pos_from}..{self.pos_through})"


def shape_hit(obs, places, s):
    for place in places:
        for sh in obs.shapes_by_coll.get(place[0], ()):
            if sh.hears(place, s):
                return sh
    return None


def receives(obs, e):
    s = e.seq
    f = obs.reads.get(e.path)
    if f is not None and f < s:
        return True
    if e.op == "remove" and e.elem is not None:
        f = obs.elem_from.get(e.elem)
        if f is not None and f < s:
            return True
    if e.places and obs.shapes_by_coll:
        return shape_hit(obs, e.places, s) is not None
    return False


def delivered(obs, log, since, cursor):
    """The log entries in (since, cursor] the observer receives, in seq order."""
    lo = log.index_after(since)
    hi = log.index_after(cursor)
    span = hi - lo
    if span <= 0:
        return []
    if span <= 8 * (len(obs.reads) + len(obs.elem_from) + len(obs.shapes)) + 64:
        return [e for e in log.entries[lo:hi] if receives(obs, e)]
    out = {}
    import bisect
    for coll, shs in obs.shapes_by_coll.items():
        lst = log.by_coll.get(coll)
        if not lst or not shs:
            continue
        start = max(since, min(sh.frm for sh in shs))
        i = bisect.bisect_right(lst, start, key=lambda x: x.seq)
        for x in lst[i:]:
            if x.seq > cursor:
                break
            if shape_hit(obs, x.places, x.seq) is not None:
                out[x.seq] = x
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
    def etag_of(self, url):
        return self.c.current_etag(url)

    def any_id(self, d):
        return self.rng.choice(list(d)) if d else None

    def victim(self, d):
        """An element to delete: often the newest or the oldest (the edges of
        the first and last pages), else any."""
        if not d:
            return None
        r = self.rng.random()
        if r < 0.3:
            return next(reversed(d))
        if r < 0.5:
            return next(iter(d))
        return self.rng.choice(list(d))

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
            tag = self.etag_of("/truck")
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
            tag = self.etag_of(f"/truck/donuts/{i}")
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
        i = self.victim(st.donuts)
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
        i = self.victim(st.orders)
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
            tag = self.etag_of(f"/grid/dots/{i}")
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
        i = self.victim(st.posts)
        if i is None:
            return self.post_create()
        old = st.post(i)
        headers = {}
        if self.rng.random() < 0.2:
            tag = self.etag_of(f"/posts/{i}")
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
        i = self.victim(st.jobs)
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
        g = self.victim(st.games)
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


# ---------------------------------------------------------------------------
# Reads: what each GET answers and which paths it tracks


def pick_fields(rng, names, always_id=True):
    """None (no fields=) or a non-empty selection, sometimes with id."""
    if rng.random() < 0.55:
        return None
    chosen = [n for n in names if rng.random() < 0.5]
    if not chosen:
        chosen = [rng.choice(names)]
    if always_id and rng.random() < 0.3:
        chosen = ["id"] + chosen
    return chosen


def select(obj, fields, keep_id=True):
    if fields is None:
        return obj
    out = {}
    if keep_id and "id" in obj:
        out["id"] = obj["id"]
    for f in fields:
        if f in obj:
            out[f] = obj[f]
    return out


class Reads:
    def __init__(self, checker):
        self.c = checker
        self.st = checker.st
        self.rng = checker.rng

    def url(self, base, fields, extra=None):
        q = []
        if extra:
            q += extra
        if fields is not None:
            q.append("fields=" + ",".join(fields))
        return base + ("?" + "&".join(q) if q else "")

    def choose(self):
        """(url, expected body, tracked property paths, collection reads (PageRead))."""
        st, rng = self.st, self.rng
        opts = [self.truck, self.truck_donuts, self.donut, self.truck_orders, self.order, self.order_count, self.account,
                self.grid, self.grid_row, self.dot, self.dot_at, self.posts, self.post, self.staggered,
                self.jobs, self.job, self.games, self.game, self.card]
        weights = [3, 3.5, 3, 3, 1, 2, 2, 1, 1.5, 3, 2, 2.5, 1, 1, 2, 2, 1.5, 2, 2]
        while True:
            r = rng.choices(opts, weights)[0]()
            if r is not None:
                return r if len(r) == 4 else r + ([],)

    def elems(self, coll):
        st = self.st
        if coll.startswith("/games/"):
            g = coll.split("/")[2]
            return {c["id"]: c for c in st.games[g]["cards"]} if g in st.games else {}
        return {"/truck/donuts": st.donuts, "/truck/orders": st.orders, "/posts": st.posts,
                "/jobs": st.jobs, "/games": st.games}[coll]

    def rep(self, coll, i):
        st = self.st
        if coll.startswith("/games/"):
            return dict(self.elems(coll)[i])
        return {"/truck/donuts": st.donut, "/truck/orders": st.order, "/posts": st.post,
                "/jobs": st.job, "/games": st.game}[coll](i)

    def pick_after(self, coll):
        """A cursor from the pool of those the Links gave: (position, creation index)."""
        pool = self.c.pool.get(coll)
        if self.rng.random() < 0.08 or not pool:
            return (0, -1) if self.rng.random() < 0.5 else None
        pos = self.rng.choice(list(pool))
        return pos, self.c.log.idx[(coll, pool[pos])]

    def page_params(self, coll, whole=0.3):
        """(limit, after, order) of a random page; all None for the whole collection."""
        rng = self.rng
        if rng.random() < whole:
            return None, None, None
        limit = rng.randint(1, 4) if rng.random() < 0.85 else None
        order = rng.choice([None, "asc", "desc", "desc"])
        after = self.pick_after(coll) if rng.random() < 0.55 else None
        if limit is None and after is None and order is None:
            order = "asc"
        return limit, after, order

    def page(self, coll, fields, params=(None, None, None), prefix=None, newer=True):
        limit, after, order = params
        return PageRead(self, coll, fields, limit, after, order, prefix, newer)

    def coll_read(self, coll):
        name, names = COLLS[coll]
        f = pick_fields(self.rng, list(names))
        pr = self.page(coll, f, self.page_params(coll))
        q = pr.query()
        if f is not None:
            q.append("fields=" + ",".join(f))
        self.rng.shuffle(q)
        url = coll + ("?" + "&".join(q) if q else "")
        return url, {name: [select(self.rep(coll, i), f) for i in pr.shown]}, [], [pr]

    def truck(self):
        st = self.st
        f = pick_fields(self.rng, ["name", "donuts", "orders", "orderCount"], always_id=False)
        sel = f or ["name", "donuts", "orders", "orderCount"]
        body, paths, pages, q = {}, [], [], []
        if "name" in sel:
            paths.append("/truck/name")
            body["name"] = st.truck_name
        if "orderCount" in sel:
            paths.append("/truck/orderCount")
            body["orderCount"] = len(st.orders)
        for name in ("donuts", "orders"):
            coll = "/truck/" + name
            params = self.page_params(coll, whole=0.5)
            pr = self.page(coll, None, params, prefix=name + ".")
            if name in sel:
                body[name] = [self.rep(coll, i) for i in pr.shown]
                pages.append(pr)
                q += pr.query()
            elif self.rng.random() < 0.2:
                q += pr.query()   # a page of a collection not shown: no read of it
        if f is not None:
            q.append("fields=" + ",".join(f))
        self.rng.shuffle(q)
        return "/truck" + ("?" + "&".join(q) if q else ""), body, paths, pages

    def truck_donuts(self):
        return self.coll_read("/truck/donuts")

    def donut(self):
        st = self.st
        if not st.donuts:
            return None
        i = self.rng.choice(list(st.donuts))
        f = pick_fields(self.rng, list(DONUT_FIELDS))
        sel = [x for x in (f or DONUT_FIELDS) if x != "id"]
        return self.url(f"/truck/donuts/{i}", f), select(st.donut(i), f), [f"/truck/donuts/{i}/{x}" for x in sel]

    def truck_orders(self):
        return self.coll_read("/truck/orders")

    def order(self):
        st = self.st
        if not st.orders:
            return None
        i = self.rng.choice(list(st.orders))
        f = pick_fields(self.rng, ["donutId", "quantity"])
        sel = [x for x in (f or ["donutId", "quantity"]) if x != "id"]
        return self.url(f"/truck/orders/{i}", f), select(st.order(i), f), [f"/truck/orders/{i}/{x}" for x in sel]

    def order_count(self):
        f = ["orderCount"] if self.rng.random() < 0.2 else None
        return self.url("/truck/orderCount", f), {"orderCount": len(self.st.orders)}, ["/truck/orderCount"]

    def account(self):
        f = ["userName"] if self.rng.random() < 0.2 else None
        return self.url("/account", f), {"userName": self.st.user}, ["/account/userName"]

    def grid(self):
        st = self.st
        f = pick_fields(self.rng, list(DOT_FIELDS))
        sel = [x for x in (f or DOT_FIELDS) if x != "id"]
        body = {"rows": [[select(st.dot(i), f) for i in row] for row in st.rows]}
        paths = ["/grid/rows"] + [f"/grid/dots/{i}/{x}" for row in st.rows for i in row for x in sel]
        return self.url("/grid", f), body, paths

    def grid_row(self):
        st = self.st
        r = self.rng.randrange(len(st.rows))
        f = pick_fields(self.rng, list(DOT_FIELDS))
        sel = [x for x in (f or DOT_FIELDS) if x != "id"]
        body = {"row": r, "dots": [select(st.dot(i), f) for i in st.rows[r]]}
        paths = ["/grid/rows"] + [f"/grid/dots/{i}/{x}" for i in st.rows[r] for x in sel]
        return self.url(f"/grid/rows/{r}", f), body, paths

    def dot(self):
        st = self.st
        i = self.rng.choice(list(st.dots))
        f = pick_fields(self.rng, list(DOT_FIELDS))
        sel = [x for x in (f or DOT_FIELDS) if x != "id"]
        return self.url(f"/grid/dots/{i}", f), select(st.dot(i), f), [f"/grid/dots/{i}/{x}" for x in sel]

    def dot_at(self):
        st = self.st
        r = self.rng.randrange(len(st.rows))
        c = self.rng.randrange(len(st.rows[r]))
        i = st.rows[r][c]
        f = pick_fields(self.rng, list(DOT_FIELDS))
        sel = [x for x in (f or DOT_FIELDS) if x != "id"]
        return self.url(f"/grid/rows/{r}/dots/{c}", f), select(st.dot(i), f), [f"/grid/dots/{i}/{x}" for x in sel]

    def posts(self):
        return self.coll_read("/posts")

    def post(self):
        st = self.st
        if not st.posts:
            return None
        i = self.rng.choice(list(st.posts))
        f = pick_fields(self.rng, ["imageURL", "height"])
        sel = [x for x in (f or ["imageURL", "height"]) if x != "id"]
        return self.url(f"/posts/{i}", f), select(st.post(i), f), [f"/posts/{i}/{x}" for x in sel]

    def staggered(self):
        st = self.st
        n = self.rng.randint(1, 5)
        layout = self.rng.choice([None, "roundRobin", "balanced"])
        f = pick_fields(self.rng, ["imageURL", "height"])
        sel = [x for x in (f or ["imageURL", "height"]) if x != "id"]
        cols = [[] for _ in range(n)]
        sums = [0.0] * n
        for k, i in enumerate(st.posts):
            if layout == "balanced":
                j = min(range(n), key=lambda x: (sums[x], x))
            else:
                j = k % n
            cols[j].append(select(st.post(i), f))
            sums[j] += st.posts[i]["height"]
        extra = [] if (n == 2 and self.rng.random() < 0.3) else [f"columns={n}"]
        if extra == [] and n != 2:
            extra = [f"columns={n}"]
        if layout:
            extra.append(f"layout={layout}")
        # the whole of /posts, one shape; its fields count only as shown (no newest)
        return self.url("/posts/staggered", f, extra), {"columns": cols}, [], [self.page("/posts", f, newer=False)]

    def jobs(self):
        return self.coll_read("/jobs")

    def job(self):
        st = self.st
        if not st.jobs:
            return None
        i = self.rng.choice(list(st.jobs))
        f = pick_fields(self.rng, ["progress", "isComplete"])
        sel = [x for x in (f or ["progress", "isComplete"]) if x != "id"]
        return self.url(f"/jobs/{i}", f), select(st.job(i), f), [f"/jobs/{i}/{x}" for x in sel]

    def games(self):
        return self.coll_read("/games")

    def game(self):
        st = self.st
        if not st.games:
            return None
        g = self.rng.choice(list(st.games))
        f = pick_fields(self.rng, ["cards", "isOver"])
        sel = [x for x in (f or ["cards", "isOver"]) if x != "id"]
        paths = [f"/games/{g}/isOver"] if "isOver" in sel else []
        pages = [self.page(f"/games/{g}/cards", None)] if "cards" in sel else []
        return self.url(f"/games/{g}", f), select(st.game(g), f), paths, pages

    def card(self):
        st = self.st
        if not st.games:
            return None
        g = self.rng.choice(list(st.games))
        card = self.rng.choice(st.games[g]["cards"])
        f = pick_fields(self.rng, list(CARD_FIELDS))
        sel = [x for x in (f or CARD_FIELDS) if x != "id"]
        return (self.url(f"/games/{g}/cards/{card['id']}", f), select(dict(card), f),
                [f"/games/{g}/cards/{card['id']}/{x}" for x in sel])

    def everything(self):
        """The reads the all-seeing observer makes: every resource, whole."""
        st = self.st
        whole = lambda c: self.page(c, None)
        return [
            ("/truck", st.truck(), ["/truck/name", "/truck/orderCount"], [whole("/truck/donuts"), whole("/truck/orders")]),
            ("/account", {"userName": st.user}, ["/account/userName"], []),
            ("/grid", st.grid(), ["/grid/rows"] + [f"/grid/dots/{i}/{x}" for i in st.dots for x in DOT_FIELDS], []),
            ("/posts", {"posts": [st.post(i) for i in st.posts]}, [], [whole("/posts")]),
            ("/jobs", {"jobs": [st.job(i) for i in st.jobs]}, [], [whole("/jobs")]),
            ("/games", {"games": [st.game(i) for i in st.games]}, [], [whole("/games")]),
        ]


COLLS = {
    "/truck/donuts": ("donuts", DONUT_FIELDS),
    "/truck/orders": ("orders", ("donutId", "quantity")),
    "/posts": ("posts", ("imageURL", "height")),
    "/jobs": ("jobs", ("progress", "isComplete")),
    "/games": ("games", ("cards", "isOver")),
}
LINK = re.compile(r'<([^>]*)>\s*;\s*rel="next"(?:\s*;\s*title="([^"]*)")?')


def parse_links(value):
    """{title or None: (path, {param: value})} of a Link header's rel="next" values."""
    out = {}
    for target, title in LINK.findall(value or ""):
        u = urllib.parse.urlsplit(target)
        out[title or None] = (u.path, dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True)), target)
    return out


class PageRead:
    """A read of a collection as the model predicts it: the whole of it or a
    page (`limit`, `after` = (position, creation index), `order`), the
    elements it shows and whether more follow (a Link); once answered, the
    shape it makes its observer read."""

    def __init__(self, reads, coll, fields, limit=None, after=None, order=None, prefix=None, newer=True):
        self.coll, self.fields, self.limit, self.after, self.order = coll, fields, limit, after, order
        self.prefix = prefix       # "orders." for the truck's orders; None on the collection's own resource
        self.newer = newer
        self.paged = limit is not None or after is not None or order is not None
        self.desc = order == "desc"
        log = reads.c.log
        d = reads.elems(coll)
        for i in d:
            if (coll, i) not in log.idx:
                log.register(coll, i, 0)
        ids = list(d)
        self.newest = log.idx[(coll, ids[-1])] if ids else -1
        if self.desc:
            ids.reverse()
        if after is not None:
            a = after[1]
            ids = [i for i in ids if (log.idx[(coll, i)] < a if self.desc else log.idx[(coll, i)] > a)]
        self.shown = ids[:limit] if limit else ids
        self.more = len(ids) > len(self.shown)
        self.last_idx = log.idx[(coll, self.shown[-1])] if self.shown else None

    def query(self):
        p = self.prefix or ""
        q = []
        if self.limit is not None:
            q.append(f"{p}limit={self.limit}")
        if self.after is not None:
            q.append(f"{p}after={self.after[0]}")
        if self.order is not None:
            q.append(f"{p}order={self.order}")
        return q

    def shape(self, frm, link_pos):
        if not self.paged:
            lo, hi, pf, pt = -1, INF, None, None
        elif not self.desc:
            lo = self.after[1] + 1 if self.after else -1
            pf = self.after[0] + 1 if self.after else None
            hi, pt = (self.last_idx, link_pos) if self.more else (INF, None)
        else:
            hi = self.after[1] - 1 if self.after else INF
            pt = self.after[0] - 1 if self.after else None
            lo, pf = (self.last_idx, link_pos) if self.more else (-1, None)
        return MShape(self.coll, self.fields, lo, hi, frm, self.newer, pf, pt, self.newest)

    def describe(self):
        return f"{self.coll} {'page ' + ' '.join(self.query()) if self.paged else 'whole'}{' fields ' + ','.join(self.fields) if self.fields else ''}"


# ---------------------------------------------------------------------------
# Streams (Server-Sent Events) over a raw socket


def sr_cursor(events):
    """The cursor of a stream's last event, for failure reports."""
    for ev in reversed(events):
        try:
            return json.loads(ev["data"]).get("cursor")
        except (ValueError, AttributeError):
            continue
    return None


class StreamReader(threading.Thread):
    """Reads one SSE answer; collects (id, event, data, retry) tuples."""

    def __init__(self, port, path, headers):
        super().__init__(daemon=True)
        self.port, self.path, self.headers = port, path, headers
        self.events = []
        self.status = None
        self.content_type = None
        self.error = None
        self.ended = False
        self.stop_flag = False
        self.sock = None
        self.opened = threading.Event()

    def run(self):
        try:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            req = f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            for k, v in self.headers.items():
                req += f"{k}: {v}\r\n"
            self.sock.sendall((req + "\r\n").encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionLost("stream closed before its headers")
                buf += chunk
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            self.status = int(lines[0].split()[1])
            hdrs = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                hdrs[k.strip().lower()] = v.strip()
            self.content_type = hdrs.get("content-type", "")
            self.opened.set()
            chunked = "chunked" in hdrs.get("transfer-encoding", "").lower()
            if self.status != 200:
                return
            self.sock.settimeout(0.2)
            raw = buf
            text = ""
            while not self.stop_flag:
                # decode what we have
                if chunked:
                    while True:
                        j = raw.find(b"\r\n")
                        if j < 0:
                            break
                        size = int(raw[:j].split(b";")[0], 16)
                        if size == 0:
                            self.ended = True
                            break
                        if len(raw) < j + 2 + size + 2:
                            break
                        text += raw[j + 2:j + 2 + size].decode("utf-8")
                        raw = raw[j + 2 + size + 2:]
                else:
                    text += raw.decode("utf-8")
                    raw = b""
                while "\n\n" in text:
                    block, text = text.split("\n\n", 1)
                    self.parse(block)
                if self.ended:
                    break
                try:
                    more = self.sock.recv(65536)
                except socket.timeout:
                    continue
                if not more:
                    self.ended = True
                    break
                raw += more
        except Exception as e:   # noqa: BLE001
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self.opened.set()
            try:
                if self.sock:
                    self.sock.close()
            except OSError:
                pass

    def parse(self, block):
        ev = {"id": None, "event": None, "data": [], "retry": None}
        anything = False
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            k, _, v = line.partition(":")
            v = v[1:] if v.startswith(" ") else v
            anything = True
            if k == "data":
                ev["data"].append(v)
            elif k in ("id", "event", "retry"):
                ev[k] = v
        if anything:
            ev["at"] = time.monotonic()
            ev["data"] = "\n".join(ev["data"])
            self.events.append(ev)

    def close(self):
        self.stop_flag = True
        self.join(timeout=3)


# ---------------------------------------------------------------------------
# The checker for one client at a time (sequential and cluster modes)


class Checker:
    def __init__(self, args, report, instances):
        self.args = args
        self.report = report
        self.rng = random.Random(args.seed)
        self.instances = instances
        self.clients = [Client(i.port) for i in instances]
        self.st = State()
        self.log = Log()
        self.observers = []          # live Observer objects
        self.deleted = []            # deleted observer ids
        self.all_ids = 0
        self.etags = {}              # url -> (etag, body json)
        self.pool = collections.defaultdict(dict)        # collection -> {position: element id}: cursors the Links gave
        self.positions = {}                              # (collection, id) -> position
        self.pos_sorted = collections.defaultdict(list)  # collection -> [(creation index, position)]
        self.writes = Writes(self)
        self.reads = Reads(self)
        self.seer = None
        self.stats = collections.Counter()
        self.longpoll_budget = args.longpolls
        self.stream_budget = args.streams

    # -- transport
    def pick(self):
        k = self.rng.randrange(len(self.instances)) if len(self.instances) > 1 else 0
        return k

    def req(self, method, path, body=None, raw=None, headers=None, k=None, timeout=None):
        if k is None:
            k = self.pick()
        inst = self.instances[k]
        if self.clients[k].port != inst.port:
            self.clients[k].close()
            self.clients[k] = Client(inst.port)
        try:
            return self.clients[k].request(method, path, body=body, raw=raw, headers=headers, timeout=timeout)
        except ConnectionLost as e:
            alive = inst.alive()
            self.report.fail("crash", f"{inst.name}: {e}; the process is {'alive' if alive else 'gone: see ' + inst.log_path}")
            if not alive:
                inst.start()
            raise

    def current_etag(self, url):
        status, h, _ = self.req("GET", url)
        return h.get("etag") if status == 200 else None

    # -- the log
    def learn(self, txns, context):
        """Reads from the all-seeing observer what the last write committed and
        checks it against the model's prediction; appends it to the log."""
        want = [c for t in txns for c in t]
        got = []
        since = self.log.newest
        # One instance has committed before it answers; another instance may
        # learn of the commit a moment later, so in cluster mode a short
        # long-poll waits for the rest.
        deadline = time.monotonic() + (1.5 if len(self.instances) > 1 else 0)
        timeout = 0
        while True:
            status, _, ans = self.req("GET", f"/observers/{self.seer.id}/changes?since={since}&timeout={timeout}&limit=1000")
            if status != 200:
                self.report.fail("wrong-status", f"all-seeing observer's poll since={since} answered {status} {short(ans)}")
                break
            got += ans["changes"]
            since = max(since, ans["cursor"])
            if len(got) >= len(want) or time.monotonic() >= deadline:
                break
            timeout = 0.5
        ok = len(got) == len(want) and all(
            g.get("path") == w[0] and g.get("op") == w[1] and jdump(g.get("old")) == jdump(w[2]) and jdump(g.get("new")) == jdump(w[3])
            for g, w in zip(got, want))
        seqs = [g.get("seq") for g in got]
        if ok:
            k = 0
            for t in txns:
                tid = self.log.new_txn()
                first = None
                for (path, op, old, new) in t:
                    s = got[k]["seq"]
                    if first is not None and s != prev + 1:
                        self.report.fail("split-transaction", f"{context}: the changes of one transaction have seqs {[g['seq'] for g in got]}, not consecutive")
                    first = s if first is None else first
                    prev = s
                    self.log.append(Entry(s, path, op, old, new, tid))
                    k += 1
            return
        # Something differs: the log is checked against a second source, the
        # newest seq the server reports, to tell a lost write from a change the
        # all-seeing observer was not told.
        status, _, hz = self.req("GET", "/healthz")
        newest = hz.get("seq", -1) if status == 200 and isinstance(hz, dict) else -1
        before = self.log.newest
        committed = newest - before
        wl = [f"{w[1]} {w[0]} {short(w[2], 80)} -> {short(w[3], 80)}" for w in want]
        gl = [f"#{g.get('seq')} {g.get('op')} {g.get('path')} {short(g.get('old'), 80)} -> {short(g.get('new'), 80)}" for g in got]
        if committed == len(want):
            missing = [w for w in want if not any(g.get("path") == w[0] and g.get("op") == w[1] and jdump(g.get("new")) == jdump(w[3]) for g in got)]
            cat = "missed" if len(got) < len(want) else "wrong-value"
            self.report.fail(cat, f"all-seeing observer {self.seer.id} (reads every resource): after {context} the server committed "
                                  f"{committed} change(s) as predicted but the observer was told {gl}; predicted {wl}",
                             n=max(1, len(missing)) if cat == "missed" else 1)
            k = 0
            for t in txns:
                tid = self.log.new_txn()
                for (path, op, old, new) in t:
                    k += 1
                    self.log.append(Entry(before + k, path, op, old, new, tid))
        else:
            cat = "lost-write" if committed < len(want) else "spurious"
            self.report.fail(cat, f"after {context} the server's newest seq moved {before} -> {newest} ({committed} change(s)); "
                                  f"predicted {len(want)}: {wl}; the all-seeing observer was told {gl}")
            tid = self.log.new_txn()
            for g in got:
                if isinstance(g.get("seq"), int) and g["seq"] > self.log.newest:
                    self.log.append(Entry(g["seq"], g.get("path"), g.get("op"), g.get("old"), g.get("new"), tid))
            self.resync(f"after {context}")

    def resync(self, why):
        """Adopts the server's state after a failure, so one fault is counted once."""
        bodies = {}
        for url in ("/truck", "/account", "/grid", "/posts", "/jobs", "/games"):
            status, _, b = self.req("GET", url)
            if status != 200:
                return
            bodies[url] = b
        self.st.load(bodies["/truck"], bodies["/account"], bodies["/grid"], bodies["/posts"], bodies["/jobs"], bodies["/games"])
        self.log.seed(self.st)
        print(f"note: model state re-read from the server {why}", flush=True)

    # -- writes
    def do_write(self, plan):
        self.stats["write:" + plan.name] += 1
        try:
            status, h, body = self.req(plan.method, plan.path, body=plan.body, raw=plan.raw, headers=plan.headers)
        except ConnectionLost:
            return None
        txns = []
        if status not in plan.status:
            self.report.fail("wrong-status", f"{plan.describe()} answered {status} {short(body)}; expected {plan.status}")
            if 200 <= status < 300 or any(200 <= s < 300 for s in plan.status):
                self.learn([], plan.describe())
                self.resync(f"after {plan.describe()}")
                return status
        elif 200 <= status < 300:
            txns = plan.finish(status, body)
        else:
            if not (isinstance(body, dict) and body.get("status") == status and "application/problem+json" in h.get("content-type", "")):
                self.report.fail("wrong-status", f"{plan.describe()} answered {status} without a problem+json body: {short(body)}")
        self.learn(txns, plan.describe())
        return status

    # -- observers
    def create_observer(self, k=None):
        status, h, body = self.req("POST", "/observers", body={"ttlSeconds": 86400} if self.rng.random() < 0.9 else {"ttlSeconds": 86399}, k=k)
        if status != 201 or not isinstance(body, dict):
            self.report.fail("wrong-status", f"POST /observers answered {status} {short(body)}")
            return None
        if body.get("cursor") != self.log.newest or body.get("reads") != []:
            self.report.fail("wrong-cursor", f"POST /observers answered {short(body)}; the newest seq is {self.log.newest}")
        o = Observer(body["id"], body.get("cursor", self.log.newest), time.monotonic())
        o.ins_ptr = len(self.log.inserts)
        self.all_ids += 1
        return o

    def obs_reads_desc(self, obs, paths=None, limit=8, entry=None):
        if paths is None:
            items = sorted(obs.reads.items())[:limit]
        else:
            items = [(p, obs.reads.get(p)) for p in paths]
        more = "" if paths is not None or len(obs.reads) <= limit else f" (+{len(obs.reads) - limit} more)"
        colls = {p[0] for p in entry.places} if entry is not None else set(obs.shapes_by_coll)
        shapes = [f"{sh.describe()}@{sh.frm}" for c in sorted(colls) for sh in obs.shapes_by_coll.get(c, ())][:limit]
        where = ""
        if entry is not None and entry.places:
            where = " (lands at " + ", ".join(f"{c}#{n}{'/' + f if f else ''} made@{m}" for c, n, f, m in entry.places) + ")"
        return "{" + ", ".join(f"{p}@{f}" for p, f in items) + "}" + more + (f" and shapes {shapes}" if shapes else "") + where

    def do_read(self, obs):
        url, body, paths, pages = self.reads.choose()
        nxt = self.read_one(obs, url, body, paths, pages)
        # Follow the Link: the next page, as the Link names it (its cursor
        # is the position of the element that ended the page).
        hops = 0
        while nxt is not None and hops < 4 and self.rng.random() < 0.55:
            hops += 1
            pr, target, link_pos = nxt
            params = parse_links(f"<{target}>; rel=\"next\"")[None][1]
            fields = params["fields"].split(",") if "fields" in params else None
            after = (link_pos, pr.last_idx)
            npr = PageRead(self.reads, pr.coll, fields, pr.limit, after, "desc" if pr.desc else None)
            name = COLLS[pr.coll][0]
            b = {name: [select(self.reads.rep(pr.coll, i), fields) for i in npr.shown]}
            self.stats["page-followed"] += 1
            nxt = self.read_one(obs if self.rng.random() < 0.9 else None, target, b, [], [npr])

    def check_links(self, desc, h, pages):
        """Checks the Link header against the pages the model predicts;
        learns the positions it gives. Returns {PageRead: (target, position)}."""
        links = parse_links(h.get("link"))
        out = {}
        titles = set()
        for pr in pages:
            title = pr.prefix[:-1] if pr.prefix else None
            titles.add(title)
            got = links.get(title)
            if not pr.more:
                if got is not None:
                    self.report.fail("wrong-state", f"{desc}: Link {got[2]!r} ({pr.describe()}), but no more elements follow the "
                                                    f"{len(pr.shown)} shown in the model")
                continue
            if got is None:
                self.report.fail("wrong-state", f"{desc}: no Link rel=\"next\"{' title=' + title if title else ''} "
                                                f"({pr.describe()}), but more elements follow the {len(pr.shown)} shown in the model")
                continue
            path, q, target = got
            a = q.get("after", "")
            want = {"limit": str(pr.limit)}
            if pr.desc:
                want["order"] = "desc"
            ok = path == pr.coll and a.isdigit() and all(q.get(k) == v for k, v in want.items()) \
                and set(q) <= {"limit", "order", "after", "fields"} and ("order" not in q or pr.desc)
            if pr.prefix is None and pr.fields is not None:
                ok = ok and set((q.get("fields") or "").split(",")) == set(pr.fields)
            elif "fields" in q:
                ok = False
            if not ok:
                self.report.fail("wrong-state", f"{desc}: Link {target!r}; expected the next page of {pr.describe()}")
                continue
            pos = int(a)
            self.learn_position(desc, pr.coll, pr.shown[-1], pos)
            out[pr] = (target, pos)
        for t in links:
            if t not in titles:
                self.report.fail("wrong-state", f"{desc}: Link {links[t][2]!r}, which names no page the read asked for")
        return out

    def learn_position(self, desc, coll, i, pos):
        """Adds a cursor to the pool; positions must grow with creation order."""
        import bisect
        k = (coll, i)
        known = self.positions.get(k)
        if known is not None:
            if known != pos:
                self.report.fail("wrong-state", f"{desc}: the Link gives position {pos} to {coll}/{i}, earlier {known}")
            return
        n = self.log.idx[k]
        lst = self.pos_sorted[coll]
        j = bisect.bisect_left(lst, (n, pos))
        if (j > 0 and lst[j - 1][1] >= pos) or (j < len(lst) and lst[j][1] <= pos):
            self.report.fail("wrong-state", f"{desc}: the Link gives position {pos} to {coll}/{i} (made #{n}), out of creation "
                                            f"order with {lst[max(0, j - 1):j + 1]}")
        lst.insert(j, (n, pos))
        self.positions[k] = pos
        self.pool[coll][pos] = i

    def read_one(self, obs, url, body, paths, pages):
        method = "GET"
        headers = {}
        full_url = url
        if obs is not None:
            if self.rng.random() < 0.7:
                headers["Observer"] = obs.id
            else:
                full_url = url + ("&" if "?" in url else "?") + "observer=" + obs.id
        r = self.rng.random()
        conditional = None
        if r < 0.07:
            method = "HEAD"
        elif r < 0.2 and url in self.etags:
            tag, seen = self.etags[url]
            headers["If-None-Match"] = tag
            conditional = seen == jdump(body)
        self.stats["read"] += 1
        if any(pr.paged for pr in pages):
            self.stats["page"] += 1
        status, h, got = self.req(method, full_url, headers=headers)
        desc = f"{method} {full_url}" + "".join(f" -H '{k}: {v}'" for k, v in headers.items())
        if obs is not None:
            obs.note(desc)
        want_status = 304 if conditional else 200
        if status != want_status:
            self.report.fail("wrong-status", f"{desc} answered {status} {short(got)}; expected {want_status}")
            return None
        cur = h.get("observation-cursor")
        if cur is None or not cur.isdigit() or int(cur) != self.log.newest:
            self.report.fail("wrong-cursor", f"{desc}: Observation-Cursor {cur}, but the newest acknowledged seq is {self.log.newest}")
            return None
        cur = int(cur)
        if method == "GET" and status == 200:
            if jdump(got) != jdump(body):
                self.report.fail("wrong-state", f"{desc} answered {short(got, 500)}; the model says {short(body, 500)}")
                self.resync("after a read differed")
                return None
            if h.get("etag"):
                self.etags[url] = (h["etag"], jdump(body))
        links = self.check_links(desc, h, pages) if method == "GET" else {}
        if obs is not None and method == "GET":
            for p in paths:
                obs.track(p, cur)
            for pr in pages:
                link = links.get(pr)
                obs.track_shape(pr.shape(cur, link[1] if link else None))
                self.stats["shape"] += 1
            if cur > 0:
                obs.cursors.append(cur)
        for pr in pages:
            if pr in links:
                return pr, links[pr][0], links[pr][1]
        return None

    def do_read_unknown_observer(self):
        url = self.reads.choose()[0]
        oid = self.rng.choice(self.deleted) if self.deleted and self.rng.random() < 0.5 else "00000000-0000-7000-8000-000000000000"
        status, _, body = self.req(self.rng.choice(["GET", "HEAD"]), url, headers={"Observer": oid})
        if status != 404:
            self.report.fail("wrong-status", f"GET {url} -H 'Observer: {oid}' (no such observer) answered {status} {short(body)}")

    def do_bad_fields(self):
        url = self.rng.choice(["/truck?fields=name,colour", "/truck/donuts?fields=flavour", "/grid?fields=color",
                               "/posts?fields=width", "/jobs?fields=name", "/games?fields=score", "/posts/staggered?columns=13",
                               "/posts/staggered?columns=0", "/posts/staggered?layout=masonry"])
        if self.rng.random() < 0.6:
            # pages: limit 1…1000, after a whole number ≥ 0, order asc or desc
            bad = self.rng.choice(["limit=0", "limit=1001", "limit=x", "limit=-3", "limit=", "after=-1", "after=x", "after=1.5",
                                   "order=up", "order=DESC", "order="])
            base = self.rng.choice(list(COLLS) + ["/truck"])
            if base == "/truck":
                bad = self.rng.choice(["orders.", "donuts."]) + bad
            url = base + "?" + bad + ("" if base == "/truck" or bad.startswith("limit") else self.rng.choice(["", "&limit=2", "&fields=id"]))
        status, _, body = self.req("GET", url)
        if status != 400:
            self.report.fail("wrong-status", f"GET {url} answered {status} {short(body)}; expected 400")

    # -- polls
    def check_answer(self, obs, desc, since, limit, co, ans, newest_before, implicit):
        """Compares one poll answer with the model; returns the answer's cursor."""
        changes = ans.get("changes")
        cursor = ans.get("cursor")
        if not isinstance(changes, list) or not isinstance(cursor, int):
            self.report.fail("wrong-status", f"{desc}: malformed answer {short(ans)}")
            return None
        seqs = [c.get("seq") for c in changes]
        for a, b in zip(seqs, seqs[1:]):
            if not (isinstance(a, int) and isinstance(b, int) and b > a):
                self.report.fail("out-of-order" if (isinstance(a, int) and isinstance(b, int) and b < a) else "repeated",
                                 f"observer {obs.id}: {desc} answered seqs {seqs[:40]} not strictly increasing")
                break
        if seqs and isinstance(seqs[-1], int) and cursor < seqs[-1]:
            self.report.fail("wrong-cursor", f"observer {obs.id}: {desc} answered cursor {cursor} below its last change {seqs[-1]}")
        if cursor > self.log.newest:
            self.report.fail("wrong-cursor", f"observer {obs.id}: {desc} answered cursor {cursor} past the newest seq {self.log.newest}")
            return cursor
        advance_implied(obs, self.log, cursor)
        raw = delivered(obs, self.log, since, cursor)
        expected = coalesce(raw) if co else [e.json() for e in raw]
        self.stats["delivered"] += len(expected)
        exp_by = {}
        for e in expected:
            exp_by[(e["seq"], e["path"]) if co else e["seq"]] = e
        matched = set()
        seen = set()
        for c in changes:
            s = c.get("seq")
            key = (s, c.get("path")) if co else s
            if key in seen:
                self.report.fail("repeated", f"observer {obs.id}: {desc} answered {short(c)} twice")
                continue
            seen.add(key)
            e = exp_by.get(key)
            if e is not None:
                matched.add(key)
                if jdump({k: c.get(k) for k in ("path", "op", "old", "new")}) != jdump({k: e.get(k) for k in ("path", "op", "old", "new")}):
                    self.report.fail("wrong-value", f"observer {obs.id}: {desc} answered {short(c)}; the log has {short(e)}")
                continue
            le = self.log.by_seq.get(s)
            if le is not None and isinstance(s, int) and s <= since and receives(obs, le):
                self.report.fail("repeated", f"observer {obs.id} reads {self.obs_reads_desc(obs, [le.path])}: {desc} "
                                             f"(since {since}{', implicit' if implicit else ''}) answered again {short(c)}, which is at or before {since}; "
                                             f"before: {list(obs.trail)}")
            elif le is None:
                self.report.fail("spurious", f"observer {obs.id}: {desc} answered {short(c)}, a seq no write committed")
            else:
                why = "forgotten or never read" if not receives(obs, le) else "outside (since, cursor]"
                self.report.fail("spurious", f"observer {obs.id} reads {self.obs_reads_desc(obs, [le.path] + ([le.elem] if le.elem else []), entry=le)}: "
                                             f"{desc} answered {short(c)} ({why})")
        for key, e in exp_by.items():
            if key not in matched:
                self.report.fail("missed", f"observer {obs.id} reads {self.obs_reads_desc(obs, [e['path']], entry=self.log.by_seq.get(e['seq']))}: {desc} "
                                           f"(since {since}, answered cursor {cursor}) lacks {short(e)}; before: {list(obs.trail)}")
        if raw and changes:
            last = self.log.by_seq.get(seqs[-1]) if isinstance(seqs[-1], int) else None
            if last is not None and self.log.txn_end.get(last.txn, 0) > cursor:
                self.report.fail("split-transaction", f"observer {obs.id}: {desc} ended at cursor {cursor} inside the transaction "
                                                      f"that runs to seq {self.log.txn_end[last.txn]}")
        if len(raw) < limit and cursor < newest_before:
            self.report.fail("wrong-cursor", f"observer {obs.id}: {desc} answered {len(raw)} change(s) (< limit {limit}) "
                                             f"but cursor {cursor} before the newest seq {newest_before}")
        return cursor

    def poll(self, obs, since=None, limit=None, co=False, timeout=0, k=None, prefer=False, check=True):
        q = []
        if since is not None:
            q.append(f"since={since}")
        if prefer:
            headers = {"Prefer": f"wait={timeout}"}
        else:
            headers = {}
            q.append(f"timeout={timeout}")
        if limit is not None:
            q.append(f"limit={limit}")
        if co:
            q.append("coalesce=true")
        url = f"/observers/{obs.id}/changes" + ("?" + "&".join(q) if q else "")
        eff_since = since if since is not None else obs.implicit
        newest_before = self.log.newest
        self.stats["poll"] += 1
        status, h, ans = self.req("GET", url, headers=headers, k=k, timeout=timeout + 10)
        desc = f"GET {url}" + (f" -H 'Prefer: wait={timeout}'" if prefer else "")
        if check:
            obs.note(f"{desc} via {self.instances[k].name if k is not None else '?'}")
        if status != 200:
            self.report.fail("wrong-status", f"observer {obs.id}: {desc} answered {status} {short(ans)}")
            return None
        if prefer and h.get("preference-applied") != f"wait={timeout}":
            self.report.fail("wrong-status", f"{desc}: Preference-Applied is {h.get('preference-applied')!r}")
        cursor = self.check_answer(obs, desc, eff_since, limit or 100, co, ans, newest_before, since is None) if check else ans.get("cursor")
        if cursor is not None:
            obs.answered(cursor)
        return ans

    def catch_up(self, obs):
        """Polls the observer (explicit `since`, limit 1000) until its cursor
        is the newest seq, so that a long-poll parked next has nothing to
        answer at once. One page is not enough: an observer that reads much
        and has not polled for a while has more than 1000 changes waiting,
        and the page then ends before the newest seq (as it should)."""
        since = obs.implicit if obs.implicit is not None else obs.cursors[-1]
        newest = self.log.newest
        while True:
            ans = self.poll(obs, since, 1000)
            if ans is None:
                return None
            cursor = ans.get("cursor")
            if not isinstance(cursor, int) or cursor >= newest or cursor <= since:
                return ans
            since = cursor

    def do_poll(self, obs):
        r = self.rng.random()
        limit = self.rng.choice([None, None, 1, 2, 3, 5, 1000]) if self.rng.random() < 0.35 else None
        co = self.rng.random() < 0.15
        if r < 0.5 and obs.implicit is not None:
            self.poll(obs, None, limit, co, prefer=self.rng.random() < 0.1)
        elif r < 0.75:
            since = obs.implicit if obs.implicit is not None else obs.cursors[-1]
            self.poll(obs, since, limit, co)
        else:
            choices = list(obs.cursors) + [0, obs.creation, self.rng.randint(0, self.log.newest)]
            self.stats["replay"] += 1
            self.poll(obs, self.rng.choice(choices), limit, co)

    def do_bad_poll(self, obs):
        base = f"/observers/{obs.id}/changes"
        q = self.rng.choice([f"since={self.log.newest + self.rng.randint(1, 1000)}", "since=-1", "since=abc", "timeout=90",
                             "timeout=-1", "limit=0", "limit=1001", "coalesce=1"])
        status, _, body = self.req("GET", f"{base}?{q}&timeout=0" if "timeout" not in q else f"{base}?{q}")
        if status != 400:
            self.report.fail("wrong-status", f"GET {base}?{q} answered {status} {short(body)}; expected 400")
            if status == 200 and isinstance(body, dict):
                obs.implicit = None

    def do_inspect(self, obs, k=None, allowed_cursors=None):
        status, h, body = self.req("GET", f"/observers/{obs.id}", k=k)
        obs.note(f"GET /observers/{obs.id}: cursor {body.get('cursor') if isinstance(body, dict) else status}")
        if status != 200 or not isinstance(body, dict):
            self.report.fail("wrong-status", f"GET /observers/{obs.id} answered {status} {short(body)}")
            return None
        advance_implied(obs, self.log)
        self.check_listing(obs, body)
        cur = body.get("cursor")
        if allowed_cursors is not None:
            if cur not in allowed_cursors:
                self.report.fail("wrong-cursor", f"observer {obs.id}: after kill -9 its cursor is {cur}, allowed {sorted(allowed_cursors)[-6:]}; "
                                                 f"before: {list(obs.trail)[:-1]}")
            if isinstance(cur, int) and cur != obs.implicit:
                obs.answered(cur)
        elif obs.implicit is not None and cur != obs.implicit:
            self.report.fail("wrong-cursor", f"observer {obs.id}: GET /observers/{obs.id} shows cursor {cur}; "
                                             f"the cursor last answered to it is {obs.implicit}; before: {list(obs.trail)[:-1]}")
            if isinstance(cur, int):
                obs.answered(cur)
        elif obs.implicit is None and isinstance(cur, int):
            obs.answered(cur)
        return body

    FIELD_NAMES = {"/truck/donuts": DONUT_FIELDS, "/truck/orders": ("donutId", "quantity"),
                   "/posts": ("imageURL", "height"), "/jobs": ("progress", "isComplete")}

    def check_listing(self, obs, body):
        """`GET /observers/{id}`: `reads` lists every property key read, each
        shape's collection and what it covers now (only paths inside a
        shape's collection may be listed besides the keys); `shapes` lists
        each shape with its fields and window in positions."""
        got = body.get("reads") or []
        gs = set(got)
        want = set(obs.reads)
        colls = {sh.coll for sh in obs.shapes.values()}
        missing = sorted((want | colls) - gs)
        extra = sorted(p for p in gs - want - colls if not any(p.startswith(c + "/") for c in colls))
        # What the shapes of top-level collections cover now: each shown
        # field of each element in the window (every field of one made after
        # the read), while the listing is under its bound.
        covered = []
        if sum(len(self.reads.elems(c)) for c in colls if c in self.FIELD_NAMES) * 4 < 5000:
            log = self.log
            for sh in obs.shapes.values():
                names = self.FIELD_NAMES.get(sh.coll)
                if names is None:
                    continue
                for i in self.reads.elems(sh.coll):
                    n = log.idx.get((sh.coll, i))
                    if n is None or not (sh.lo <= n <= sh.hi):
                        continue
                    made = log.made[(sh.coll, i)]
                    for f in names:
                        if sh.fields is None or f in sh.fields or (sh.newer and made > sh.frm):
                            covered.append(f"{sh.coll}/{i}/{f}")
            missing += sorted(set(covered) - gs)
        if missing or extra or got != sorted(got):
            self.report.fail("wrong-reads", f"observer {obs.id}: GET /observers/{obs.id} lists {len(got)} reads; "
                                            f"missing {missing[:6]}{' (+%d)' % (len(missing) - 6) if len(missing) > 6 else ''}, "
                                            f"extra {extra[:6]}" + (" (not sorted)" if got != sorted(got) else "")
                                            + f"; shapes {[sh.describe() for sh in obs.shapes.values()][:6]}; before: {list(obs.trail)}")
            # adopt the server's keys, so one fault is counted once
            reads = {p: f for p, f in obs.reads.items() if p in gs}
            for p in extra:
                reads[p] = self.log.newest
            obs.reads = {}
            obs.elem_from = {}
            for p, f in reads.items():
                obs.track(p, f)
            for sh in obs.shapes.values():
                e = elem_prefix(sh.coll)
                if e is not None:
                    obs.elem_from[e] = min(obs.elem_from.get(e, INF), sh.frm)
        gsh = collections.Counter()
        for x in body.get("shapes") or []:
            if isinstance(x, dict):
                f = x.get("fields")
                gsh[(x.get("collection"), None if f is None else tuple(f), x.get("from"), x.get("through"))] += 1
        wsh = collections.Counter(sh.listing() for sh in obs.shapes.values())
        if gsh != wsh:
            self.report.fail("wrong-reads", f"observer {obs.id}: GET /observers/{obs.id} lists {sum(gsh.values())} shapes, the model "
                                            f"{sum(wsh.values())}: missing {list((wsh - gsh).elements())[:4]}, "
                                            f"extra {list((gsh - wsh).elements())[:4]}; before: {list(obs.trail)}")

    def do_forget(self, obs):
        obs.note("DELETE reads")
        status, _, body = self.req("DELETE", f"/observers/{obs.id}/reads")
        if status != 204:
            self.report.fail("wrong-status", f"DELETE /observers/{obs.id}/reads answered {status} {short(body)}")
            return
        advance_implied(obs, self.log)
        obs.forget()
        obs.ins_ptr = len(self.log.inserts)

    def do_delete(self, obs):
        parked = None
        if self.rng.random() < 0.3 and self.longpoll_budget > 0:
            self.longpoll_budget -= 1
            # catch up first, so that the parked poll has nothing to answer
            if self.catch_up(obs) is not None:
                parked = self.start_parked(obs, None, 10)
                time.sleep(0.15)
        t0 = time.monotonic()
        status, _, body = self.req("DELETE", f"/observers/{obs.id}")
        if status != 204:
            self.report.fail("wrong-status", f"DELETE /observers/{obs.id} answered {status} {short(body)}")
        self.observers.remove(obs)
        obs.deleted = True
        self.deleted.append(obs.id)
        if parked is not None:
            parked.join(12)
            if parked.status != 404 or parked.done_at - t0 > 1.0:
                self.report.fail("late-wake" if parked.status == 404 else "wrong-status",
                                 f"observer {obs.id}: a poll parked when it was deleted answered {parked.status} "
                                 f"after {parked.done_at - t0:.2f} s (expected 404 at once)")
        for method, url in (("GET", f"/observers/{obs.id}"), ("GET", f"/observers/{obs.id}/changes?timeout=0"),
                            ("DELETE", f"/observers/{obs.id}")):
            if self.rng.random() < 0.4:
                status, _, body = self.req(method, url)
                if status != 404:
                    self.report.fail("wrong-status", f"{method} {url} after the observer's deletion answered {status} {short(body)}")

    # -- long-polls
    class Parked(threading.Thread):
        def __init__(self, port, url, timeout):
            super().__init__(daemon=True)
            self.port, self.url, self.timeout = port, url, timeout
            self.status = None
            self.answer = None
            self.error = None
            self.started_at = None
            self.done_at = None

        def run(self):
            c = Client(self.port, timeout=self.timeout + 15)
            self.started_at = time.monotonic()
            try:
                self.status, _, self.answer = c.request("GET", self.url)
            except ConnectionLost as e:
                self.error = str(e)
            self.done_at = time.monotonic()
            c.close()

    def start_parked(self, obs, since, timeout, k=None):
        if k is None:
            k = self.pick()
        q = [f"timeout={timeout}"]
        if since is not None:
            q.insert(0, f"since={since}")
        t = Checker.Parked(self.instances[k].port, f"/observers/{obs.id}/changes?" + "&".join(q), timeout)
        obs.note(f"parked GET {t.url} via {self.instances[k].name}")
        t.start()
        return t

    def would_wake(self, obs, plan):
        advance_implied(obs, self.log)
        log = self.log
        for path, op, elem in plan.touch:
            if path == "?":
                return None
            if path in obs.reads:
                return True
            if op == "remove" and elem in obs.elem_from:
                return True
            if op == "insert":
                # the new element lands after every one made so far
                places = [(path, len(log.order[path]), None, INF)] if path in REMOVABLE else []
            elif op == "remove":
                places = log.places_of(path, "remove", {"id": elem.rsplit("/", 1)[1]})
            else:
                places = log.places_of(path, "set")
            if shape_hit(obs, places, INF) is not None:
                return True
        return False

    def do_longpoll(self, obs):
        if self.longpoll_budget <= 0:
            return self.do_poll(obs)
        self.longpoll_budget -= 1
        # catch up first, so that nothing waits for the observer already
        if self.catch_up(obs) is None:
            return
        want_wake = self.rng.random() < 0.6
        plan = None
        for _ in range(40):
            p = self.writes.valid() if self.rng.random() < 0.9 else self.writes.refused()
            w = self.would_wake(obs, p) if p.touch or p.finish else False
            if w is None:
                continue
            if w == want_wake:
                # a quiet test is worth most with a write that commits
                # something (that the observer did not read)
                if not want_wake and not p.touch and self.rng.random() < 0.8:
                    continue
                plan = p
                break
        if plan is None:
            return
        # Plans were drawn from the model without changing it; only `plan` runs.
        T = 2.0 if want_wake else 1.0
        use_since = self.rng.random() < 0.3
        since = obs.implicit
        t = self.start_parked(obs, since if use_since else None, T)
        time.sleep(0.2)
        self.stats["longpoll-" + ("wake" if want_wake else "quiet")] += 1
        newest_before = self.log.newest
        self.do_write(plan)
        t_w = time.monotonic()
        t.join(T + 15)
        if t.status != 200:
            self.report.fail("wrong-status", f"observer {obs.id}: long-poll {t.url} answered {t.status} {t.error or short(t.answer)}")
            return
        desc = f"long-poll GET {t.url} around {plan.describe()}"
        got = t.answer.get("changes") or []
        if want_wake:
            if not got:
                self.report.fail("late-wake", f"observer {obs.id} reads {self.obs_reads_desc(obs, [x[0] for x in plan.touch if x[0] in obs.reads])}: "
                                              f"{desc} answered empty after {t.done_at - t.started_at:.2f} s; the write changed what it read")
            elif t.done_at - t_w > 1.0:
                self.report.fail("late-wake", f"observer {obs.id}: {desc} answered {t.done_at - t_w:.2f} s after the write was acknowledged")
        else:
            if t.done_at - t.started_at < T - 0.15:
                self.report.fail("early-wake", f"observer {obs.id} reads {self.obs_reads_desc(obs)}: {desc} answered "
                                               f"{short(t.answer)} after {t.done_at - t.started_at:.2f} s of its {T} s timeout; "
                                               f"the write changed nothing it read")
        cursor = self.check_answer(obs, desc, since, 100, False, t.answer, newest_before if got else self.log.newest, not use_since)
        if cursor is not None:
            obs.answered(cursor)

    def do_displace(self, obs):
        if self.longpoll_budget <= 0:
            return self.do_poll(obs)
        self.longpoll_budget -= 1
        if self.catch_up(obs) is None:
            return
        first = self.start_parked(obs, None if self.rng.random() < 0.5 else obs.implicit, 5)
        time.sleep(0.2)
        self.stats["displace"] += 1
        t0 = time.monotonic()
        second = self.start_parked(obs, obs.implicit, 0.5)
        first.join(10)
        second.join(10)
        if first.status != 200 or first.answer.get("changes") != [] or first.answer.get("cursor") != obs.implicit:
            self.report.fail("wrong-status", f"observer {obs.id}: a parked poll displaced by a second one answered {first.status} "
                                             f"{short(first.answer)}; expected empty with cursor {obs.implicit}")
        elif first.done_at - t0 > 1.0:
            self.report.fail("late-wake", f"observer {obs.id}: a parked poll displaced by a second one answered {first.done_at - t0:.2f} s later")
        if second.status != 200:
            self.report.fail("wrong-status", f"observer {obs.id}: the displacing poll answered {second.status} {short(second.answer)}")
            return
        cursor = self.check_answer(obs, f"displacing GET {second.url}", obs.implicit, 100, False, second.answer, self.log.newest, False)
        if cursor is not None:
            obs.answered(cursor)

    # -- streams
    def do_stream(self, obs):
        if self.stream_budget <= 0:
            return self.do_poll(obs)
        self.stream_budget -= 1
        headers = {}
        r = self.rng.random()
        if r < 0.4 and obs.last_event_id is not None:
            start = obs.last_event_id
            headers["Last-Event-ID"] = str(start)
            path = f"/observers/{obs.id}/changes"
            how = f"Last-Event-ID {start}"
        elif r < 0.6 and obs.implicit is not None:
            start = obs.implicit
            path = f"/observers/{obs.id}/changes"
            how = f"the observer's cursor {start}"
        else:
            start = self.rng.choice(list(obs.cursors) + [0, obs.creation])
            path = f"/observers/{obs.id}/changes?since={start}"
            how = f"since={start}"
        k = self.pick()
        sr = StreamReader(self.instances[k].port, path, headers)
        sr.start()
        sr.opened.wait(5)
        self.stats["stream"] += 1
        if sr.status != 200 or "text/event-stream" not in (sr.content_type or ""):
            self.report.fail("stream", f"observer {obs.id}: stream GET {path} answered {sr.status} {sr.content_type} {sr.error}")
            sr.close()
            return
        for _ in range(self.rng.randint(1, 4)):
            self.do_write(self.writes.valid())
        advance_implied(obs, self.log)
        raw = delivered(obs, self.log, start, self.log.newest)
        groups = []
        for e in raw:
            if groups and groups[-1][0] == e.txn:
                groups[-1][1].append(e)
            else:
                groups.append((e.txn, [e]))
        t_wait = time.monotonic()
        deadline = t_wait + 3
        while time.monotonic() < deadline and len([e for e in sr.events if e["event"] != "gone"]) < len(groups):
            time.sleep(0.02)
        time.sleep(0.05)
        # what the stream did, for a failure report: did the server end it?
        ended_by_server = sr.ended
        waited = time.monotonic() - t_wait
        sr.close()
        desc = f"observer {obs.id} ({len(obs.reads)} reads): stream GET {path} ({how}) through {self.instances[k].name}"
        events = [e for e in sr.events if e["event"] != "gone"]
        if sr.events and sr.events[0]["retry"] is None:
            self.report.fail("stream", f"{desc}: the first event carries no retry:")
        parsed = []
        at = {}      # seq -> index of the event that holds it
        for i, ev in enumerate(events):
            try:
                data = json.loads(ev["data"])
                got = data["changes"]
            except (ValueError, KeyError, TypeError):
                self.report.fail("stream", f"{desc}: event {i} has data that is not a feed answer: {short(ev['data'])}")
                parsed.append(None)
                continue
            parsed.append(got)
            if isinstance(data.get("cursor"), int):
                # a stream answers the observer too: its cursors count for the kill -9 allowance
                obs.history.append((ev["at"], data["cursor"]))
                obs.prune_history()
            for c in got:
                at.setdefault(c.get("seq"), i)
            if ev["event"] != "changes":
                self.report.fail("stream", f"{desc}: event {i} is {ev['event']!r}, expected 'changes'")
            if got and ev["id"] != str(got[-1].get("seq")):
                self.report.fail("stream", f"{desc}: event {i} has id {ev['id']}, not the seq of its last change {got[-1].get('seq')}")
        used = set()
        for tid, es in groups:
            want = [e.json() for e in es]
            i = at.get(es[0].seq)
            if i is None:
                last = events[-1] if events else None
                self.report.fail("missed", f"{desc}: no event holds the transaction {short(want, 300)} "
                                           f"({len(events)} events for {len(groups)} transactions in {waited:.2f} s, the last "
                                           f"id {last['id'] if last else None} at +{(last['at'] - t_wait) if last else 0:.2f} s; "
                                           f"{'ended by the server' if ended_by_server else 'still open'}; "
                                           f"server's cursor {sr_cursor(events)}; before: {list(obs.trail)})", n=len(es))
                continue
            used.add(i)
            if jdump(parsed[i]) != jdump(want):
                gs = {c.get("seq") for c in parsed[i]}
                ws = {e.seq for e in es}
                cat = "wrong-value" if gs == ws else ("missed" if gs < ws else "stream")
                self.report.fail(cat, f"{desc}: event {i} holds {short(parsed[i], 300)}; expected one transaction {short(want, 300)}")
        for i, got in enumerate(parsed):
            if i in used or got is None:
                continue
            les = [self.log.by_seq.get(c.get("seq")) for c in got]
            if got and all(le is not None and le.seq <= start and receives(obs, le) for le in les):
                self.report.fail("repeated", f"{desc}: event {i} repeats {short(got, 300)}, at or before its start {start}", n=len(got))
            else:
                self.report.fail("spurious", f"{desc}: event {i} holds {short(got, 300)}, which the observer should not receive there", n=max(1, len(got)))
        if events and events[-1]["id"] and events[-1]["id"].isdigit():
            obs.last_event_id = int(events[-1]["id"])
        elif not events and groups == []:
            obs.last_event_id = start
        obs.note(f"stream {path} {headers} got {len(events)} events")
        # The server learns that the client closed the stream only when a
        # write to it fails, and may count what it wrote meanwhile as
        # answered. A poll ends the stream (the observer's one consumer);
        # the cursor it then shows is adopted as the implicit cursor.
        obs.implicit = None
        time.sleep(0.3)
        self.poll(obs, obs.cursors[-1], 1000)
        time.sleep(0.1)
        obs.implicit = None
        self.do_inspect(obs)

    # -- restarts
    def restart(self, k, how):
        inst = self.instances[k]
        t_kill = time.monotonic()
        print(f"restart: {inst.name} by {'SIGTERM' if how == 'term' else 'kill -9'} after {self.stats['ops']} operations", flush=True)
        stop_server(inst, how, self.report)
        inst.start()
        self.clients[k].close()
        self.clients[k] = Client(inst.port)
        self.check_everything(f"after the {'SIGTERM' if how == 'term' else 'kill -9'} restart of {inst.name}",
                              kill_time=t_kill if how == "kill" else None)

    def check_state(self, context):
        bad = False
        for url, body, _, _ in self.reads.everything():
            status, h, got = self.req("GET", url)
            if status != 200 or jdump(got) != jdump(body):
                bad = True
                self.report.fail("lost-write", f"{context}: GET {url} answered {status} {short(got, 600)}; "
                                               f"the model (every acknowledged write) says {short(body, 600)}")
        status, _, hz = self.req("GET", "/healthz")
        if status != 200 or hz.get("seq") != self.log.newest:
            self.report.fail("lost-write", f"{context}: /healthz answered {status} {short(hz)}; the newest acknowledged seq is {self.log.newest}")
        if bad:
            self.resync(context)

    def check_everything(self, context, kill_time=None):
        self.check_state(context)
        for obs in list(self.observers):
            allowed = None
            if kill_time is not None:
                allowed = {c for (t, c) in obs.history if t > kill_time - 1.5}
                older = [c for (t, c) in obs.history if t <= kill_time - 1.5]
                if older:
                    allowed.add(older[-1])
                else:
                    allowed.add(obs.creation)
                if obs.implicit is None:
                    allowed = None
            self.do_inspect(obs, allowed_cursors=allowed)

    # -- the run
    def setup(self):
        bodies = {}
        for url in ("/truck", "/account", "/grid", "/posts", "/jobs", "/games"):
            status, _, bodies[url] = self.req("GET", url)
            if status != 200:
                raise RuntimeError(f"GET {url} answered {status}")
        self.st.load(bodies["/truck"], bodies["/account"], bodies["/grid"], bodies["/posts"], bodies["/jobs"], bodies["/games"])
        self.log.seed(self.st)
        status, _, hz = self.req("GET", "/healthz")
        self.log.newest = hz["seq"]
        self.seer = self.create_observer()
        for url, body, paths, pages in self.reads.everything():
            status, h, got = self.req("GET", url, headers={"Observer": self.seer.id})
            if status != 200 or jdump(got) != jdump(body):
                raise RuntimeError(f"all-seeing read of {url} answered {status} {short(got)}")
            cur = int(h["observation-cursor"])
            for p in paths:
                self.seer.track(p, cur)
            for pr in pages:
                self.seer.track_shape(pr.shape(cur, None))

    def choose_observer(self):
        if not self.observers:
            return None
        if self.rng.random() < 0.6:
            return self.rng.choice(self.observers[-20:])
        return self.rng.choice(self.observers)

    def step(self):
        a = self.args
        ops = self.stats["ops"]
        target = min(a.observers, int(a.observers * (ops + 1) / max(1, 0.5 * a.ops)) + 1)
        if len(self.observers) + len(self.deleted) < target or not self.observers:
            o = self.create_observer()
            if o is not None:
                self.observers.append(o)
            return
        r = self.rng.random()
        obs = self.choose_observer()
        table = [
            (0.26, lambda: self.do_write(self.writes.valid())),
            (0.04, lambda: self.do_write(self.writes.refused())),
            (0.22, lambda: self.do_read(obs)),
            (0.03, lambda: self.do_read(None)),
            (0.005, self.do_read_unknown_observer),
            (0.005, self.do_bad_fields),
            (0.25, lambda: self.do_poll(obs)),
            (0.01, lambda: self.do_bad_poll(obs)),
            (0.05, lambda: self.do_inspect(obs)),
            (0.012, lambda: self.do_forget(obs)),
            (0.006, lambda: self.do_delete(obs)),
            (0.012, lambda: self.do_longpoll(obs)),
            (0.004, lambda: self.do_displace(obs)),
            (0.006, lambda: self.do_stream(obs)),
        ]
        acc = 0
        total = sum(w for w, _ in table)
        r *= total
        for w, fn in table:
            acc += w
            if r < acc:
                try:
                    fn()
                except ConnectionLost:
                    pass
                return

    def run(self):
        a = self.args
        self.setup()
        points = [int(a.ops * (i + 1) / (a.restarts + 1)) for i in range(a.restarts)]
        kinds = ["term", "kill"]
        restarts = 0
        last_print = time.monotonic()
        while self.stats["ops"] < a.ops:
            self.step()
            self.stats["ops"] += 1
            if restarts < len(points) and self.stats["ops"] >= points[restarts]:
                k = self.rng.randrange(len(self.instances))
                self.restart(k, kinds[restarts % 2])
                restarts += 1
            if time.monotonic() - last_print > 15:
                last_print = time.monotonic()
                print(f"progress: {self.stats['ops']}/{a.ops} operations, {len(self.observers)} observers, "
                      f"seq {self.log.newest}, failures {self.report.total()}", flush=True)
        self.finish()

    def finish(self):
        self.check_everything("at the end")
        # Replays: the whole range from each observer's creation, for a sample.
        sample = self.rng.sample(self.observers, min(len(self.observers), 40))
        for obs in sample:
            since = obs.creation
            while True:
                ans = self.poll(obs, since, 1000)
                if not ans or ans["cursor"] >= self.log.newest or ans["cursor"] <= since:
                    break
                since = ans["cursor"]
        for inst in self.instances:
            if not inst.alive():
                self.report.fail("crash", f"{inst.name} is not running at the end; see {inst.log_path}")
        print("operations: " + ", ".join(f"{k} {v}" for k, v in sorted(self.stats.items()) if not k.startswith("write:")), flush=True)
        print(f"figures: {self.stats['ops']} operations, {self.all_ids} observers, {self.stats['poll']} polls checked, "
              f"{self.stats['delivered']} changes delivered, {self.stats['page']} pages read, {self.stats['shape']} shapes tracked", flush=True)
        print("writes: " + ", ".join(f"{k[6:]} {v}" for k, v in sorted(self.stats.items()) if k.startswith("write:")), flush=True)


# ---------------------------------------------------------------------------
# Entry


def run_mode(args, mode, fault=None):
    report = Report(max_print=args.max_print)
    tmp = tempfile.mkdtemp(prefix="precision-check-")
    insts = []
    try:
        if mode == "cluster":
            db = cluster_database(args)
            if not db:
                raise SystemExit("cluster mode needs PostgreSQL: run under scripts/with-postgres or pass --postgres-url")
            insts = start_servers(args, tmp, 3, db, fault)
        else:
            insts = start_servers(args, tmp, 1, os.path.join(tmp, "db.sqlite"), fault)
        print(f"mode {mode}{' with planted fault ' + fault if fault else ''}: {len(insts)} instance(s) on ports "
              f"{[i.port for i in insts]}, logs in {tmp}", flush=True)
        if mode == "concurrent":
            checker = ConcurrentChecker(args, report, insts)
        else:
            checker = Checker(args, report, insts)
        checker.run()
    finally:
        for inst in insts:
            if inst.alive():
                stop_server(inst, "term", report)
        if report.total() == 0 and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"server logs kept in {tmp}", flush=True)
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["sequential", "concurrent", "cluster"], default="sequential")
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/observable-server"))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--ops", type=int, default=3000)
    ap.add_argument("--observers", type=int, default=50)
    ap.add_argument("--restarts", type=int, default=2)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--longpolls", type=int, default=None, help="most long-poll and displacement tests (default ops/100, at most 300)")
    ap.add_argument("--streams", type=int, default=None, help="most stream tests (default ops/150, at most 200)")
    ap.add_argument("--postgres-url", default=None, help="admin URL of a PostgreSQL server (default $OBSERVABLE_TEST_POSTGRES_ADMIN_URL)")
    ap.add_argument("--planted-faults", action="store_true", help="check that each planted fault is caught")
    ap.add_argument("--max-print", type=int, default=20, help="failures printed per category (all are counted)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder with the server logs")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 10**9)
    if args.longpolls is None:
        args.longpolls = min(300, max(10, args.ops // 100))
    if args.streams is None:
        args.streams = min(200, max(8, args.ops // 150))
    args.binary = os.path.abspath(args.binary)
    print(f"seed: {args.seed}", flush=True)
    if not os.access(args.binary, os.X_OK):
        raise SystemExit(f"no server binary at {args.binary} (swift build, or --binary)")
    if args.planted_faults:
        sys.exit(planted_faults(args))
    report = run_mode(args, args.mode)
    print(report.table(f"{args.mode}, seed {args.seed}"), flush=True)
    sys.exit(1 if report.total() else 0)


# ---------------------------------------------------------------------------
# Concurrent mode: writers own their objects; the log is the oracle

SHARED_UNIQUE = ("/truck/name", "/account/userName")


class ConcurrentWrites(Writes):
    """A writer's plans: only its own objects, unique values on shared paths."""

    def __init__(self, checker, rng, state, wid):
        self.c = checker
        self.rng = rng
        self.st = state
        self.wid = wid
        self.n = 0

    def check_body(self, plan, got, want):
        if isinstance(want, dict) and "id" in want:
            Writes.check_body(self, plan, got, want)

    def etag_of(self, url):
        try:
            status, h, _ = self.client.request("GET", url)
        except ConnectionLost:
            return None
        return h.get("etag") if status == 200 else None

    def unique(self, base):
        self.n += 1
        return f"{base} w{self.wid}-{self.n}"

    def truck_rename(self):
        name = self.unique("Truck")
        return Plan("truck-rename", "PATCH", "/truck", {"name": name},
                    finish=lambda s, b: [[("/truck/name", "set", None, name)]])

    def login(self):
        u = self.unique("user")
        return Plan("login", "POST", "/account/login", {"userName": u},
                    finish=lambda s, b: [[("/account/userName", "set", None, u)]])

    def order_create(self):
        p = Writes.order_create(self)
        if p.name != "order-create":
            return p
        orig = p.finish
        p.finish = lambda s, b: [[t[0], ("/truck/orderCount", "set", None, None)] for t in orig(s, b)]
        return p

    def order_delete(self):
        p = Writes.order_delete(self)
        if p.name != "order-delete":
            return p
        orig = p.finish
        p.finish = lambda s, b: [[t[0], ("/truck/orderCount", "set", None, None)] for t in orig(s, b)]
        return p

    def row_append(self):
        st = self.st
        n = self.rng.randint(1, 3)

        def finish(status, resp):
            ids = [d.get("id") for d in resp.get("dots") or []]
            for d in ids:
                st.dots[d] = {"isTapAnimated": False, "isRandomAnimated": False}
            if len(ids) != n:
                self.c.report.fail("wrong-state", f"POST /grid/rows {{dots: {n}}} made {len(ids)} dots")
            r = resp.get("row")
            while len(st.rows) <= r:
                st.rows.append([])
            st.rows[r] = list(ids)
            return [[("/grid/rows", "insert", None, {"row": r, "dots": [st.dot(d) for d in ids]})]]
        return Plan("row-append", "POST", "/grid/rows", {"dots": n}, status=201, finish=finish)

    def dot_append(self):
        st = self.st
        rows = [r for r in range(len(st.rows)) if st.rows[r] is not None]
        r = self.rng.choice(rows) if rows else 0

        def finish(status, resp):
            dot = resp.get("dot") or {}
            i = dot.get("id")
            st.dots[i] = {"isTapAnimated": False, "isRandomAnimated": False}
            if resp.get("row") != r:
                self.c.report.fail("wrong-state", f"POST /grid/rows/{r}/dots answered {short(resp)}")
            return [[("/grid/rows", "insert", None, {"row": r, "col": resp.get("col"), "dot": st.dot(i)})]]
        return Plan("dot-append", "POST", f"/grid/rows/{r}/dots", self.rng.choice([None, {}]), finish=finish)

    def valid(self):
        st = self.st
        table = [
            (self.truck_rename, 1), (self.login, 1),
            (self.donut_create, 2 if len(st.donuts) < 4 else 0.2), (self.donut_patch, 4), (self.donut_delete, 0.5 if len(st.donuts) < 4 else 2),
            (self.order_create, 2 if len(st.orders) < 5 else 0.3), (self.order_delete, 1 if len(st.orders) < 5 else 3),
            (self.dot_patch, 4 if st.dots else 0), (self.dot_tap, 2 if st.dots else 0),
            (self.row_append, 0.3 if len(st.dots) < 12 else 0), (self.dot_append, 0.3 if len(st.dots) < 12 else 0),
            (self.post_create, 1.5 if len(st.posts) < 4 else 0.2), (self.post_delete, 0.5 if len(st.posts) < 4 else 2),
            (self.job_create, 1 if len(st.jobs) < 3 else 0.1), (self.job_progress, 3), (self.job_delete, 0.3 if len(st.jobs) < 3 else 1.5),
            (self.game_create, 0.7 if len(st.games) < 2 else 0.05), (self.game_choose, 4), (self.game_delete, 0.2 if len(st.games) < 2 else 1),
        ]
        fns, weights = zip(*table)
        return self.rng.choices(fns, weights)[0]()

    def refused(self):
        # Rows appended by other writers are not in this writer's state: a
        # row past the grid's limit is the unknown row here.
        p = Writes.refused(self)
        while p.name == "dot-append-no-row":
            p = Writes.refused(self)
        if self.rng.random() < 0.05:
            p = Plan("dot-append-no-row", "POST", f"/grid/rows/{100000 + self.rng.randrange(1000)}/dots", status=404, finish=lambda s, b: [])
        return p


def paths_from(url, body):
    """What a GET answer makes its observer read: (property paths, shapes
    as (collection, fields)); a collection, whole, is one shape."""
    base = url.split("?")[0]
    q = dict(urllib.parse.parse_qsl(url.split("?", 1)[1])) if "?" in url else {}
    fields = q["fields"].split(",") if "fields" in q else None
    out, shapes = [], []

    def fields_of(prefix, obj, skip=("id",)):
        return [f"{prefix}/{k}" for k in obj if k not in skip]

    if base == "/truck":
        for k in body:
            if k in ("donuts", "orders"):
                shapes.append((f"/truck/{k}", None))
            else:
                out.append(f"/truck/{k}")
    elif base in COLLS:
        shapes.append((base, fields))
    elif base.startswith("/games/"):
        if "cards" in body:
            shapes.append((f"{base}/cards", None))
        if "isOver" in body:
            out.append(f"{base}/isOver")
    elif base == "/grid":
        out.append("/grid/rows")
        for row in body["rows"]:
            for d in row:
                out += fields_of(f"/grid/dots/{d['id']}", d)
    elif base.startswith("/grid/dots/"):
        out += fields_of(base, body)
    elif base == "/truck/orderCount":
        out.append("/truck/orderCount")
    elif base == "/account":
        out.append("/account/userName")
    else:   # /truck/donuts/{id}, /posts/{id}, /jobs/{id}
        out += fields_of(base, body)
    return out, shapes


class ConcurrentChecker(Checker):
    def __init__(self, args, report, instances):
        super().__init__(args, report, instances)
        self.lock = threading.Lock()
        self.raw = []                  # changes the all-seeing observer was told, in order
        self.raw_newest = 0
        self.records = []              # (writer, plan description, txns) of acknowledged writes
        self.pause = threading.Event()
        self.paused = 0
        self.cv = threading.Condition()
        self.stop = False
        self.restarting = False
        self.ops_done = 0
        self.writes_done = 0
        self.reader_ops = 0
        self.reader_obs = []           # (Observer, events)
        self.pages_read = 0

    # -- the all-seeing observer's poller
    def seer_loop(self):
        c = Client(self.instances[0].port, timeout=20)
        while not self.stop:
            if c.port != self.instances[0].port:
                c.close()
                c = Client(self.instances[0].port, timeout=20)
            try:
                status, _, ans = c.request("GET", f"/observers/{self.seer.id}/changes?since={self.raw_newest}&timeout=0.5&limit=1000")
            except ConnectionLost as e:
                if not self.restarting:
                    self.report.fail("crash", f"all-seeing observer's poll: {e}")
                time.sleep(0.1)
                continue
            if status != 200:
                if not self.restarting:
                    self.report.fail("wrong-status", f"all-seeing observer's poll answered {status} {short(ans)}")
                time.sleep(0.1)
                continue
            with self.lock:
                for ch in ans["changes"]:
                    if isinstance(ch.get("seq"), int) and ch["seq"] > self.raw_newest:
                        self.raw.append(ch)
                        self.raw_newest = ch["seq"]
                    else:
                        self.report.fail("out-of-order", f"all-seeing observer was told {short(ch)} after seq {self.raw_newest}")
                self.raw_newest = max(self.raw_newest, ans["cursor"])
        c.close()

    def catch_up(self):
        """Waits until the all-seeing observer has everything /healthz says is committed."""
        c = Client(self.instances[0].port)
        status, _, hz = c.request("GET", "/healthz")
        c.close()
        target = hz["seq"]
        deadline = time.monotonic() + 15
        while self.raw_newest < target and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.raw_newest < target:
            self.report.fail("missed", f"the all-seeing observer reached seq {self.raw_newest}, /healthz says {target}")
        return target

    # -- pausing for restarts
    def checkpoint(self):
        if self.pause.is_set():
            with self.cv:
                self.paused += 1
                self.cv.notify_all()
                while self.pause.is_set() and not self.stop:
                    self.cv.wait(0.1)
                self.paused -= 1

    def writer_loop(self, wid, state):
        rng = random.Random(self.args.seed * 1000 + wid)
        w = ConcurrentWrites(self, rng, state, wid)
        c = Client(self.instances[0].port)
        w.client = c
        while not self.stop:
            self.checkpoint()
            if self.stop:
                break
            with self.lock:
                if self.writes_done >= self.args.ops // 2:
                    break
                self.writes_done += 1
                self.ops_done += 1
            if c.port != self.instances[0].port:
                c.close()
                c = Client(self.instances[0].port)
                w.client = c
            plan = w.valid() if rng.random() < 0.9 else w.refused()
            try:
                status, h, body = c.request(plan.method, plan.path, body=plan.body, raw=plan.raw, headers=plan.headers)
            except ConnectionLost as e:
                self.report.fail("crash", f"writer {wid}: {plan.describe()}: {e}")
                continue
            if status not in plan.status:
                self.report.fail("wrong-status", f"writer {wid}: {plan.describe()} answered {status} {short(body)}; expected {plan.status}")
                if 200 <= status < 300:
                    with self.lock:
                        self.records.append((wid, plan.describe() + " (unexpected success)", None))
                continue
            if 200 <= status < 300:
                txns = plan.finish(status, body)
                with self.lock:
                    self.records.append((wid, plan.describe(), txns))
        c.close()

    def reader_loop(self, rid, count):
        rng = random.Random(self.args.seed * 7919 + rid)
        c = Client(self.instances[0].port)
        mine = []
        pool = collections.defaultdict(dict)   # collection -> {position: element id}, from the Links
        seen = 0   # newest cursor this thread has seen: a lower bound for "newest before"
        while not self.stop:
            self.checkpoint()
            if self.stop:
                break
            with self.lock:
                if self.reader_ops >= self.args.ops - self.args.ops // 2:
                    break
                self.reader_ops += 1
                self.ops_done += 1
            if c.port != self.instances[0].port:
                c.close()
                c = Client(self.instances[0].port)
            try:
                if len(mine) < count and (not mine or rng.random() < 0.2):
                    status, _, body = c.request("POST", "/observers", body={"ttlSeconds": 86400})
                    if status != 201:
                        self.report.fail("wrong-status", f"POST /observers answered {status} {short(body)}")
                        continue
                    o = Observer(body["id"], body["cursor"], time.monotonic())
                    ev = [("create", body["cursor"])]
                    with self.lock:
                        self.reader_obs.append((o, ev))
                    mine.append((o, ev))
                    continue
                o, ev = rng.choice(mine)
                r = rng.random()
                if r < 0.4:
                    url = rng.choice(["/truck", "/truck?fields=name,orderCount", "/truck?fields=donuts", "/truck/donuts",
                                      "/truck/donuts?fields=name", "/truck/donuts?fields=id", "/truck/orders", "/truck/orderCount",
                                      "/account", "/grid", "/grid?fields=isTapAnimated", "/posts", "/posts?fields=id",
                                      "/jobs", "/jobs?fields=progress", "/games", "/games?fields=isOver"])
                    status, h, body = c.request("GET", url, headers={"Observer": o.id})
                    if status != 200:
                        self.report.fail("wrong-status", f"GET {url} -H 'Observer: {o.id}' answered {status} {short(body)}")
                        continue
                    cur = int(h.get("observation-cursor", -1))
                    if cur < seen:
                        self.report.fail("wrong-cursor", f"GET {url}: Observation-Cursor {cur} below {seen}, seen earlier by the same client")
                    seen = max(seen, cur)
                    paths, shapes = paths_from(url, body)
                    ev.append(("read", cur, paths, url, shapes))
                elif r < 0.55:
                    # a page: its window is known once the log gives the creation order
                    coll = rng.choice(list(COLLS))
                    name, names = COLLS[coll]
                    limit = rng.randint(1, 4)
                    desc = rng.random() < 0.5
                    fields = [x for x in names if rng.random() < 0.5] or None
                    after = rng.choice(list(pool[coll].items())) if pool[coll] and rng.random() < 0.6 else None
                    q = [f"limit={limit}"] + (["order=desc"] if desc else []) + ([f"after={after[0]}"] if after else []) \
                        + ([f"fields={','.join(fields)}"] if fields else [])
                    url = coll + "?" + "&".join(q)
                    status, h, body = c.request("GET", url, headers={"Observer": o.id})
                    if status != 200 or not isinstance(body, dict) or not isinstance(body.get(name), list):
                        self.report.fail("wrong-status", f"GET {url} -H 'Observer: {o.id}' answered {status} {short(body)}")
                        continue
                    cur = int(h.get("observation-cursor", -1))
                    seen = max(seen, cur)
                    ids = [e.get("id") for e in body[name]]
                    link = parse_links(h.get("link")).get(None)
                    last = None
                    if link is not None and ids and link[1].get("after", "").isdigit():
                        last = ids[-1]
                        pool[coll][int(link[1]["after"])] = last
                    elif link is not None:
                        self.report.fail("wrong-state", f"GET {url}: Link {link[2]!r} after {len(ids)} elements")
                    with self.lock:
                        self.pages_read += 1
                    ev.append(("page", cur, coll, fields, after[1] if after else None, desc, limit, ids, last, url))
                elif r < 0.93:
                    q = []
                    kind = rng.random()
                    if kind < 0.5:
                        since = None
                    elif kind < 0.8:
                        since = o.implicit
                    else:
                        since = rng.choice(o.cursors + [0])
                    if since is not None:
                        q.append(f"since={since}")
                    timeout = rng.choice([0, 0, 0, 0.3, 0.6])
                    q.append(f"timeout={timeout}")
                    limit = rng.choice([None, None, None, 1, 2, 5])
                    if limit:
                        q.append(f"limit={limit}")
                    co = rng.random() < 0.15
                    if co:
                        q.append("coalesce=true")
                    url = f"/observers/{o.id}/changes?" + "&".join(q)
                    t0 = time.monotonic()
                    status, h, ans = c.request("GET", url, timeout=timeout + 20)
                    took = time.monotonic() - t0
                    if status != 200:
                        self.report.fail("wrong-status", f"GET {url} answered {status} {short(ans)}")
                        continue
                    if timeout > 0 and not ans["changes"] and took < timeout - 0.1:
                        self.report.fail("early-wake", f"observer {o.id}: GET {url} answered {short(ans)} after {took:.2f} s of its {timeout} s")
                    eff = since if since is not None else o.implicit
                    ev.append(("poll", url, eff, limit or 100, co, ans, seen, since is None))
                    o.answered(ans["cursor"])
                    seen = max(seen, ans["cursor"])
                elif r < 0.97:
                    status, _, body = c.request("GET", f"/observers/{o.id}")
                    if status != 200 or body.get("cursor") != o.implicit:
                        self.report.fail("wrong-cursor", f"observer {o.id}: GET /observers/{o.id} answered {status} cursor "
                                                         f"{body.get('cursor') if isinstance(body, dict) else body}; last answered {o.implicit}")
                        if isinstance(body, dict) and isinstance(body.get("cursor"), int):
                            o.answered(body["cursor"])
                else:
                    status, _, body = c.request("DELETE", f"/observers/{o.id}/reads")
                    if status != 204:
                        self.report.fail("wrong-status", f"DELETE /observers/{o.id}/reads answered {status}")
                        continue
                    ev.append(("forget",))
            except ConnectionLost as e:
                self.report.fail("crash", f"reader {rid}: {e}")
        c.close()

    # -- restarts with every thread paused
    def restart_paused(self, how, threads):
        self.pause.set()
        with self.cv:
            while self.paused < len(threads) and any(t.is_alive() for t in threads):
                self.cv.wait(0.1)
                alive = sum(1 for t in threads if t.is_alive())
                if self.paused >= alive:
                    break
        self.catch_up()
        self.restarting = True
        inst = self.instances[0]
        t_kill = time.monotonic()
        print(f"restart: by {'SIGTERM' if how == 'term' else 'kill -9'} after {self.ops_done} operations", flush=True)
        stop_server(inst, how, self.report)
        inst.start()
        self.restarting = False
        self.catch_up()
        c = Client(inst.port)
        with self.lock:
            obs_list = list(self.reader_obs)
        for o, ev in obs_list:
            status, _, body = c.request("GET", f"/observers/{o.id}")
            if status != 200:
                self.report.fail("wrong-status", f"after the restart GET /observers/{o.id} answered {status} {short(body)}")
                continue
            cur = body.get("cursor")
            if how == "term":
                ok = cur == o.implicit
                allowed = [o.implicit]
            else:
                allowed = {cc for (t, cc) in o.history if t > t_kill - 1.5}
                older = [cc for (t, cc) in o.history if t <= t_kill - 1.5]
                if older:
                    allowed.add(older[-1])
                ok = cur in allowed
            if not ok:
                self.report.fail("wrong-cursor", f"observer {o.id}: after the {'SIGTERM' if how == 'term' else 'kill -9'} restart "
                                                 f"its cursor is {cur}; allowed {sorted(allowed)[-5:]}")
            if isinstance(cur, int) and cur != o.implicit:
                o.answered(cur)
            ev.append(("reads", body.get("reads")))
        c.close()
        self.pause.clear()

    def run(self):
        a = self.args
        self.setup()
        self.raw_newest = self.log.newest
        self.initial = (json.loads(jdump(self.st.truck())), {"userName": self.st.user}, self.st.grid(),
                        {"posts": [self.st.post(i) for i in self.st.posts]}, {"jobs": [self.st.job(i) for i in self.st.jobs]},
                        {"games": [self.st.game(i) for i in self.st.games]})
        # Writers' own states: seed dots dealt round-robin, nothing else.
        states = []
        dots = [d for row in self.st.rows for d in row]
        for w in range(a.writers):
            s = State()
            s.truck_name = None
            s.rows = [list(r) for r in self.st.rows]
            s.dots = {d: dict(self.st.dots[d]) for k, d in enumerate(dots) if k % a.writers == w}
            states.append(s)
        seer = threading.Thread(target=self.seer_loop, daemon=True)
        seer.start()
        per_reader = max(1, a.observers // max(1, a.readers))
        threads = [threading.Thread(target=self.writer_loop, args=(w, states[w]), daemon=True) for w in range(a.writers)]
        threads += [threading.Thread(target=self.reader_loop, args=(r, per_reader), daemon=True) for r in range(a.readers)]
        for t in threads:
            t.start()
        points = [int(a.ops * (i + 1) / (a.restarts + 1)) for i in range(a.restarts)]
        done = 0
        last = time.monotonic()
        while any(t.is_alive() for t in threads):
            time.sleep(0.05)
            if done < len(points) and self.ops_done >= points[done]:
                self.restart_paused(["term", "kill"][done % 2], threads)
                done += 1
            if time.monotonic() - last > 15:
                last = time.monotonic()
                print(f"progress: {self.ops_done}/{a.ops} operations, seq {self.raw_newest}, failures {self.report.total()}", flush=True)
        for t in threads:
            t.join()
        self.catch_up()
        self.stop = True
        seer.join(5)
        self.verify()

    # -- the verdict
    def verify(self):
        with self.lock:
            raw = list(self.raw)
            records = list(self.records)
        # 1. who committed each change
        claims = {}
        ordinal_want = collections.defaultdict(list)
        for rec_i, (wid, desc, txns) in enumerate(records):
            if txns is None:
                continue
            for ti, t in enumerate(txns):
                for ci, (path, op, old, new) in enumerate(t):
                    if path == "/truck/orderCount":
                        continue
                    if op in ("insert", "remove"):
                        v = new if op == "insert" else old
                        ident = v.get("id") if "id" in v else (v.get("dot") or {}).get("id") or jdump(v.get("dots"))
                        claims[(path, op, ident)] = (rec_i, ti, ci)
                    elif path in SHARED_UNIQUE:
                        claims[(path, jdump(new))] = (rec_i, ti, ci)
                    else:
                        ordinal_want[path].append((rec_i, ti, ci))
        ordinal_seen = collections.Counter()
        found = {}   # (rec, ti, ci) -> raw change
        owner = []   # per raw change: (rec, ti) or None
        for k, ch in enumerate(raw):
            path, op = ch.get("path"), ch.get("op")
            key = None
            if path == "/truck/orderCount":
                prev = owner[-1] if owner else None
                if prev is not None and raw[k - 1].get("path") == "/truck/orders" and raw[k - 1].get("seq") == ch.get("seq") - 1:
                    owner.append(prev)
                    found[(prev[0], prev[1], 1)] = ch
                else:
                    owner.append(None)
                    self.report.fail("spurious", f"log: {short(ch)} does not follow an order's insert or remove in one transaction")
                continue
            if op in ("insert", "remove"):
                v = ch.get("new") if op == "insert" else ch.get("old")
                ident = v.get("id") if "id" in v else (v.get("dot") or {}).get("id") or jdump(v.get("dots"))
                key = claims.get((path, op, ident))
            elif path in SHARED_UNIQUE:
                key = claims.get((path, jdump(ch.get("new"))))
            else:
                n = ordinal_seen[path]
                ordinal_seen[path] += 1
                lst = ordinal_want.get(path, [])
                key = lst[n] if n < len(lst) else None
            if key is None:
                owner.append(None)
                self.report.fail("spurious", f"log: {short(ch)} was committed by no acknowledged write")
                continue
            found[key] = ch
            owner.append((key[0], key[1]))
        # 2. every acknowledged change in the log, right, each transaction consecutive
        for rec_i, (wid, desc, txns) in enumerate(records):
            if txns is None:
                continue
            for ti, t in enumerate(txns):
                seqs = []
                for ci, (path, op, old, new) in enumerate(t):
                    ch = found.get((rec_i, ti, ci))
                    if ch is None:
                        self.report.fail("lost-write", f"writer {wid}: {desc} was acknowledged but the log lacks its change {op} {path} -> {short(new, 120)}")
                        continue
                    seqs.append(ch["seq"])
                    if ch.get("path") != path or ch.get("op") != op \
                            or (new is not None and jdump(ch.get("new") if op != "remove" else None) != jdump(new)) \
                            or (old is not None and jdump(ch.get("old")) != jdump(old)):
                        self.report.fail("wrong-value", f"writer {wid}: {desc} committed {short(ch)}; predicted {op} {path} {short(old, 100)} -> {short(new, 100)}")
                if seqs != list(range(seqs[0], seqs[0] + len(seqs))) if seqs else False:
                    self.report.fail("split-transaction", f"writer {wid}: {desc}: the changes of one transaction have seqs {seqs}")
        # 3. the log replayed through the model: every old value is the value before
        st = State()
        st.load(*self.initial)
        self.st = st
        self.reads.st = st
        log = Log()
        log.seed(st)
        txn_of = {}
        for k, ch in enumerate(raw):
            key = owner[k]
            if key is None:
                tid = log.new_txn()
            else:
                if key not in txn_of:
                    txn_of[key] = log.new_txn()
                tid = txn_of[key]
            self.replay_one(st, ch)
            log.append(Entry(ch["seq"], ch.get("path"), ch.get("op"), ch.get("old"), ch.get("new"), tid))
        self.log = log
        self.check_state("at the end of the concurrent run")
        # 4. every poll of every observer
        polls = 0
        pages = 0
        for o, ev in self.reader_obs:
            m = Observer(o.id, ev[0][1], 0)
            for e in ev[1:]:
                if e[0] == "read":
                    for p in e[2]:
                        m.track(p, e[1])
                    for coll, fields in e[4]:
                        m.track_shape(MShape(coll, fields, -1, INF, e[1], newest=e[1]))
                        self.stats["shape"] += 1
                elif e[0] == "page":
                    _, cur, coll, fields, after, desc, limit, ids, last, url = e
                    pages += 1
                    sh = self.page_shape(log, cur, coll, fields, after, desc, limit, ids, last, url)
                    if sh is not None:
                        m.track_shape(sh)
                        self.stats["shape"] += 1
                elif e[0] == "forget":
                    advance_implied(m, log, m.cursors[-1])
                    m.forget()
                elif e[0] == "poll":
                    _, url, since, limit, co, ans, seen, implicit = e
                    polls += 1
                    self.check_answer(m, f"GET {url}", since, limit, co, ans, seen, implicit)
                    m.answered(ans["cursor"])
        print(f"concurrent: {len(raw)} changes from {len(records)} acknowledged writes; {polls} polls and {pages} pages by "
              f"{len(self.reader_obs)} observers checked against the log", flush=True)
        self.stats["poll"] = polls
        self.stats["page"] = pages
        print(f"figures: {self.ops_done} operations, {len(self.reader_obs)} observers, {polls} polls checked, "
              f"{self.stats['delivered']} changes delivered, {pages} pages read, {self.stats['shape']} shapes tracked", flush=True)

    def page_shape(self, log, cur, coll, fields, after, desc, limit, ids, last, url):
        """The shape a page read in the run makes, its window from the
        creation order the log gives; checks that the page's elements are in
        that order past its cursor's element, and that a page with a Link is
        full."""
        def idx(i):
            n = log.idx.get((coll, i))
            if n is None:
                self.report.fail("wrong-state", f"GET {url} showed {coll}/{i}, which no insert in the log made")
            return n
        ns = [idx(i) for i in ids]
        if None in ns:
            return None
        a = idx(after) if after is not None else None
        if after is not None and a is None:
            return None
        ok = all((y < x) if desc else (y > x) for x, y in zip(ns, ns[1:]))
        if a is not None:
            ok = ok and all((n < a) if desc else (n > a) for n in ns)
        if not ok or len(ids) > limit or (last is not None and len(ids) != limit):
            self.report.fail("wrong-state", f"GET {url} (after #{a}) showed elements made #{ns}: not the page in creation order")
        if not desc:
            lo = a + 1 if a is not None else -1
            hi = ns[-1] if last is not None else INF
        else:
            hi = a - 1 if a is not None else INF
            lo = ns[-1] if last is not None else -1
        return MShape(coll, fields, lo, hi, cur, newest=cur)

    def replay_one(self, st, ch):
        path, op, old, new = ch.get("path"), ch.get("op"), ch.get("old"), ch.get("new")
        parts = path.strip("/").split("/")

        def bad(cur):
            self.report.fail("wrong-value", f"log: {short(ch)}: the value before was {short(cur)}")
        try:
            if op == "set":
                if path == "/truck/name":
                    cur, st.truck_name = st.truck_name, new
                elif path == "/account/userName":
                    cur, st.user = st.user, new
                elif path == "/truck/orderCount":
                    # it follows the insert or remove of its transaction
                    if new != len(st.orders) or not isinstance(old, int) or abs(new - old) != 1:
                        bad(f"{len(st.orders)} orders")
                    return
                elif parts[0] == "truck" and parts[1] == "donuts":
                    d = st.donuts[parts[2]]
                    cur, d[parts[3]] = d[parts[3]], new
                elif parts[0] == "grid":
                    d = st.dots[parts[2]]
                    cur, d[parts[3]] = d[parts[3]], new
                elif parts[0] == "jobs":
                    j = st.jobs[parts[1]]
                    if parts[2] == "progress":
                        cur = {"current": j["current"], "total": j["total"]}
                        j["current"] = new["current"]
                    else:
                        # it follows the progress change that completes the job
                        if not (old is False and new is True and j["current"] == j["total"]):
                            bad(j)
                        return
                elif parts[0] == "games":
                    g = st.games[parts[1]]
                    if parts[2] == "isOver":
                        cur, g["isOver"] = g["isOver"], new
                    else:
                        card = next(c for c in g["cards"] if c["id"] == parts[3])
                        cur, card[parts[4]] = card[parts[4]], new
                else:
                    return
                if jdump(cur) != jdump(old):
                    bad(cur)
            elif op == "insert":
                if path == "/truck/donuts":
                    st.donuts[new["id"]] = {k: new[k] for k in DONUT_FIELDS}
                elif path == "/truck/orders":
                    st.orders[new["id"]] = {"donutId": new["donutId"], "quantity": new["quantity"]}
                elif path == "/posts":
                    st.posts[new["id"]] = {"imageURL": new["imageURL"], "height": new["height"]}
                elif path == "/jobs":
                    st.jobs[new["id"]] = {"current": new["progress"]["current"], "total": new["progress"]["total"]}
                elif path == "/games":
                    st.games[new["id"]] = {"cards": [dict(c) for c in new["cards"]], "isOver": new["isOver"]}
                elif path == "/grid/rows":
                    if "dots" in new:
                        if new["row"] != len(st.rows):
                            bad(f"{len(st.rows)} rows")
                        st.rows.append([d["id"] for d in new["dots"]])
                        for d in new["dots"]:
                            st.dots[d["id"]] = {k: d[k] for k in DOT_FIELDS}
                    else:
                        row = st.rows[new["row"]]
                        if new["col"] != len(row):
                            bad(f"row {new['row']} of {len(row)} dots")
                        row.append(new["dot"]["id"])
                        st.dots[new["dot"]["id"]] = {k: new["dot"][k] for k in DOT_FIELDS}
            elif op == "remove":
                i = old["id"]
                table = {"/truck/donuts": (st.donuts, st.donut), "/truck/orders": (st.orders, st.order), "/posts": (st.posts, st.post),
                         "/jobs": (st.jobs, st.job), "/games": (st.games, st.game)}[path]
                cur = table[1](i)
                del table[0][i]
                if jdump(cur) != jdump(old):
                    bad(cur)
        except (KeyError, IndexError, StopIteration, TypeError) as e:
            self.report.fail("wrong-value", f"log: {short(ch)} names what the model does not hold ({type(e).__name__}: {e})")


# ---------------------------------------------------------------------------
# Planted faults: each must be caught


def planted_faults(args):
    faults = ["drop-implied-reads", "forget-cursor", "wake-every-poll", "ignore-shape-fields", "narrow-page-window"]
    missed = 0
    for fault in faults:
        a = argparse.Namespace(**vars(args))
        # Waking every poll shows only in the long-polls that must stay
        # quiet (about one operation in 200): enough of them that an early
        # answer is certain, not likely.
        # The shape faults show within a few hundred operations (pages are
        # read and their elements changed at every turn).
        a.ops = min(args.ops, {"wake-every-poll": 4000, "ignore-shape-fields": 700, "narrow-page-window": 700}.get(fault, 1200))
        a.observers = min(args.observers, 30)
        a.restarts = max(1, min(args.restarts, 2))
        a.longpolls = 80 if fault == "wake-every-poll" else 30
        a.streams = 10
        a.max_print = 3
        mode = "sequential"
        if fault == "forget-cursor" and admin_url(args.postgres_url):
            mode = "cluster"
        print(f"--- planted fault {fault} ({mode}) ---", flush=True)
        report = run_mode(a, mode, fault=fault)
        caught = report.total()
        kinds = ", ".join(f"{k} {v}" for k, v in report.counts.items() if v)
        print(f"planted fault {fault}: {'caught' if caught else 'NOT CAUGHT'} ({caught} failures{': ' + kinds if kinds else ''})", flush=True)
        if not caught:
            missed += 1
    print(f"planted faults: {len(faults) - missed} of {len(faults)} caught", flush=True)
    return 1 if missed else 0

if __name__ == "__main__":
    main()
