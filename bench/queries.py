#!/usr/bin/env python3
"""Query reads at a million orders, against observable-server on loopback.

Query reads are filtered and sorted collection reads (SPEC §3d; the contract
this server implements is restated in docs/API.md). Seeds a truck with N
orders (1,000,000 by default) straight into the SQLite file, as
bench/shapes.py does (its `seed`), after making through the API 200 more
donuts (varied dough, glaze and topping) and 3,000 jobs (some complete, some
part done); the orders go to all the donuts, quantities 1 to 1000. Then,
on a server started with the quotas of a trusted address
(harness.TRUSTED_QUOTAS in the environment) and
`--max-connections-per-address 1000000 --idle-timeout 3600
--max-long-poll 3600` (every poll comes from 127.0.0.1; a poll parks for an
hour, so that no timeout crosses a write):

- query read latency at N orders (untracked reads, p50/p99 and server CPU
  per read) for a few kinds of query;
- O observers (10,000) each holding a different query on /truck/orders
  (`donutId=eq.X&limit=L`, `quantity=gte.A&quantity=lte.B&limit=20`,
  `sort=-quantity&limit=L`, `donutId=eq.X&sort=quantity&limit=10`,
  `donutId=in.(X,Y)&quantity=gt.A`, second pages through the `Link`, …),
  and J and D observers (2,000 each) holding queries on /jobs
  (`isComplete=eq.false`, `sort=-isComplete`, …) and /truck/donuts
  (`glaze=eq.sugar`, `glaze=is.null`, `sort=glaze`, `fields=`, …); each
  answer is checked against an oracle (SQLite with indexes for the orders,
  Python for the rest), and each window as the server states it in
  `GET /observers/{id}` against the window the contract gives;
  `observable_registry_bytes` (the registry's own estimate of its memory)
  and RSS before and after the observers and after each kind of query:
  bytes per observer and per query shape;
- every observer parks a long-poll, then a stream of writes: orders placed
  and deleted, jobs made, advanced, completed and cancelled, donuts' glaze,
  topping, dough and name changed (sometimes to the value they have: no
  change), donuts made. Before each write the script computes which
  observers it concerns from its own model of each query and window
  (conditions and window on the element before and after the write); the
  observers woken must be exactly those, nobody else may answer within a
  grace period, `observable_longpoll_wakeups_total` must grow by exactly
  that many, and each answer must carry the changes that keep the
  observer's copy equal to the model's (insert, remove or set, each with
  the canonical `query`);
- the same writes again on a fresh copy of the database with nobody
  observing: server CPU per write (from /proc/PID/stat) with the observers
  against without (target ≤ 2×).

Prints one JSON object, then a readable summary. Exits 1 on any mismatch.

    bench/queries                                      # 1,000,000 orders, 10,000 + 2,000 + 2,000 observers
    bench/queries --orders 10000 --observers 500      # a quick run
"""
import argparse
import collections
import json
import os
import random
import sqlite3
import statistics
import sys
import time
import urllib.parse

import shapes
from harness import cpu_seconds, rss_kib
from longpoll import percentile
from shapes import (DONUTS, STALLS, ParkedPoll, Stream, client_of, copy_database, new_observer, remove_database,
                    settled_rss, start_server)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER_FLAGS = ["--idle-timeout", "3600", "--max-long-poll", "3600"]   # besides shapes.start_server's
TEMPLATE = "queries-v1"   # the seeded database's name; change it when what `prepare` makes changes

DOUGHS = ["plain", "chocolate", "cake", "yeast", "sourdough"]
GLAZES = ["sugar", "chocolate", "strawberry", "maple", "honey", "lemon", None]
TOPPINGS = ["sprinkles", "nuts", "coconut", None]

# The queryable fields of each collection, in the model's order (the
# canonical query lists conditions in this order), and their types.
COLLECTIONS = {
    "orders": {"path": "/truck/orders", "fields": {"donutId": "text", "quantity": "integer"},
               "shown": ["donutId", "quantity"]},
    "donuts": {"path": "/truck/donuts", "fields": {"dough": "text", "glaze": "text", "topping": "text"},
               "shown": ["name", "dough", "glaze", "topping"]},
    "jobs": {"path": "/jobs", "fields": {"isComplete": "boolean"}, "shown": ["progress", "isComplete"]},
}
ORDER_OF_FIELD = {c: {f: k for k, f in enumerate(["name", "donutId", "quantity", "dough", "glaze", "topping",
                                                   "isComplete"])} for c in COLLECTIONS}


STARTED = time.perf_counter()


