#!/usr/bin/env python3
"""Crash durability test: kill -9 the server in the middle of a write storm.

Each round starts the built server on a fresh SQLite file, creates observers
that read /truck/orderCount and /truck/orders (and one that reads the donuts,
the truck's name and the account), and runs a storm of writes from several
client threads:

  POST /truck/orders, PATCH /truck/donuts/{id}, PATCH /truck, POST /account/login

while the observers long-poll their change feeds. Every write answered 2xx is
recorded. At a random moment (0.2-1.5 s into the storm) the server gets
SIGKILL; it is then restarted on the same database and checked:

  * every acknowledged order is there, with its donut and quantity; orders
    that were never acknowledged are at most the writes in flight at the kill;
  * each patched field holds its last acknowledged value, or a value written
    after it (each field has one writer, which sends its next value only after
    the previous one was answered, so a value written after the last
    acknowledged one can only be the one in flight);
  * every observer resumes from the last cursor it saw before the kill: polling
    `since=<cursor>` yields seqs above it, strictly increasing; for every path
    each `set` change's old value is the previous change's new value (starting
    from the value the observer read); the last new value equals what the
    restarted server answers; every order is inserted exactly once in the feed;
    and replaying the feed from the observer's first cursor gives exactly the
    changes seen before the kill followed by those seen after it;
  * after a clean stop (SIGTERM, exit 0), `PRAGMA integrity_check` is `ok`.

Prints a summary and exits 1 on any failure. Standard library only.

  scripts/crash-test.py [--rounds 20] [--binary .build/debug/observable-server]
"""

import argparse
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import threading
import time

from harness import Client, ConnectionLost, Server, serve_command, trusted_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLAZED = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
SEED_DONUTS = [
    "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001",
    "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0002",
    "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0003",
    "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0004",
]


class Field:
    """One field written by one client thread, in order, one write at a time."""

    def __init__(self, name, initial):
        self.name = name
        self.initial = initial
        self.attempted = []        # values in the order they were sent
        self.acknowledged = None   # index into attempted of the last 2xx

    def allowed(self):
        if self.acknowledged is None:
            return [self.initial] + self.attempted
        return self.attempted[self.acknowledged:]