def log(message):
    print(f"[{time.perf_counter() - STARTED:7.1f} s] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- queries

class Query:
    """One query read: conditions [(field, op, raw, value)], sort (field,
    descending) or None, order (without sort), limit, fields, after."""

    def __init__(self, collection, kind, conds=(), sort=None, order=None, limit=None, fields=None, after=None):
        self.collection, self.kind = collection, kind
        self.conds = [(f, op, raw, parse_value(collection, f, op, raw)) for f, op, raw in conds]
        self.sort, self.order, self.limit, self.fields, self.after = sort, order, limit, fields, after
        self.cursor_key = None     # the key of the element `after` names (set by whoever makes the query)

    @property
    def descending(self):
        return self.sort[1] if self.sort else self.order == "desc"

    def params(self):
        out = [f"{f}={op}" + ("" if raw is None else f".{raw}") for f, op, raw, _ in self.conds]
        if self.sort:
            out.append("sort=" + ("-" if self.sort[1] else "") + self.sort[0])
        if self.order:
            out.append(f"order={self.order}")
        if self.limit is not None:
            out.append(f"limit={self.limit}")
        if self.fields is not None:
            out.append("fields=" + ",".join(self.fields))
        return out

    def url(self):
        """The read's path and query (`after` as the Link gave it, still percent-encoded)."""
        params = [quote(p) for p in self.params()] + ([] if self.after is None else [f"after={self.after}"])
        return COLLECTIONS[self.collection]["path"] + "?" + "&".join(params)

    def canonical(self, operators="given", order=False):
        """The contract's canonical form: conditions in the model's field
        order, then (operators="given") the operators as given, or
        (operators="grammar") in the grammar's order; then the sort (and,
        with `order`, `order=desc` for a descending read without a sort)."""
        grammar = ["eq", "neq", "lt", "lte", "gt", "gte", "in", "is", "not"]
        indexed = list(enumerate(self.conds))
        if operators == "given":
            indexed.sort(key=lambda c: (ORDER_OF_FIELD[self.collection][c[1][0]], c[0]))
        else:
            indexed.sort(key=lambda c: (ORDER_OF_FIELD[self.collection][c[1][0]], grammar.index(c[1][1].split(".")[0]), c[0]))
        out = [f"{f}={op}" + ("" if raw is None else f".{raw}") for _, (f, op, raw, _) in indexed]
        if self.sort:
            out.append("sort=" + ("-" if self.sort[1] else "") + self.sort[0])
        elif order and self.order == "desc":
            out.append("order=desc")
        return "&".join(out)

    def form_of(self, told):
        """Which of the allowed forms `told` is, in words (None: none)."""
        for ops in ("given", "grammar"):
            for order in (False, True):
                if told == self.canonical(ops, order):
                    same = self.canonical("given", order) == self.canonical("grammar", order)
                    words = "one operator order" if same else ("operators as given" if ops == "given" else
                                                               "operators in the grammar's order")
                    if self.canonical(ops, True) != self.canonical(ops, False):
                        words += ", order=desc" + (" named" if order else " left out")
                    return words
        return None

    def canonical_forms(self):
        """{form: name}: the forms the contract's words allow (the contract
        names conditions and sort; the server may add `order=desc`)."""
        return {self.canonical("given"): "given", self.canonical("grammar"): "grammar",
                self.canonical("given", True): "given+order", self.canonical("grammar", True): "grammar+order"}

    def matches(self, values):
        for field, op, _, arg in self.conds:
            v = values.get(field)
            if op == "is.null":
                if v is not None:
                    return False
            elif op == "not.is.null":
                if v is None:
                    return False
            elif v is None:
                return False
            elif op == "eq":
                if v != arg:
                    return False
            elif op == "neq":
                if v == arg:
                    return False
            elif op == "lt":
                if not v < arg:
                    return False
            elif op == "lte":
                if not v <= arg:
                    return False
            elif op == "gt":
                if not v > arg:
                    return False
            elif op == "gte":
                if not v >= arg:
                    return False
            elif op == "in":
                if v not in arg:
                    return False
        return True

    def key(self, values, position):
        """The element's place in ascending order: (position,) without a
        sort; (null last, value, position) with one."""
        if self.sort is None:
            return (position,)
        v = values.get(self.sort[0])
        return (1, None, position) if v is None else (0, v, position)

    def shown(self, values):
        if self.fields is None:
            return dict(values)
        return {k: values[k] for k in ["id", *self.fields] if k in values}


def quote(param):
    name, _, value = param.partition("=")
    return name + "=" + urllib.parse.quote(value, safe="(),.-_~:")


def parse_value(collection, field, op, raw):
    kind = COLLECTIONS[collection]["fields"][field]
    if op in ("is.null", "not.is.null"):
        return None

    def one(text):
        if kind == "integer":
            return int(text)
        if kind == "boolean":
            return {"true": True, "false": False}[text]
        return text

    if op == "in":
        assert raw.startswith("(") and raw.endswith(")"), raw
        return {one(item) for item in raw[1:-1].split(",")}
    return one(raw)


class Window:
    """A query read's window in ascending key order: lo/hi a key or None
    (open), each inclusive or not (the contract: from the first element
    shown to the last, open at the start without `after`, which starts just
    past the cursor's element, open at the end without a Link)."""

    def __init__(self, query, shown_keys, more):
        start, start_inclusive = (None, False) if query.after is None else (query.cursor_key, False)
        end = shown_keys[-1] if more else None
        self.start, self.end = start, end       # in the order shown
        if query.descending:
            self.lo, self.lo_in, self.hi, self.hi_in = end, True, start, start_inclusive
        else:
            self.lo, self.lo_in, self.hi, self.hi_in = start, start_inclusive, end, True

    def holds(self, key):
        if self.lo is not None and (key < self.lo or (key == self.lo and not self.lo_in)):
            return False
        if self.hi is not None and (key > self.hi or (key == self.hi and not self.hi_in)):
            return False
        return True

    def __str__(self):
        return (("(-inf" if self.lo is None else ("[" if self.lo_in else "(") + str(self.lo)) + ", " +
                ("+inf)" if self.hi is None else str(self.hi) + ("]" if self.hi_in else ")")))


# ---------------------------------------------------------------- the model

class Model:
    """Every element of the three collections (values as the server shows
    them, and position), and the observers of each with the copy the
    contract says each holds."""

    def __init__(self, template):
        with sqlite3.connect(template) as db:
            self.orders = {i: (d, q, p) for i, p, d, q in
                           db.execute("SELECT id, position, donut_id, quantity FROM orders")}
            self.donuts = {i: ({"id": i, "name": n, "dough": d, "glaze": g, "topping": t}, p) for i, p, n, d, g, t in
                           db.execute("SELECT id, position, name, dough, glaze, topping FROM donuts")}
            self.jobs = {i: (job_values(i, c, t), p) for i, p, c, t in
                         db.execute("SELECT id, position, current, total FROM jobs")}
        self.top = {"orders": max(p for _, _, p in self.orders.values()),
                    "donuts": max(p for _, p in self.donuts.values()),
                    "jobs": max((p for _, p in self.jobs.values()), default=0)}
        self.live_orders = list(self.orders)
        self.order_index = {o: k for k, o in enumerate(self.live_orders)}
        self.observers = {c: [] for c in COLLECTIONS}
        self.holders = {c: collections.defaultdict(set) for c in COLLECTIONS}

    def element(self, collection, id):
        """(values, position) or None."""
        if collection == "orders":
            row = self.orders.get(id)
            return None if row is None else ({"id": id, "donutId": row[0], "quantity": row[1]}, row[2])
        return (self.donuts if collection == "donuts" else self.jobs).get(id)

    def put(self, collection, id, values, position=None):
        """Stores an element (new: at the top) or removes it (values None)."""
        if collection == "orders":
            if values is None:
                del self.orders[id]
                k = self.order_index.pop(id)
                moved = self.live_orders.pop()
                if moved != id:
                    self.live_orders[k] = moved
                    self.order_index[moved] = k
            else:
                self.top["orders"] += 1
                self.orders[id] = (values["donutId"], values["quantity"], self.top["orders"])
                self.order_index[id] = len(self.live_orders)
                self.live_orders.append(id)
            return
        table = self.donuts if collection == "donuts" else self.jobs
        if values is None:
            del table[id]
        elif id in table:
            table[id] = (values, table[id][1])
        else:
            self.top[collection] += 1
            table[id] = (values, self.top[collection])

    def add_observer(self, observer):
        self.observers[observer.query.collection].append(observer)
        for id in observer.expected:
            self.holders[observer.query.collection][id].add(observer)

    def concerned(self, collection, id, before, after):
        """{observer: what it must hear} for a write taking element `id`
        from `before` to `after` ((values, position) or None)."""
        out = {}
        if before is None:
            values, position = after
            for o in self.observers[collection]:
                if o.admits(values, position):
                    out[o] = "insert"
            return out
        if after is None:
            return {o: "remove" for o in self.holders[collection].get(id, ())}
        for o in self.observers[collection]:
            b = id in o.expected
            if b != o.admits(*before):
                raise AssertionError(f"model: {o.query.url()} holds {id}: {b}, admits it: {not b}")
            a = o.admits(*after)
            if b and not a:
                out[o] = "remove"
            elif a and not b:
                out[o] = "insert"
            elif a and b and o.query.shown(before[0]) != o.query.shown(after[0]):
                out[o] = "set"
        return out

    def apply(self, collection, id, after, concerned):
        """The copies after the write."""
        holders = self.holders[collection]
        for o, op in concerned.items():
            if op == "remove":
                del o.expected[id]
                holders[id].discard(o)
            else:
                o.expected[id] = o.query.shown(after[0])
                holders[id].add(o)
        if after is None:
            holders.pop(id, None)


def job_values(id, current, total):
    return {"id": id, "progress": {"current": current, "total": total}, "isComplete": current >= total}


class Observer:
    """An observer holding one query read: the window, the copy the model
    expects (`expected`), and the copy its answers and changes made (`copy`)."""

    def __init__(self, id, query, cursor, window, shown):
        self.id, self.query, self.cursor, self.window = id, query, cursor, window
        self.kind = f"{query.collection} {query.kind} {query.url()}"
        self.expected = {e["id"]: e for e in shown}
        self.copy = {e["id"]: e for e in shown}
        self.poll = None

    @property
    def low(self):     # for shapes.Stream's messages: "[low, high]"
        return f"window {self.window}"

    @property
    def high(self):
        return f"holding {len(self.expected)}"

    def admits(self, values, position):
        return self.query.matches(values) and self.window.holds(self.query.key(values, position))


class QueryPoll(ParkedPoll):
    timeout = 3600


class UnsharedPoll(QueryPoll):
    """A poll the server answers with an answer of its own: one with CORS
    headers (an Origin, with OBSERVABLE_CORS_ORIGINS=*) is never given the
    answer built for another poll woken by the same change."""
    headers = "Origin: http://bench.invalid\r\n"


class QueryStream(Stream):
    """shapes.Stream, keeping each answer for the checks of its content."""

    poll_class = QueryPoll

    def __init__(self, *args, **kwargs):
        self.replies = {}
        super().__init__(*args, **kwargs)

    def answers(self, wanted, until):
        got = super().answers(wanted, until)
        for fd, (_, reply) in got.items():
            self.replies[self.by_fd[fd]] = reply
        return got


# ---------------------------------------------------------------- oracle

class OrderOracle:
    """The orders of the template in an indexed SQLite copy: the answer a
    query read must give at setup time."""

    def __init__(self, template, workdir):
        path = os.path.join(workdir, os.path.basename(template).replace(".sqlite", "-oracle.sqlite"))
        if not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(template):
            started = time.perf_counter()
            remove_database(path)
            with sqlite3.connect(template) as source, sqlite3.connect(path) as db:
                db.execute("CREATE TABLE orders (id TEXT, position INTEGER, donutId TEXT, quantity INTEGER)")
                db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)",
                               source.execute("SELECT id, position, donut_id, quantity FROM orders"))
                db.execute("CREATE INDEX by_position ON orders (position)")
                db.execute("CREATE INDEX by_quantity ON orders (quantity, position)")
                db.execute("CREATE INDEX by_donut ON orders (donutId, position)")
                db.execute("CREATE INDEX by_donut_quantity ON orders (donutId, quantity, position)")
            log(f"oracle indexed in {time.perf_counter() - started:.1f} s")
        self.db = sqlite3.connect(path)

    def answer(self, query):
        """([(values, position)] shown, more follow)."""
        where, args = [], []
        sql_op = {"eq": "=", "neq": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
        for field, op, _, value in query.conds:
            if op == "is.null":
                where.append(f"{field} IS NULL")
            elif op == "not.is.null":
                where.append(f"{field} IS NOT NULL")
            elif op == "in":
                where.append(f"{field} IN ({','.join('?' * len(value))})")
                args += sorted(value)
            else:
                where.append(f"{field} {sql_op[op]} ?")
                args.append(value)
        direction = "DESC" if query.descending else "ASC"
        if query.sort:
            columns = [query.sort[0], "position"]
        else:
            columns = ["position"]
        if query.after is not None:
            key = query.cursor_key if query.sort else (query.cursor_key[0],)
            values = list(key[1:]) if query.sort else list(key)
            where.append(f"({', '.join(columns)}) {'<' if query.descending else '>'} ({', '.join('?' * len(columns))})")
            args += values
        sql = "SELECT id, donutId, quantity, position FROM orders"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY " + ", ".join(f"{c} {direction}" for c in columns)
        if query.limit is not None:
            sql += f" LIMIT {query.limit + 1}"
        rows = [({"id": i, "donutId": d, "quantity": q}, p) for i, d, q, p in self.db.execute(sql, args)]
        if query.limit is not None and len(rows) > query.limit:
            return rows[:query.limit], True
        return rows, False


def python_answer(query, elements):
    """The same for donuts and jobs: over `elements` {id: (values, position)}."""
    rows = [(v, p) for v, p in elements.values() if query.matches(v)]
    rows.sort(key=lambda r: query.key(*r), reverse=query.descending)
    if query.after is not None:
        if query.descending:
            rows = [r for r in rows if query.key(*r) < query.cursor_key]
        else:
            rows = [r for r in rows if query.key(*r) > query.cursor_key]
    if query.limit is not None and len(rows) > query.limit:
        return rows[:query.limit], True
    return rows, False


# ---------------------------------------------------------------- seeding

def prepare_data(rng, donut_count, job_count):
    """What `shapes.seed` runs through the API before the orders: donuts and
    jobs. Returns (prepare, order_of)."""
    made = list(DONUTS)

    def prepare(client):
        for k in range(donut_count):
            body = {"name": f"Donut {k}", "dough": rng.choice(DOUGHS), "glaze": rng.choice(GLAZES),
                    "topping": rng.choice(TOPPINGS)}
            status, _, answer = client.request("POST", "/truck/donuts", body)
            assert status == 201, (status, answer)
            made.append(answer["id"])
        for k in range(job_count):
            total = rng.choice([10, 100, 1000])
            status, _, job = client.request("POST", "/jobs", {"total": total})
            assert status == 201, (status, job)
            r = rng.random()
            current = total if r < 0.45 else (rng.randrange(1, total) if r < 0.7 else 0)
            if current:
                status, _, _ = client.request("POST", f"/jobs/{job['id']}/progress", {"current": current})
                assert status == 200, status
        log(f"made {donut_count} donuts and {job_count} jobs")

    def order_of(k):
        return made[rng.randrange(len(made))], rng.randint(1, 1000)

    return prepare, order_of


# ---------------------------------------------------------------- queries to hold

ORDER_MIX = {"donut": 15, "donut-open": 5, "range": 15, "top": 10, "donut-sorted": 20, "in": 10, "below": 5, "neq": 5,
             "next": 15}


def order_query(rng, donuts, kind=None, mix=ORDER_MIX):
    kind = kind or rng.choices(list(mix), list(mix.values()))[0]
    X = lambda: rng.choice(donuts)
    if kind == "donut":
        return Query("orders", kind, [("donutId", "eq", X())], order=rng.choice([None, "asc", "desc"]),
                     limit=rng.randint(5, 50))
    if kind == "donut-open":
        return Query("orders", kind, [("donutId", "eq", X()), ("quantity", "gte", str(rng.randint(985, 1000)))])
    if kind == "range":
        a = rng.randint(1, 1000)
        b = min(1000, a + rng.randint(0, 50))
        return Query("orders", kind, [("quantity", "gte", str(a)), ("quantity", "lte", str(b))],
                     order=rng.choice([None, "desc"]), limit=20)
    if kind == "top":
        return Query("orders", kind, sort=("quantity", rng.random() < 0.6), limit=rng.randint(1, 200),
                     fields=rng.choice([None, ["quantity"], ["donutId", "quantity"]]))
    if kind == "donut-sorted":
        desc = rng.random() < 0.5
        return Query("orders", kind, [("donutId", "eq", X())], sort=("quantity", desc),
                     limit=10 if rng.random() < 0.3 else rng.randint(1, 40))
    if kind == "in":
        return Query("orders", kind, [("donutId", "in", f"({X()},{X()})"), ("quantity", "gt", str(rng.randint(1, 999)))],
                     order=rng.choice([None, "desc"]), limit=20)
    if kind == "below":
        return Query("orders", kind, [("quantity", "lt", str(rng.randint(2, 1000)))], sort=("quantity", True), limit=20)
    if kind == "neq":
        return Query("orders", kind, [("quantity", "eq", str(rng.randint(1, 1000))), ("donutId", "neq", X())],
                     order="desc", limit=20)
    # next: the second page of one of the others (those of the mix)
    bases = [k for k in ("donut", "top", "donut-sorted", "range") if mix.get(k)] or ["donut"]
    first = order_query(rng, donuts, rng.choices(bases, [mix[k] if k in mix else 1 for k in bases])[0])
    first.kind = "next"
    return first


def donut_query(rng, kind=None):
    kinds = ["glaze", "null", "not-null", "in", "dough-topping", "sorted", "dough-sorted", "text-range", "next"]
    weights = [20, 8, 10, 10, 10, 15, 10, 7, 10]
    kind = kind or rng.choices(kinds, weights)[0]
    glaze = lambda: rng.choice([g for g in GLAZES if g])
    fields = lambda *must: rng.choice([None, None, sorted({"name", *must}), sorted({"glaze", *must})])
    limit = lambda: rng.choice([None, rng.randint(1, 30)])
    if kind == "glaze":
        return Query("donuts", kind, [("glaze", "eq", glaze())], limit=limit(), fields=fields(),
                     order=rng.choice([None, "desc"]))
    if kind == "null":
        return Query("donuts", kind, [("glaze", "is.null", None)], limit=limit(), fields=fields())
    if kind == "not-null":
        return Query("donuts", kind, [("glaze", "not.is.null", None)], limit=rng.randint(1, 30), fields=fields(),
                     order=rng.choice([None, "desc"]))
    if kind == "in":
        return Query("donuts", kind, [("glaze", "in", f"({glaze()},{glaze()})")], limit=limit(), fields=fields())
    if kind == "dough-topping":
        return Query("donuts", kind, [("dough", "eq", rng.choice(DOUGHS)),
                                      ("topping", rng.choice(["is.null", "not.is.null"]), None)],
                     limit=limit(), fields=fields("dough"))
    if kind == "sorted":
        return Query("donuts", kind, sort=("glaze", rng.random() < 0.5), limit=rng.randint(1, 40),
                     fields=fields("glaze"))
    if kind == "dough-sorted":
        return Query("donuts", kind, [("dough", "eq", rng.choice(DOUGHS))], sort=("topping", rng.random() < 0.5),
                     limit=rng.randint(1, 20), fields=fields("topping"))
    if kind == "text-range":
        a, b = sorted(rng.sample("abcdefghijklmnopqrstuvwxyz", 2))
        return Query("donuts", kind, [("glaze", "gte", a), ("glaze", "lt", b)], limit=limit(), fields=fields())
    first = donut_query(rng, rng.choice(["sorted", "not-null", "glaze"]))
    first.kind = "next"
    if first.limit is None:
        first.limit = rng.randint(1, 10)
    return first


def job_query(rng, positions, kind=None):
    kinds = ["incomplete", "complete", "neq", "in", "sorted", "fields", "middle", "next"]
    weights = [30, 10, 8, 8, 14, 12, 8, 10]
    kind = kind or rng.choices(kinds, weights)[0]
    order = lambda: rng.choice([None, "asc", "desc"])
    if kind == "incomplete":
        return Query("jobs", kind, [("isComplete", "eq", "false")], order=order(), limit=rng.randint(1, 100))
    if kind == "complete":
        return Query("jobs", kind, [("isComplete", "eq", "true")], order=order(), limit=rng.randint(1, 100))
    if kind == "neq":
        return Query("jobs", kind, [("isComplete", "neq", "true")], order=order(), limit=rng.randint(1, 50))
    if kind == "in":
        return Query("jobs", kind, [("isComplete", "in", rng.choice(["(false)", "(true,false)"]))], order=order(),
                     limit=rng.randint(1, 50))
    if kind == "sorted":
        return Query("jobs", kind, sort=("isComplete", rng.random() < 0.5), limit=rng.randint(1, 60),
                     fields=rng.choice([None, ["isComplete"]]))
    if kind == "fields":
        return Query("jobs", kind, [("isComplete", "eq", "false")], order=order(), limit=rng.randint(1, 60),
                     fields=[rng.choice(["isComplete", "progress"])])
    if kind == "middle":
        q = Query("jobs", kind, [("isComplete", "eq", rng.choice(["false", "true"]))], order=rng.choice(["asc", "desc"]),
                  limit=rng.randint(1, 30))
        q.after = str(rng.choice(positions))
        q.cursor_key = (int(q.after),)
        return q
    first = job_query(rng, positions, rng.choice(["incomplete", "sorted", "complete"]))
    first.kind = "next"
    return first


# ---------------------------------------------------------------- setup

class Setup:
    """Makes observers and their query reads on one server, checking each
    answer against the model."""

    def __init__(self, client, model, oracle, failures):
        self.client, self.model, self.oracle, self.failures = client, model, oracle, failures
        self.read_ms = collections.defaultdict(list)

    def expected(self, query):
        if query.collection == "orders":
            return self.oracle.answer(query)
        return python_answer(query, self.model.donuts if query.collection == "donuts" else self.model.jobs)

    def follow(self, query):
        """For a second page: reads the first (untracked), takes the `after`
        of its Link and the key of its last element. False when no Link."""
        status, headers, body = self.client.request("GET", query.url())
        if status != 200:
            self.failures.append(f"GET {query.url()}: {status} {body}")
            return False
        link = headers.get("link")
        if not link:
            return False
        target = link.split(">")[0].lstrip("<")
        after = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query).get("after")
        if not after:
            self.failures.append(f"GET {query.url()}: Link without after: {link}")
            return False
        rows, more = self.expected(query)
        if not more:
            self.failures.append(f"GET {query.url()}: a Link ({link}) where no more follow")
            return False
        query.cursor_key = query.key(*rows[-1])
        query.after = urllib.parse.quote(after[0], safe="")
        return True

    def read(self, observer_id, query):
        """The tracked read: an Observer, or None (failure noted)."""
        url = query.url()
        started = time.perf_counter()
        status, headers, body = self.client.request("GET", url, headers={"Observer": observer_id})
        self.read_ms[f"{query.collection} {query.kind}"].append((time.perf_counter() - started) * 1000)
        if status != 200:
            self.failures.append(f"GET {url}: {status} {body}")
            return None
        rows, more = self.expected(query)
        name = "orders" if query.collection == "orders" else query.collection
        got = body.get(name) if isinstance(body, dict) else None
        want = [query.shown(v) for v, _ in rows]
        if got != want:
            self.failures.append(f"GET {url}: {len(got or [])} elements, {len(want)} expected; first differing: "
                                 f"{next(((g, w) for g, w in zip(got or [], want) if g != w), None)}")
        if ("link" in headers) != more:
            self.failures.append(f"GET {url}: Link {headers.get('link')!r}, more follow: {more}")
        window = Window(query, [query.key(*r) for r in rows], more)
        return Observer(observer_id, query, int(headers["observation-cursor"]), window, want)

    def check_shape(self, observer):
        """The server's account of the window (GET /observers/{id})."""
        _, _, body = self.client.request("GET", f"/observers/{observer.id}")
        shapes_ = (body or {}).get("shapes") or []
        q, w = observer.query, observer.window
        if len(shapes_) != 1:
            return f"observer {observer.id} ({q.url()}): shapes {shapes_}"
        shape = shapes_[0]
        told_query = shape.get("query")
        if told_query not in q.canonical_forms():
            return f"observer {observer.id} ({q.url()}): shape query {told_query!r}, {q.canonical()!r} expected"
        # `from` and `through` are the window's start and end in the order
        # shown (the cursor's element past which it starts, the last element
        # shown when more follow): positions without a sort, cursor tokens with one.
        told = (shape.get("from"), shape.get("through"))
        if q.sort is None:
            want = tuple(None if k is None else k[0] for k in (w.start, w.end))
            if told != want:
                return f"observer {observer.id} ({q.url()}): window from {told[0]} through {told[1]}, {want} expected"
        elif (told[0] is None, told[1] is None) != (w.start is None, w.end is None):
            return (f"observer {observer.id} ({q.url()}): window from {told[0]} through {told[1]}, "
                    f"{'open' if w.start is None else 'closed'} / {'open' if w.end is None else 'closed'} expected")
        return None


def make_queries(rng, model, counts, order_mix=ORDER_MIX):
    """Distinct queries for each collection (orders: all distinct; the
    others as distinct as 50 tries make them)."""
    donuts = sorted(model.donuts)
    job_positions = sorted(p for _, p in model.jobs.values())
    out = {}
    for collection, count in counts.items():
        seen, queries = set(), []
        while len(queries) < count:
            for _ in range(50):
                if collection == "orders":
                    q = order_query(rng, donuts, mix=order_mix)
                elif collection == "donuts":
                    q = donut_query(rng)
                else:
                    q = job_query(rng, job_positions)
                if (q.url(), q.kind) not in seen:
                    break
            seen.add((q.url(), q.kind))
            queries.append(q)
        out[collection] = queries
    return out


def idle(server, seconds=60):
    """Until the server used no CPU for half a second (its read journal folded)."""
    last = cpu_seconds(server.pid)
    for _ in range(int(seconds * 2)):
        time.sleep(0.5)
        now = cpu_seconds(server.pid)
        if now - last < 0.005:
            return
        last = now


def registry_bytes(client):
    return int(client.metric("observable_registry_bytes"))


def latency_kinds(rng, model, oracle):
    """A few kinds of query read, each with fresh parameters per read."""
    donuts = sorted(model.donuts)
    return {
        "page, no query: limit=20&order=desc": lambda: Query("orders", "", order="desc", limit=20),
        "donutId=eq.X&limit=20": lambda: Query("orders", "", [("donutId", "eq", rng.choice(donuts))], limit=20),
        "donutId=eq.X&order=desc&limit=20": lambda: Query("orders", "", [("donutId", "eq", rng.choice(donuts))],
                                                           order="desc", limit=20),
        "quantity=gte.A&quantity=lte.A+10&limit=20": lambda: (lambda a: Query(
            "orders", "", [("quantity", "gte", str(a)), ("quantity", "lte", str(a + 10))], limit=20))(rng.randint(1, 990)),
        "sort=-quantity&limit=L (L 10-30)": lambda: Query("orders", "", sort=("quantity", True), limit=rng.randint(10, 30)),
        "donutId=eq.X&sort=quantity&limit=10": lambda: Query("orders", "", [("donutId", "eq", rng.choice(donuts))],
                                                              sort=("quantity", False), limit=10),
        "quantity=lt.A&sort=-quantity&limit=20": lambda: Query("orders", "", [("quantity", "lt", str(rng.randint(2, 1000)))],
                                                                sort=("quantity", True), limit=20),
        "donutId=in.(X,Y)&quantity=gt.A&limit=20": lambda: Query(
            "orders", "", [("donutId", "in", f"({rng.choice(donuts)},{rng.choice(donuts)})"),
                           ("quantity", "gt", str(rng.randint(1, 999)))], limit=20),
        "quantity=eq.Q&order=desc&limit=20": lambda: Query("orders", "", [("quantity", "eq", str(rng.randint(1, 1000)))],
                                                            order="desc", limit=20),
    }