class Round:
    def __init__(self, number, args, rng):
        self.number = number
        self.args = args
        self.rng = rng
        self.failures = []
        self.folder = tempfile.mkdtemp(prefix="observable-crash-")
        self.database = os.path.join(self.folder, "db.sqlite")
        self.lock = threading.Lock()
        self.acked_orders = {}     # id -> (donutId, quantity)
        self.orders_in_flight = 0  # order POSTs sent but not answered at the kill
        self.fields = {}           # path -> Field
        self.statuses = []         # unexpected answers during the storm
        self.killed_at = None
        self.stop_event = threading.Event()
        self.acked_writes = 0
        self.changes_checked = 0   # feed changes checked, over all observers

    def fail(self, message):
        self.failures.append(message)

    # -- the storm ---------------------------------------------------------

    def order_writer(self, port, index):
        client = Client(port, timeout=10)
        n = 0
        while not self.stop_event.is_set():
            n += 1
            quantity = (index * 7 + n) % 1000 + 1
            with self.lock:
                self.orders_in_flight += 1
            try:
                status, _, body = client.request("POST", "/truck/orders", {"donutId": GLAZED, "quantity": quantity})
            except ConnectionLost as error:
                self.lost(f"order writer {index}", error)
                return  # still counted as in flight
            with self.lock:
                self.orders_in_flight -= 1
                if status == 201:
                    self.acked_orders[body["id"]] = (GLAZED, quantity)
                    self.acked_writes += 1
                else:
                    self.statuses.append(f"POST /truck/orders -> {status} {body}")

    def field_writer(self, port, label, fields, send):
        """Writes `fields` (paths) round-robin; `send(client, path, value)` returns the status."""
        client = Client(port, timeout=10)
        n = 0
        while not self.stop_event.is_set():
            path = fields[n % len(fields)]
            n += 1
            value = f"{label}-r{self.number}-{n}"
            field = self.fields[path]
            field.attempted.append(value)
            try:
                status, body = send(client, path, value)
            except ConnectionLost as error:
                self.lost(label, error)
                return
            if 200 <= status < 300:
                field.acknowledged = len(field.attempted) - 1
                with self.lock:
                    self.acked_writes += 1
            else:
                # Answered but refused: it did not land.
                field.attempted.pop()
                with self.lock:
                    self.statuses.append(f"{label} {path} -> {status} {body}")

    def lost(self, who, error):
        if self.killed_at is None:
            with self.lock:
                self.statuses.append(f"{who}: connection lost before the kill: {error}")

    # -- observers ---------------------------------------------------------

    def make_observer(self, client, reads):
        status, _, observer = client.request("POST", "/observers", {"ttlSeconds": 3600})
        if status != 201:
            raise RuntimeError(f"POST /observers -> {status} {observer}")
        state = {"id": observer["id"], "values": {}, "cursor": None, "seen": [], "first_cursor": None}
        for path in reads:
            status, headers, body = client.request("GET", path, headers={"Observer": observer["id"]})
            if status != 200:
                raise RuntimeError(f"GET {path} -> {status} {body}")
            cursor = int(headers["observation-cursor"])
            # Reads happen before any write, so every read has the same cursor.
            state["cursor"] = cursor if state["cursor"] is None else max(state["cursor"], cursor)
            collect_values(path, body, state["values"])
        state["first_cursor"] = state["cursor"]
        return state

    def poller(self, port, state):
        client = Client(port, timeout=10)
        while not self.stop_event.is_set():
            try:
                status, _, body = client.request(
                    "GET", f"/observers/{state['id']}/changes?since={state['cursor']}&timeout=0.5&limit=1000")
            except ConnectionLost as error:
                self.lost(f"poller {state['id']}", error)
                return
            if status != 200:
                with self.lock:
                    self.statuses.append(f"poll {state['id']} -> {status} {body}")
                return
            state["seen"].extend(body["changes"])
            state["cursor"] = body["cursor"]

    # -- the round ---------------------------------------------------------

    def server(self, log_name):
        """The server on the round's database, started."""
        # A write storm from 127.0.0.1: one trusted client, past the write rate and the rows.
        return Server(serve_command(self.args.binary, self.database), log_path=os.path.join(self.folder, log_name),
                      env=trusted_environment()).start(20)

    def run(self):
        server = self.server("server-1.log")
        try:
            return self.storm_and_check(server)
        finally:
            server.kill()

    def storm_and_check(self, server):
        client = Client(server.port, timeout=10)
        observers = [
            self.make_observer(client, ["/truck/orderCount", "/truck/orders"]),
            self.make_observer(client, ["/truck/orderCount", "/truck/orders"]),
            self.make_observer(client, ["/truck/donuts", "/truck?fields=name", "/account"]),
        ]
        _, _, donuts = client.request("GET", "/truck/donuts")
        initial = {d["id"]: d for d in donuts["donuts"]}
        _, _, truck = client.request("GET", "/truck?fields=name")
        _, _, account = client.request("GET", "/account")
        client.close()

        def patch_donut(c, path, value):
            _, _, _, donut, name = path.split("/")
            status, _, body = c.request("PATCH", f"/truck/donuts/{donut}", {name: value})
            return status, body

        def truck_or_account(c, path, value):
            if path == "/truck/name":
                status, _, body = c.request("PATCH", "/truck", {"name": value})
            else:
                status, _, body = c.request("POST", "/account/login", {"userName": value})
            return status, body

        writers = []
        for i in range(self.args.order_writers):
            writers.append(threading.Thread(target=self.order_writer, args=(server.port, i)))
        for i, donut in enumerate(SEED_DONUTS[: self.args.donut_writers]):
            paths = [f"/truck/donuts/{donut}/name", f"/truck/donuts/{donut}/glaze"]
            for path in paths:
                self.fields[path] = Field(path, initial[donut][path.rsplit("/", 1)[1]])
            writers.append(threading.Thread(target=self.field_writer,
                                            args=(server.port, f"donut{i}", paths, patch_donut)))
        self.fields["/truck/name"] = Field("/truck/name", truck["name"])
        self.fields["/account/userName"] = Field("/account/userName", account["userName"])
        writers.append(threading.Thread(target=self.field_writer,
                                        args=(server.port, "acct", ["/truck/name", "/account/userName"], truck_or_account)))
        pollers = [threading.Thread(target=self.poller, args=(server.port, o)) for o in observers]

        for thread in pollers + writers:
            thread.daemon = True
            thread.start()
        delay = self.rng.uniform(0.2, 1.5)
        time.sleep(delay)
        # Cursors seen before the kill: the pollers stop at the kill, so what
        # they hold afterwards is exactly what they had received before it.
        self.killed_at = time.monotonic()
        server.kill()
        self.stop_event.set()
        for thread in writers + pollers:
            thread.join(timeout=15)
            if thread.is_alive():
                self.fail("a client thread did not finish after the kill")
        for status in self.statuses:
            self.fail(f"during the storm: {status}")

        restarted = self.server("server-2.log")
        try:
            self.check(restarted.port, observers)
        finally:
            status = restarted.stop(timeout=10)
        if status is None:
            with open(restarted.log_path, encoding="utf-8", errors="replace") as f:
                heard = "signal received" in f.read()
            self.fail("SIGTERM after the checks: still running after 10 s, killed; the server "
                      + ("logged the signal but did not finish stopping" if heard else "never logged receiving it"))
        elif status != 0:
            self.fail(f"SIGTERM after the checks: exit status {status}")
        try:
            connection = sqlite3.connect(self.database)
            result = connection.execute("PRAGMA integrity_check").fetchall()
            connection.close()
            if result != [("ok",)]:
                self.fail(f"PRAGMA integrity_check: {result}")
        except sqlite3.Error as error:
            self.fail(f"PRAGMA integrity_check: {error}")
        return delay

    def check(self, port, observers):
        client = Client(port, timeout=10)
        status, _, body = client.request("GET", "/truck/orders")
        if status != 200:
            self.fail(f"GET /truck/orders after restart -> {status}")
            return
        orders = {o["id"]: (o["donutId"], o["quantity"]) for o in body["orders"]}
        for order_id, expected in self.acked_orders.items():
            if order_id not in orders:
                self.fail(f"acknowledged order {order_id} is missing after the restart")
            elif orders[order_id] != expected:
                self.fail(f"order {order_id} is {orders[order_id]}, acknowledged as {expected}")
        extra = len(orders) - len([o for o in self.acked_orders if o in orders])
        if extra > self.orders_in_flight:
            self.fail(f"{extra} unacknowledged orders present, but only {self.orders_in_flight} were in flight")
        _, _, count = client.request("GET", "/truck/orderCount")
        if count["orderCount"] != len(orders):
            self.fail(f"orderCount {count['orderCount']} != {len(orders)} orders")

        current = {}
        _, _, donuts = client.request("GET", "/truck/donuts")
        collect_values("/truck/donuts", donuts, current)
        _, _, truck = client.request("GET", "/truck?fields=name")
        collect_values("/truck?fields=name", truck, current)
        _, _, account = client.request("GET", "/account")
        collect_values("/account", account, current)
        current["/truck/orderCount"] = count["orderCount"]
        for path, field in self.fields.items():
            if current.get(path) not in field.allowed():
                self.fail(f"{path} is {current.get(path)!r} after the restart; allowed: {field.allowed()!r} "
                          f"(last acknowledged: {field.attempted[field.acknowledged] if field.acknowledged is not None else None!r})")

        for observer in observers:
            self.check_feed(client, observer, orders, current)
        client.close()

    def check_feed(self, client, observer, orders, current):
        oid = observer["id"]
        before = observer["seen"]
        cursor = observer["cursor"]
        after = []
        while True:
            status, _, body = client.request("GET", f"/observers/{oid}/changes?since={cursor}&timeout=0&limit=1000")
            if status != 200:
                self.fail(f"observer {oid}: poll since={cursor} after restart -> {status} {body}")
                return
            if body["cursor"] < cursor:
                self.fail(f"observer {oid}: polling since={cursor} answered the older cursor {body['cursor']}")
                return
            if body["changes"] == []:
                # The cursor may move past changes this observer did not read.
                break
            for change in body["changes"]:
                if change["seq"] <= cursor:
                    self.fail(f"observer {oid}: seq {change['seq']} at or before the cursor {cursor} it polled from")
            after.extend(body["changes"])
            cursor = body["cursor"]
        feed = before + after
        seqs = [c["seq"] for c in feed]
        if any(a >= b for a, b in zip(seqs, seqs[1:])):
            self.fail(f"observer {oid}: seqs not strictly increasing: {seqs}")
        if seqs and seqs[0] <= observer["first_cursor"]:
            self.fail(f"observer {oid}: seq {seqs[0]} at or before its first cursor {observer['first_cursor']}")

        # Each path's sets form one chain from the value read to the value now.
        values = dict(observer["values"])
        inserted = []
        for change in feed:
            path = change["path"]
            if change["op"] == "set":
                if path in values and change["old"] != values[path]:
                    self.fail(f"observer {oid}: seq {change['seq']} {path} old {change['old']!r}, "
                              f"but the previous value was {values[path]!r} (a change is missing or repeated)")
                values[path] = change["new"]
            elif change["op"] == "insert" and path == "/truck/orders":
                inserted.append(change["new"]["id"])
        for path, value in values.items():
            if path in current and current[path] != value:
                self.fail(f"observer {oid}: the feed ends with {path} = {value!r}, the server answers {current[path]!r}")
        if "/truck/orders" in observer["values"]:
            if len(inserted) != len(set(inserted)):
                self.fail(f"observer {oid}: an order was inserted twice in the feed")
            if set(inserted) != set(orders):
                missing = set(orders) - set(inserted)
                unknown = set(inserted) - set(orders)
                self.fail(f"observer {oid}: feed inserts differ from the orders: missing {sorted(missing)}, unknown {sorted(unknown)}")

        # Replaying from the first cursor gives exactly what was seen, in order.
        replay = []
        since = observer["first_cursor"]
        while True:
            status, _, body = client.request("GET", f"/observers/{oid}/changes?since={since}&timeout=0&limit=1000")
            if status != 200 or not body["changes"]:
                break
            replay.extend(body["changes"])
            since = body["cursor"]
        if replay != feed:
            self.fail(f"observer {oid}: replay from {observer['first_cursor']} has {len(replay)} changes, "
                      f"{len(before)} were seen before the kill and {len(after)} after")
        self.changes_checked += len(feed)