def measure_latency(client, server, setup, rng, model, oracle, reads, seconds, failures):
    """Untracked query reads: p50/p99 ms (client side) and server CPU per
    read; `reads` of each kind, or as many as `seconds` allow (at least 3)."""
    out = {}
    for name, make in latency_kinds(rng, model, oracle).items():
        times = []
        cpu = cpu_seconds(server.pid)
        until = time.perf_counter() + seconds
        for k in range(reads):
            if k >= 3 and time.perf_counter() > until:
                break
            q = make()
            started = time.perf_counter()
            status, _, body = client.exchange("GET", q.url())
            times.append((time.perf_counter() - started) * 1000)
            if status != 200:
                failures.append(f"GET {q.url()}: {status} {bytes(body[:200])!r}")
                break
        cpu = cpu_seconds(server.pid) - cpu
        out[name] = {"reads": len(times), "p50_ms": round(percentile(times, 50), 2),
                     "p99_ms": round(percentile(times, 99), 2), "cpu_per_read_us": round(cpu / max(1, len(times)) * 1e6, 1)}
        log(f"{name}: {out[name]}")
    # A sorted page past a token taken from a Link: p50/p99.
    times = []
    until = time.perf_counter() + 2 * seconds
    for k in range(max(1, reads // 4)):
        if k >= 2 and time.perf_counter() > until:
            break
        q = Query("orders", "", sort=("quantity", True), limit=rng.randint(1, 500))
        status, headers, _ = client.request("GET", q.url())
        link = headers.get("link", "")
        after = urllib.parse.parse_qs(urllib.parse.urlsplit(link.split(">")[0].lstrip("<")).query).get("after")
        if status != 200 or not after:
            failures.append(f"GET {q.url()}: {status}, Link {link!r}")
            break
        target = f"/truck/orders?sort=-quantity&limit=20&after={urllib.parse.quote(after[0], safe='')}"
        started = time.perf_counter()
        status, _, _ = client.exchange("GET", target)
        times.append((time.perf_counter() - started) * 1000)
    if times:
        out["sort=-quantity&limit=20&after=TOKEN (from a Link)"] = {
            "reads": len(times), "p50_ms": round(percentile(times, 50), 2), "p99_ms": round(percentile(times, 99), 2)}
    return out


# ---------------------------------------------------------------- writes

class Writes:
    """Makes each write from the model (random, seeded), sends it through a
    Stream, and checks the answers' content. `replay` instead sends the
    writes recorded by an earlier run, mapping the ids made then to the ids
    made now."""

    def __init__(self, model, stream, rng, failures):
        self.model, self.stream, self.rng, self.failures = model, stream, rng, failures
        self.recorded = []
        self.per_kind = collections.defaultdict(list)   # kind: [wake-ups]
        self.latencies, self.last = [], []
        self.content_failures = 0
        self.content_problems = collections.Counter()
        self.canonical_forms = collections.Counter()

    # -- choosing a write

    def choose(self):
        m, rng = self.model, self.rng
        kinds = ["order+", "order-", "job done", "job progress", "job+", "job-", "donut glaze", "donut topping",
                 "donut dough", "donut name", "donut+"]
        weights = [25, 25, 8, 5, 4, 3, 12, 6, 4, 4, 4]
        kind = rng.choices(kinds, weights)[0]
        if kind == "order+":
            r = rng.random()
            q = 1000 if r < 0.05 else (rng.randint(1, 3) if r < 0.1 else rng.randint(1, 1000))
            body = {"donutId": rng.choice(sorted(m.donuts)) if rng.random() < 0.1 else rng.choice(list(DONUTS) + sorted(m.donuts)[:50]),
                    "quantity": q}
            return kind, "orders", None, "POST", "/truck/orders", body
        if kind == "order-":
            held = [i for i, s in m.holders["orders"].items() if s]
            order = rng.choice(held) if held and rng.random() < 0.5 else m.live_orders[rng.randrange(len(m.live_orders))]
            return kind, "orders", order, "DELETE", f"/truck/orders/{order}", None
        if kind.startswith("job"):
            open_jobs = sorted(i for i, (v, _) in m.jobs.items() if not v["isComplete"])
            if kind == "job+" or not open_jobs:
                return "job+", "jobs", None, "POST", "/jobs", {"total": rng.choice([10, 100, 1000])}
            if kind == "job-":
                job = rng.choice(sorted(m.jobs))
                return kind, "jobs", job, "DELETE", f"/jobs/{job}", None
            job = rng.choice(open_jobs)
            values = m.jobs[job][0]
            total, current = values["progress"]["total"], values["progress"]["current"]
            if kind == "job progress" and current + 1 < total:
                target = rng.randint(current + 1, total - 1)
            else:
                kind, target = "job done", total
            return kind, "jobs", job, "POST", f"/jobs/{job}/progress", {"current": target}
        if kind == "donut+":
            body = {"name": f"New {rng.random():.6f}", "dough": rng.choice(DOUGHS), "glaze": rng.choice(GLAZES),
                    "topping": rng.choice(TOPPINGS)}
            return kind, "donuts", None, "POST", "/truck/donuts", body
        donut = rng.choice(sorted(m.donuts))
        values = m.donuts[donut][0]
        field = kind.split()[1]
        choices = {"glaze": GLAZES, "topping": TOPPINGS, "dough": DOUGHS}.get(field)
        if choices is None:
            new = f"Renamed {rng.random():.6f}"
        elif rng.random() < 0.1:
            new = values[field]         # the value it has: no change, nobody woken
        else:
            new = rng.choice([c for c in choices if c != values[field]])
        return kind, "donuts", donut, "PATCH", f"/truck/donuts/{donut}", {field: new}

    def predicted(self, collection, id, method, body):
        """(values, position) after the write, or None."""
        m = self.model
        if method == "DELETE":
            return None
        if method == "POST" and id is None:
            if collection == "orders":
                values = {"id": "?", **body}
            elif collection == "jobs":
                values = job_values("?", 0, body["total"])
            else:
                values = {"id": "?", **body}
            return values, m.top[collection] + 1
        values, position = m.element(collection, id)
        if collection == "jobs":
            return job_values(id, body["current"], values["progress"]["total"]), position
        return {**values, **body}, position

    # -- one write

    def run(self, count, record=True):
        m = self.model
        for w in range(count):
            kind, collection, id, method, path, body = self.choose()
            before = m.element(collection, id) if id else None
            after = self.predicted(collection, id, method, body)
            concerned = m.concerned(collection, id, before, after)
            mark = id
            self.stream.replies = {}
            status, answer, woke, failed = self.stream.write(method, path, body, list(concerned), mark)
            want = {"POST": 201 if id is None else 200, "DELETE": 204, "PATCH": 200}[method]
            if status != want:
                failed.append(f"{method} {path} {body}: {status} {answer}")
                self.failures += [f"write {w} ({kind}): {f}" for f in failed]
                continue
            if id is None:
                id = answer["id"]
                after = ({**after[0], "id": id}, after[1])
                self.recorded.append((kind, collection, None, method, path, body, id))
            else:
                self.recorded.append((kind, collection, id, method, path, body, None))
            if after is not None and collection != "orders" and answer != after[0]:
                failed.append(f"{method} {path} {body} answered {answer}, the model says {after[0]}")
            # The copies: the model's, and each woken observer's from its answer.
            m.apply(collection, id, after, concerned)
            m.put(collection, id, None if after is None else after[0])
            failed += self.check_content(collection, id, concerned)
            self.per_kind[kind].append(len(concerned))
            if not self.stream.stalled_write:
                self.latencies += woke
                if woke:
                    self.last.append(max(woke))
            self.failures += [f"write {w} ({kind} {method} {path} {json.dumps(body)}): {f}" for f in failed]
            if not self.stream.server.alive():
                self.failures.append(f"write {w}: the server exited")
                break

    def check_content(self, collection, id, concerned):
        """Each woken observer's changes, applied to its copy, must leave it
        equal to the model's; each change names the observer's query."""
        out = []
        base = COLLECTIONS[collection]["path"]
        for o, op in concerned.items():
            reply = self.stream.replies.get(o)
            if reply is None:
                continue    # not woken: counted by the stream
            problems = []
            for change in reply["changes"]:
                told = change.get("query")
                self.canonical_forms[o.query.form_of(told) or "other"] += 1
                if told not in o.query.canonical_forms():
                    problems.append(f"query {told!r}, {o.query.canonical()!r} expected")
                kind = change.get("op")
                if kind == "insert" and change.get("path") == base:
                    new = change.get("new") or {}
                    if new.get("id") in o.copy:
                        problems.append(f"insert of {new.get('id')}, already in the copy")
                    o.copy[new.get("id")] = new
                elif kind == "remove" and change.get("path") == base:
                    old = change.get("old") or {}
                    if o.copy.get(old.get("id")) != old:
                        problems.append(f"remove of {old}, the copy holds {o.copy.get(old.get('id'))}")
                    o.copy.pop(old.get("id"), None)
                elif kind == "set" and change.get("path", "").startswith(base + "/"):
                    element, _, field = change["path"][len(base) + 1:].partition("/")
                    if element not in o.copy:
                        problems.append(f"set {change['path']}: not in the copy")
                        continue
                    if o.copy[element].get(field) != change.get("old"):
                        problems.append(f"set {change['path']}: old {change.get('old')!r}, the copy holds "
                                        f"{o.copy[element].get(field)!r}")
                    o.copy[element] = {**o.copy[element], field: change.get("new")}
                else:
                    problems.append(f"unexpected change {change}")
            if o.copy != o.expected:
                diff = {k for k in o.copy.keys() | o.expected.keys() if o.copy.get(k) != o.expected.get(k)}
                problems.append(f"copy differs from the model's ({op} expected) at {sorted(diff)[:3]}: "
                                f"copy {[o.copy.get(k) for k in sorted(diff)[:2]]}, model "
                                f"{[o.expected.get(k) for k in sorted(diff)[:2]]}")
                o.copy = dict(o.expected)     # report once
            for problem in problems:
                self.content_problems[problem.split(" ")[0] if not problem.startswith("copy") else "copy differs"] += 1
            if problems:
                self.content_failures += 1
                out.append(f"observer {o.id} ({o.query.url()}, window {o.window}): {'; '.join(problems)}; "
                           f"changes {json.dumps(reply['changes'])[:600]}")
        return out

    def replay(self, recorded):
        """The recorded writes again (nobody parked): ids made then are mapped to those made now."""
        made = {}
        for kind, collection, id, method, path, body, new_id in recorded:
            for old, new in made.items():
                if old in path:
                    path = path.replace(old, new)
                if body and any(v == old for v in body.values()):
                    body = {k: (new if v == old else v) for k, v in body.items()}
            status, answer, _, failed = self.stream.write(method, path, body, [], None)
            if new_id is not None and answer:
                made[new_id] = answer["id"]
            self.per_kind[kind].append(0)
            self.failures += [f"replay {method} {path}: {f}" for f in failed]

    def figures(self, count):
        all_ = [n for v in self.per_kind.values() for n in v]
        out = {"writes": len(all_), "cpu_per_write_us": round(self.stream.cpu_spent / max(1, len(all_)) * 1e6, 1),
               "wakeups": {"total": sum(all_), "mean": round(statistics.mean(all_), 2) if all_ else 0,
                           "p50": percentile(all_, 50) if all_ else 0, "p99": percentile(all_, 99) if all_ else 0,
                           "max": max(all_, default=0)},
               "per_kind": {k: {"writes": len(v), "wakeups_mean": round(statistics.mean(v), 2), "wakeups_max": max(v)}
                            for k, v in sorted(self.per_kind.items())},
               "content_failures": self.content_failures, "content_problems": dict(self.content_problems),
               "canonical_query_forms": dict(self.canonical_forms)}
        if self.latencies:
            out["wake_ms"] = {"p50": round(percentile(self.latencies, 50), 2),
                              "p99": round(percentile(self.latencies, 99), 2), "max": round(max(self.latencies), 2)}
            out["last_wake_ms"] = {"p50": round(percentile(self.last, 50), 2), "p99": round(percentile(self.last, 99), 2)}
        return out


# ---------------------------------------------------------------- after the writes

def final_checks(client, model, rng, sample):
    """(1) The model against itself: for a sample of observers, the copy it
    kept write by write equals the elements of the model that match and lie
    in the window now (a bug of this script shows here). (2) The contract's
    check: each sampled observer's copy (its answer with the changes it
    heard applied) equals a fresh GET of the same query restricted to its
    window (the keys of the elements from the model); for the queries on
    jobs and donuts, and the orders' queries without a limit."""
    failures = []
    checked = collections.Counter()
    for collection, observers in model.observers.items():
        picked = rng.sample(observers, min(sample if collection == "orders" else 4 * sample, len(observers)))
        for o in picked:
            q = o.query
            if collection == "orders":
                elements = (({"id": i, "donutId": d, "quantity": n}, p) for i, (d, n, p) in model.orders.items())
            else:
                elements = (model.donuts if collection == "donuts" else model.jobs).values()
            want = {v["id"]: q.shown(v) for v, p in elements if o.admits(v, p)}
            if want != o.expected:
                failures.append(f"model self-check: {q.url()} window {o.window}: the model's copy "
                                f"{sorted(o.expected)[:3]}… ({len(o.expected)}), recomputed {sorted(want)[:3]}… ({len(want)})")
            checked["model"] += 1
            if collection == "orders" and q.limit is not None:
                continue
            fresh = Query(collection, q.kind, [(f, op, raw) for f, op, raw, _ in q.conds], sort=q.sort, order=q.order,
                          fields=q.fields)
            status, _, body = client.request("GET", fresh.url())
            if status != 200:
                failures.append(f"final GET {fresh.url()}: {status} {body}")
                continue
            shown = {}
            for e in body[collection]:
                element = model.element(collection, e["id"])
                if element is None:
                    failures.append(f"final GET {fresh.url()}: {e['id']} is no element the model knows")
                elif o.window.holds(q.key(element[0], element[1])):
                    shown[e["id"]] = e
            if shown != o.copy:
                diff = sorted(k for k in shown.keys() | o.copy.keys() if shown.get(k) != o.copy.get(k))
                failures.append(f"final check: observer {o.id} ({q.url()}, window {o.window}): its copy and a fresh read "
                                f"differ at {diff[:3]}: copy {[o.copy.get(k) for k in diff[:2]]}, "
                                f"read {[shown.get(k) for k in diff[:2]]}")
            checked["fresh"] += 1
    return dict(checked), failures


# ---------------------------------------------------------------- scenarios

def observed_scenario(args, template, workdir, failures):
    result = {"binary": args.binary}
    model = Model(template)
    oracle = OrderOracle(template, workdir)
    path = os.path.join(workdir, "queries.sqlite")
    copy_database(template, path)
    server = start_server(args.binary, path, workdir, SERVER_FLAGS)
    try:
        client = client_of(server.port)
        result["start_s"] = round(server.startup_seconds, 2)
        _, _, count = client.request("GET", "/truck/orderCount")
        if (count or {}).get("orderCount") != len(model.orders):
            failures.append(f"orderCount {count}, {len(model.orders)} expected")
        rng = random.Random(args.seed)
        setup = Setup(client, model, oracle, failures)
        log("query read latency")
        result["read_latency"] = measure_latency(client, server, setup, random.Random(args.seed + 3), model, oracle,
                                                 args.latency_reads, args.latency_seconds, failures)

        counts = {"orders": args.observers, "jobs": args.job_observers, "donuts": args.donut_observers}
        queries = make_queries(rng, model, counts, args.order_mix)
        idle(server)
        rss0, registry0 = rss_kib(server.pid), registry_bytes(client)
        ids = [new_observer(client) for _ in range(sum(counts.values()))]
        idle(server)
        rss1, registry1 = rss_kib(server.pid), registry_bytes(client)
        result["registry"] = {"bytes_empty": registry0, "per_observer_bytes": round((registry1 - registry0) / max(1, len(ids)), 1),
                              "rss_per_observer_bytes": round((rss1 - rss0) * 1024 / max(1, len(ids)), 1)}
        observers = []
        per_shape = {}
        started = time.perf_counter()
        next_id = iter(ids)
        for collection, qs in queries.items():
            by_kind = collections.defaultdict(list)
            for q in qs:
                by_kind[q.kind].append(q)
            for kind, group in sorted(by_kind.items()):
                r0, m0 = registry_bytes(client), rss_kib(server.pid)
                made = 0
                for q in group:
                    if q.kind == "next" and not setup.follow(q):
                        q.kind = "next (no second page)"
                    observer = setup.read(next(next_id), q)
                    if observer is not None:
                        observers.append(observer)
                        model.add_observer(observer)
                        made += 1
                        if len(observers) % 1000 == 0:
                            log(f"{len(observers)} observers have read")
                idle(server, 10)
                per_shape[f"{collection} {kind}"] = {
                    "observers": made, "registry_bytes": round((registry_bytes(client) - r0) / max(1, made), 1),
                    "rss_bytes": round((rss_kib(server.pid) - m0) * 1024 / max(1, made), 1)}
            log(f"{len(qs)} observers of {collection} read")
        result["setup_reads_s"] = round(time.perf_counter() - started, 1)
        idle(server)
        rss2, registry2 = rss_kib(server.pid), registry_bytes(client)
        shapes_made = len(observers)
        result["registry"].update(
            per_query_shape_bytes=round((registry2 - registry1) / max(1, shapes_made), 1),
            rss_per_query_shape_bytes=round((rss2 - rss1) * 1024 / max(1, shapes_made), 1),
            bytes_with_observers=registry2, per_kind=per_shape)
        result["tracked_read_ms"] = {k: {"p50": round(percentile(v, 50), 2), "p99": round(percentile(v, 99), 2)}
                                     for k, v in sorted(setup.read_ms.items())}
        result["observers"] = {c: len(model.observers[c]) for c in COLLECTIONS}
        result["elements_held"] = {c: sum(len(o.expected) for o in model.observers[c]) for c in COLLECTIONS}

        # GET /observers/{id} lists the paths a shape covers: for a query on
        # the orders it takes a pass over them (0.3 s each at 1,000,000), so
        # only a sample of those (all of the others).
        checked = [o for o in observers if o.query.collection != "orders"]
        orders_ = [o for o in observers if o.query.collection == "orders"]
        checked += random.Random(args.seed + 6).sample(orders_, min(args.window_sample, len(orders_)))
        log(f"the windows as the server states them: {len(checked)} observers")
        started = time.perf_counter()
        wrong = [f for f in (setup.check_shape(o) for o in checked) if f]
        result["windows_checked"] = len(checked)
        result["window_check_s_per_observer"] = round((time.perf_counter() - started) / max(1, len(checked)), 4)
        result["window_mismatches"] = len(wrong)
        failures += wrong

        log(f"parking {len(observers)} long-polls")
        stream = QueryStream(client, server, [], args.grace)
        if args.unshared_answers:
            stream.poll_class = UnsharedPoll
        rss3 = rss_kib(server.pid)
        stream.park(observers)
        rss4 = settled_rss(server.pid)
        result["rss_per_parked_poll_kib"] = round((rss4 - rss3) / max(1, len(observers)), 2)
        result["rss_parked_mib"] = round(rss4 / 1024, 1)

        log(f"{args.writes} writes")
        writes = Writes(model, stream, random.Random(args.seed + 1), failures)
        cpu = cpu_seconds(server.pid)
        wall = time.perf_counter()
        writes.run(args.writes)
        result["stream"] = writes.figures(args.writes)
        result["stream"]["cpu_per_cycle_us"] = round((cpu_seconds(server.pid) - cpu) / max(1, args.writes) * 1e6, 1)
        result["stream"]["wall_per_write_ms"] = round((time.perf_counter() - wall) / max(1, args.writes) * 1000, 2)
        log("final checks")
        result["final_checks"], failed = final_checks(client, model, random.Random(args.seed + 4), args.check_sample)
        failures += failed
        stream.close()
        client.close()
        return result, writes.recorded, stream.per_write
    finally:
        server.stop(60)
        remove_database(path)


def cpu_split(observed, baseline):
    """Where the CPU a write costs with the observers goes, write by write
    against the same write with nobody observing: the writes that woke
    nobody (what finding the concerned observers costs), and a least-squares
    line of the extra CPU over the observers woken (a fixed part a write,
    and a part a wake-up: the answer built and sent, the poll resumed)."""
    pairs = [(o, b, w) for (o, w), (b, _) in zip(observed, baseline)]
    if not pairs:
        return {}
    quiet = [(o, b) for o, b, w in pairs if w == 0]
    xs = [w for _, _, w in pairs]
    ys = [o - b for o, b, _ in pairs]
    n, mx, my = len(xs), statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    out = {"writes": n,
           "extra_fixed_us_per_write": round((my - slope * mx) * 1e6, 1),
           "us_per_wakeup": round(slope * 1e6, 2)}
    if quiet:
        with_, without = sum(o for o, _ in quiet), sum(b for _, b in quiet)
        out["writes_waking_nobody"] = {"writes": len(quiet), "cpu_per_write_us": round(with_ / len(quiet) * 1e6, 1),
                                       "nobody_observing_us": round(without / len(quiet) * 1e6, 1),
                                       "ratio": round(with_ / without, 2) if without else None}
    return out


def baseline_scenario(args, template, workdir, recorded, failures):
    """The same writes, nobody observing."""
    path = os.path.join(workdir, "baseline.sqlite")
    copy_database(template, path)
    server = start_server(args.binary, path, workdir, SERVER_FLAGS)
    try:
        client = client_of(server.port)
        stream = Stream(client, server, [], args.grace)
        writes = Writes(None, stream, None, failures)
        writes.replay(recorded)
        out = {"writes": len(recorded), "cpu_per_write_us": round(stream.cpu_spent / max(1, len(recorded)) * 1e6, 1)}
        stream.close()
        client.close()
        return out, stream.per_write
    finally:
        server.stop(60)
        remove_database(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--observers", type=int, default=10_000, help="observers each holding a query on orders")
    parser.add_argument("--job-observers", type=int, help="observers holding a query on jobs (default: observers / 5)")
    parser.add_argument("--donut-observers", type=int, help="observers holding a query on donuts (default: observers / 5)")
    parser.add_argument("--donuts", type=int, default=200, help="donuts made besides the four of a new database")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--order-mix", default=",".join(f"{k}={v}" for k, v in ORDER_MIX.items()),
                        help="the kinds of query the orders' observers hold, with their weights (default: %(default)s)")
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--latency-reads", type=int, default=200, help="reads of each kind timed")
    parser.add_argument("--latency-seconds", type=float, default=20, help="at most this long for each kind (at least 3 reads)")
    parser.add_argument("--binary", default=None, help="the build under test (default .build/release/observable-server)")
    parser.add_argument("--grace", type=float, default=0.03, help="seconds to wait for answers nobody should send")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", default="/tmp/observable-queries-bench")
    parser.add_argument("--reseed", action="store_true", help="make the database again even when one is there")
    parser.add_argument("--window-sample", type=int, default=200,
                        help="observers of orders whose window is checked against GET /observers/{id} (all the others are)")
    parser.add_argument("--check-sample", type=int, default=20,
                        help="order observers checked at the end (four times as many of jobs and of donuts)")
    parser.add_argument("--unshared-answers", action="store_true",
                        help="polls carry an Origin (the server started with OBSERVABLE_CORS_ORIGINS=*), so that each "
                             "woken poll gets an answer built for it alone, not one shared with the others woken by "
                             "the same change")
    parser.add_argument("--no-baseline", action="store_true", help="skip the writes with nobody observing")
    args = parser.parse_args()
    args.order_mix = {k: float(v) for k, _, v in (part.partition("=") for part in args.order_mix.split(","))}
    unknown = set(args.order_mix) - set(ORDER_MIX)
    if unknown:
        parser.error(f"--order-mix: no kind {', '.join(sorted(unknown))}; kinds: {', '.join(ORDER_MIX)}")
    args.binary = os.path.abspath(args.binary or os.path.join(ROOT, ".build", "release", "observable-server"))
    args.job_observers = args.observers // 5 if args.job_observers is None else args.job_observers
    args.donut_observers = args.observers // 5 if args.donut_observers is None else args.donut_observers
    os.makedirs(args.workdir, exist_ok=True)
    if args.unshared_answers:
        os.environ["OBSERVABLE_CORS_ORIGINS"] = "*"

    result = {"machine": {"cores": os.cpu_count(), "load_at_start": [round(x, 2) for x in os.getloadavg()]},
              "orders": args.orders, "order_mix": args.order_mix, "writes": args.writes, "server_flags": ["--log-level", "warning", "--max-connections-per-address", "1000000",
                                                      *SERVER_FLAGS, "(environment: harness.TRUSTED_QUOTAS)"],
              "unshared_answers": args.unshared_answers}
    prepare, order_of = prepare_data(random.Random(args.seed + 5), args.donuts, args.jobs)
    started = time.perf_counter()
    template, _ = shapes.seed(args.binary, args.workdir, args.orders, args.reseed, name=TEMPLATE, prepare=prepare,
                              order_of=order_of)
    result["seed_s"] = round(time.perf_counter() - started, 1)
    failures = []
    observed, recorded, observed_cpu = observed_scenario(args, template, args.workdir, failures)
    result["observed"] = observed
    if not args.no_baseline and recorded:
        log("the same writes, nobody observing")
        result["baseline"], baseline_cpu = baseline_scenario(args, template, args.workdir, recorded, failures)
        with_ = observed["stream"]["cpu_per_write_us"]
        without = result["baseline"]["cpu_per_write_us"]
        result["cpu_per_write_ratio"] = round(with_ / without, 2) if without else None
        result["cpu_split"] = cpu_split(observed_cpu, baseline_cpu)
    result["machine"]["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    result["stalls"] = {"count": len(STALLS), "first": STALLS[:10]}
    result["failure_count"] = len(failures)
    categories = collections.defaultdict(list)
    for failure in failures:
        categories[failure.split(" ")[0].replace("GET", "read").replace("observer", "window")].append(failure)
    result["failures_by_kind"] = {k: len(v) for k, v in categories.items()}
    result["failures"] = [f for v in categories.values() for f in v[:10]]
    print(json.dumps(result))
    summary(result)
    sys.exit(1 if failures else 0)


def summary(result):
    out = sys.stdout
    m, o = result["machine"], result["observed"]
    obs = o.get("observers", {})
    print(f"\n{result['orders']:,} orders; observers holding a query: {obs.get('orders', 0):,} on orders, "
          f"{obs.get('jobs', 0):,} on jobs, {obs.get('donuts', 0):,} on donuts; load {m['load_at_start'][0]} at start, "
          f"{m['load_at_end'][0]} at end", file=out)
    print(f"  {os.path.basename(o['binary'])}: start with the orders {o['start_s']} s", file=out)
    print("  query reads (untracked), p50 / p99 ms, server CPU per read:", file=out)
    for name, f in o.get("read_latency", {}).items():
        print(f"    {name}: {f['p50_ms']} / {f['p99_ms']}" + (f", {f['cpu_per_read_us']} us" if "cpu_per_read_us" in f else "")
              + f" ({f['reads']} reads)", file=out)
    r = o.get("registry")
    if r and "per_query_shape_bytes" in r:
        print(f"  registry (observable_registry_bytes): {r['per_observer_bytes']} B per observer, "
              f"{r['per_query_shape_bytes']} B per query shape (RSS: {r['rss_per_observer_bytes']} B, "
              f"{r['rss_per_query_shape_bytes']} B); per kind:", file=out)
        for kind, f in r["per_kind"].items():
            print(f"    {kind}: {f['observers']} observers, {f['registry_bytes']} B (RSS {f['rss_bytes']} B)", file=out)
    if "rss_per_parked_poll_kib" in o:
        print(f"  RSS per parked long-poll {o['rss_per_parked_poll_kib']} KiB, {o['rss_parked_mib']} MiB with all parked",
              file=out)
    st = o.get("stream")
    if st:
        w = st["wakeups"]
        print(f"  {st['writes']} writes: wake-ups per write mean {w['mean']}, p50 {w['p50']}, p99 {w['p99']}, "
              f"max {w['max']} ({w['total']} in all)", file=out)
        for kind, f in st["per_kind"].items():
            print(f"    {kind}: {f['writes']} writes, {f['wakeups_mean']} wake-ups each (max {f['wakeups_max']})", file=out)
        if "wake_ms" in st:
            print(f"  wake p50 {st['wake_ms']['p50']} / p99 {st['wake_ms']['p99']} ms; last answer of a write "
                  f"p50 {st['last_wake_ms']['p50']} / p99 {st['last_wake_ms']['p99']} ms", file=out)
        print(f"  server CPU per write {st['cpu_per_write_us']} us with the observers "
              f"({st['cpu_per_cycle_us']} with the polls sent again)", file=out)
    if "baseline" in result:
        print(f"  the same writes, nobody observing: {result['baseline']['cpu_per_write_us']} us; "
              f"ratio {result['cpu_per_write_ratio']} (target <= 2)", file=out)
        split = result.get("cpu_split") or {}
        quiet = split.get("writes_waking_nobody")
        if quiet:
            print(f"  writes that woke nobody ({quiet['writes']}): {quiet['cpu_per_write_us']} us with the observers, "
                  f"{quiet['nobody_observing_us']} us nobody observing; ratio {quiet['ratio']}", file=out)
        if split:
            print(f"  extra CPU a write, fitted over the observers woken: {split['extra_fixed_us_per_write']} us "
                  f"+ {split['us_per_wakeup']} us a wake-up", file=out)
    print(f"  failures: {result['failure_count']} (windows as the server states them: {o.get('window_mismatches')}, "
          f"answers' content: {(st or {}).get('content_failures')}); requests stalled until another connection woke "
          f"the server: {result['stalls']['count']}", file=out)
    if st and st.get("content_problems"):
        print(f"  problems in the answers' content, by kind: {st['content_problems']}; the query member's forms seen: "
              f"{st['canonical_query_forms']}", file=out)
    if result["failures_by_kind"]:
        print(f"  failures by kind: {result['failures_by_kind']}", file=out)
    for failure in result["failures"][:20]:
        print(f"    {failure[:400]}", file=out)


if __name__ == "__main__":
    main()