def collect_values(path, body, values):
    """The property paths (and values) a read answered, as the feed names them."""
    if path.startswith("/truck/orderCount"):
        values["/truck/orderCount"] = body["orderCount"]
    elif path.startswith("/truck/orders"):
        values["/truck/orders"] = None  # membership: checked through inserts
    elif path.startswith("/truck/donuts"):
        for donut in body["donuts"]:
            for key, value in donut.items():
                if key != "id":
                    values[f"/truck/donuts/{donut['id']}/{key}"] = value
    elif path.startswith("/truck"):
        for key, value in body.items():
            if key in ("name", "orderCount"):
                values[f"/truck/{key}"] = value
    elif path.startswith("/account"):
        values["/account/userName"] = body["userName"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--binary", default=".build/debug/observable-server")
    parser.add_argument("--order-writers", type=int, default=3, help="threads posting orders")
    parser.add_argument("--donut-writers", type=int, default=2, help="threads patching a donut each (at most 4)")
    parser.add_argument("--seed", type=int, default=None, help="seed for the kill moments")
    parser.add_argument("--keep", action="store_true", help="keep every round's folder (failed rounds are always kept)")
    args = parser.parse_args()
    args.binary = resolve(args.binary)
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"crash-test: no server binary at {args.binary}; build it first (swift build)")
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    print(f"crash-test: {args.rounds} rounds, binary {args.binary}, seed {seed}", flush=True)

    started = time.monotonic()
    failed_rounds = 0
    totals = {"orders": 0, "fields": 0, "writes": 0, "changes": 0}
    for number in range(1, args.rounds + 1):
        round_ = Round(number, args, rng)
        try:
            delay = round_.run()
        except Exception as error:  # a broken round is a failure, not a crash of the script
            round_.failures.insert(0, f"{type(error).__name__}: {error}")
            delay = float("nan")
        changes = round_.changes_checked
        totals["orders"] += len(round_.acked_orders)
        totals["fields"] += len(round_.fields)
        totals["writes"] += round_.acked_writes
        totals["changes"] += changes
        verdict = "ok" if not round_.failures else f"FAILED ({len(round_.failures)})"
        print(f"round {number:3}: killed after {delay:.2f}s; {round_.acked_writes} acknowledged writes "
              f"({len(round_.acked_orders)} orders), {round_.orders_in_flight} orders in flight, "
              f"{changes} feed changes checked: {verdict}", flush=True)
        if round_.failures:
            failed_rounds += 1
            for failure in round_.failures[:20]:
                print(f"    - {failure}", flush=True)
            print(f"    folder kept: {round_.folder}", flush=True)
        elif not args.keep:
            shutil.rmtree(round_.folder, ignore_errors=True)

    elapsed = time.monotonic() - started
    print(f"crash-test: {args.rounds} rounds in {elapsed:.1f}s; {totals['writes']} acknowledged writes checked "
          f"({totals['orders']} orders, {totals['writes'] - totals['orders']} field writes over {totals['fields']} fields); "
          f"{totals['changes']} feed changes checked; {failed_rounds} failed rounds", flush=True)
    sys.exit(1 if failed_rounds else 0)


def resolve(path):
    """A relative path from the working directory, else from the repository."""
    if os.path.isabs(path) or os.path.exists(path):
        return os.path.abspath(path)
    return os.path.join(ROOT, path)


if __name__ == "__main__":
    main()
