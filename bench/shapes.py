#!/usr/bin/env python3
"""Pages and shapes at scale, against observable-server on loopback.

Seeds a truck with N orders (1,000,000 by default) straight into the SQLite
file (the server made the schema and wrote one order through the API first,
which shows the row form), then:

- RSS of an empty server and of one holding the N orders (RSS per order),
  and how long a start with them takes;
- P observers (1,000) each read one page of 20 orders
  (`/truck/orders?limit=20&order=asc|desc&after=P`), W observers (100) read
  the whole truck (`GET /truck`, every order: it must answer 200); RSS per
  page reader, per whole reader and per parked long-poll;
- a stream of writes, half deleting an existing order (every other delete
  one shown on some page, the rest any order), half placing a new one; after
  each, the observers woken must be exactly the whole-truck readers plus the
  pages whose window holds the order (a new order: the windows open upward),
  nobody else may answer within a grace period, and the server's
  `observable_longpoll_wakeups_total` must have grown by exactly that many;
  wake latency (from just before the write is sent to each answer) and the
  server's CPU per write;
- with `--compare-binary`, the same data on both builds, started alternately:
  a write stream with nobody parked and one with the same number of
  observers each reading `/truck/orderCount` (what a build without shapes can
  track at this size: it refuses a read of the whole truck with 422), CPU per
  write, restart time and RSS for each.

Prints one JSON object, then a readable summary. Exits 1 on any mismatch.
"""
import argparse
import bisect
import json
import os
import random
import select
import shutil
import socket
import sqlite3
import statistics
import sys
import time
import uuid

from harness import Client, Server, cpu_ns, cpu_seconds, free_port, rss_kib, serve_command, trusted_environment
from longpoll import Poll, percentile

HOST = "127.0.0.1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DONUTS = [f"0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f000{k}" for k in range(1, 5)]
INF = float("inf")


# ---------------------------------------------------------------- HTTP client

def client_of(port):
    """A keep-alive client that waits for answers as `stalled` says."""
    return Client(port, timeout=None, patience=1.0, on_stall=lambda what, since: stalled(port, what, since))


def wait_parked(client, count, seconds=30):
    start = time.perf_counter()
    nudged = start
    while time.perf_counter() < start + seconds:
        if client.metric("observable_longpolls_parked") >= count:
            return True
        if time.perf_counter() - nudged > 1.0:
            stalled(client.port, "a long-poll sent again", start)
            nudged = time.perf_counter()
        time.sleep(0.002)
    return False


STALLS = []


def stalled(port, what, since):
    """A request left unanswered on a keep-alive connection: libmicrohttpd
    (both builds, with hundreds of long-polls answered and sent again at
    once) sometimes leaves a request that arrived on an open connection
    unread until another event wakes its thread, or until the idle timeout
    closes the connection. A new connection is such an event: it is made
    here, and the stall counted and reported (not hidden)."""
    STALLS.append((what, round(time.perf_counter() - since, 2)))
    with socket.create_connection((HOST, port)) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        s.recv(256)


# ---------------------------------------------------------------- servers

def start_server(binary, database, workdir, extra=()):
    """A server on `database`, started; its `startup_seconds` is the time until /healthz answered."""
    port = free_port()
    # 1,000 readers and their polls, all from HOST: no share per address.
    command = serve_command(binary, database, port, ["--log-level", "warning", "--max-connections-per-address", "1000000",
                                                     *extra])
    return Server(command, port, log_path=os.path.join(workdir, f"server-{port}.log"), env=trusted_environment()).start(600)


def settled_rss(pid, seconds=1.0):
    time.sleep(seconds)
    return rss_kib(pid)


# ---------------------------------------------------------------- data

def remove_database(path):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def copy_database(template, path):
    remove_database(path)
    shutil.copyfile(template, path)


def seed(binary, workdir, count, reseed=False, name="orders", prepare=None, order_of=None):
    """A database with `count` orders; returns (path, [(id, position)] by position).
    Reused from an earlier run when present (`--reseed` makes it again).
    `prepare(client)`, when given, runs through the API before the first
    order (bench/queries.py makes donuts and jobs there); `order_of(k)` is
    the (donutId, quantity) of the k-th order inserted (default: the four
    donuts of a new database in turn, quantities 1 to 12)."""
    path = os.path.join(workdir, f"{name}-{count}.sqlite")
    if os.path.exists(path) and not reseed:
        with sqlite3.connect(path) as db:
            rows = db.execute("SELECT id, position FROM orders ORDER BY position").fetchall()
        if len(rows) == count:
            return path, rows
    remove_database(path)
    # The server makes the schema and stores one order through the API.
    server = start_server(binary, path, workdir)
    try:
        client = client_of(server.port)
        if prepare is not None:
            prepare(client)
        status, _, first = client.request("POST", "/truck/orders", {"donutId": DONUTS[0], "quantity": 1})
        assert status == 201, status
        client.close()
    finally:
        server.stop(60)
    start = time.perf_counter()
    db = sqlite3.connect(path)
    rows = db.execute("SELECT id, position, donut_id, quantity FROM orders").fetchall()
    assert rows == [(first["id"], rows[0][1], DONUTS[0], 1)], rows
    seq = db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0]
    position = max(max(r[1] for r in rows), seq)
    fresh = []
    order_of = order_of or (lambda k: (DONUTS[k % 4], 1 + k % 12))
    for k in range(count - len(rows)):
        position += 1
        fresh.append((str(uuid.uuid4()), position, *order_of(k)))
    db.executemany("INSERT INTO orders (id, position, donut_id, quantity) VALUES (?, ?, ?, ?)", fresh)
    # As if the rows had been placed through the API and the log pruned
    # since: the `seq` is the newest position (the server places a new
    # element above both), and the log holds one change, the count's last
    # (the server's log of changes has no gaps in `seq`).
    old = len(rows)
    db.execute("DELETE FROM changes")
    db.execute("INSERT INTO changes (seq, txn, path, op, old, new, keys, implied_reads) "
               "VALUES (?, ?, '/truck/orderCount', 'set', ?, ?, '/truck/orderCount', '')",
               (position, position, str(old), str(count)))
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    print(f"seeded {count} orders in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    with sqlite3.connect(path) as db:
        return path, db.execute("SELECT id, position FROM orders ORDER BY position").fetchall()


# ---------------------------------------------------------------- observers

def new_observer(client):
    status, _, body = client.request("POST", "/observers", {"ttlSeconds": 86400})
    assert status == 201, status
    return body["id"]


def page_specs(rng, count, positions):
    """(order, after) for `count` pages: a few of each kind at the ends (open
    windows), the rest anywhere."""
    specs = []
    few = max(1, count // 100)
    for k in range(count):
        kind = k // few if k < 4 * few else 4
        if kind == 0:                      # newest first, first page: open upward
            specs.append(("desc", None))
        elif kind == 1:                    # oldest first, last page: open upward
            specs.append(("asc", positions[-1 - rng.randrange(min(20, len(positions)))]))
        elif kind == 2:                    # oldest first, first page
            specs.append(("asc", None))
        elif kind == 3:                    # newest first, last page: open downward
            specs.append(("desc", positions[rng.randrange(min(20, len(positions)))]))
        else:
            specs.append((rng.choice(("asc", "desc")), positions[rng.randrange(len(positions))]))
    rng.shuffle(specs)
    return specs


def expected_page(positions, order, after, limit=20):
    """Positions a page shows, and whether more follow."""
    if order == "asc":
        start = 0 if after is None else bisect.bisect_right(positions, after)
        shown = positions[start:start + limit]
        return shown, start + limit < len(positions)
    end = len(positions) if after is None else bisect.bisect_left(positions, after)
    shown = positions[max(0, end - limit):end][::-1]
    return shown, end - limit > 0


def window(order, after, shown, more):
    """The page's window (shapes-semantics.md), both ends inclusive."""
    if order == "asc":
        return (-INF if after is None else after + 1), (shown[-1] if more else INF)
    return (shown[-1] if more else -INF), (INF if after is None else after - 1)


class ParkedPoll(Poll):
    """longpoll.Poll, knowing when it was sent and how often it was answered."""

    def __init__(self, port, observer, since):
        super().__init__(port, observer, since)
        self.sent_at, self.answered = None, 0

    def send(self):
        super().send()
        self.sent_at = time.perf_counter()

    def read(self):
        try:
            answer = super().read()
        except ConnectionError:
            raise ConnectionError(f"poll of {self.observer} closed {time.perf_counter() - self.sent_at:.2f} s after it "
                                  f"was sent (since={self.since}, answered {self.answered} times before)") from None
        if answer is not None:
            self.answered += 1
        return answer


class Observer:
    def __init__(self, kind, observer, cursor, low=-INF, high=INF):
        self.kind, self.id, self.cursor, self.low, self.high = kind, observer, cursor, low, high
        self.poll = None

    def holds(self, position):
        return self.low <= position <= self.high


# ---------------------------------------------------------------- write stream

class Stream:
    """Parked polls of `observers`, and the writes. `expect(write)` names the
    observers a write must wake."""

    poll_class = ParkedPoll

    def __init__(self, client, server, observers, grace, marked=True):
        self.client, self.server, self.grace, self.marked = client, server, grace, marked
        self.lost = []
        self.cpu_spent = 0.0
        self.per_write = []     # (server CPU seconds, observers expected to wake), a write each
        self.epoll = select.epoll()
        self.by_fd = {}
        self.observers = []
        self.park(observers)

    def park(self, observers):
        """Parks a long-poll for each of `observers` (more may follow)."""
        for observer in observers:
            poll = self.poll_class(self.client.port, observer.id, observer.cursor)
            observer.poll = poll
            self.by_fd[poll.sock.fileno()] = observer
            self.epoll.register(poll.sock.fileno(), select.EPOLLIN)
            poll.send()
        self.observers += observers
        if observers and not self.settle(120):
            raise SystemExit("not all long-polls parked")

    def settle(self, seconds=30):
        """Waits until every poll is parked (/metrics), sending again those
        whose timeout answered meanwhile."""
        start = nudged = time.perf_counter()
        while time.perf_counter() < start + seconds:
            for fd, (_, reply) in self.answers(set(), time.perf_counter() + 0.002).items():
                observer = self.by_fd[fd]
                self.lost.append(f"{observer.kind} observer {observer.id} answered with no write: {reply['changes'][:2]}")
                observer.poll.send()
            if self.client.metric("observable_longpolls_parked") >= len(self.observers):
                return True
            if time.perf_counter() - nudged > 1.0:
                stalled(self.client.port, "a long-poll sent again", start)
                nudged = time.perf_counter()
        return False

    def reconnect(self, observer, wanted):
        old = observer.poll
        observer.poll = self.poll_class(self.client.port, observer.id, old.since)
        fd = observer.poll.sock.fileno()
        self.by_fd[fd] = observer
        self.epoll.register(fd, select.EPOLLIN)
        self.epoll.unregister(old.sock.fileno())
        del self.by_fd[old.sock.fileno()]
        if old.sock.fileno() in wanted:
            wanted.discard(old.sock.fileno())
            wanted.add(fd)
        old.sock.close()
        observer.poll.send()

    def answers(self, wanted, until):
        """Answers of parked polls until all of `wanted` (fds) answered or
        time `until`; timeouts (no changes) are parked again."""
        got = {}
        while time.perf_counter() < until and not (wanted and wanted <= got.keys()):
            for fd, _ in self.epoll.poll(max(0.0, min(0.01, until - time.perf_counter()))):
                observer = self.by_fd[fd]
                try:
                    answer = observer.poll.read()
                except ConnectionError as error:
                    # Counted as a failure; the observer polls again on a
                    # new connection from where it was.
                    self.lost.append(f"{observer.kind} observer: {error}")
                    self.reconnect(observer, wanted)
                    continue
                if answer is None:
                    continue
                if not answer["changes"]:
                    observer.poll.send()
                    continue
                got[fd] = (time.perf_counter(), answer)
        return got

    def write(self, method, path, body, expected, mark):
        """Sends one write; returns (status, body, latencies ms, failures)."""
        failures = self.lost
        self.lost = []
        wakeups = self.client.metric("observable_longpoll_wakeups_total")
        wanted = {o.poll.sock.fileno() for o in expected}
        stalls = len(STALLS)
        cpu = cpu_ns(self.server.pid)
        start = time.perf_counter()
        status, _, answer = self.client.request(method, path, body)
        self.stalled_write = len(STALLS) > stalls
        got = self.answers(wanted, time.perf_counter() + 10) if wanted else {}
        got.update(self.answers(set(), time.perf_counter() + self.grace))
        spent = (cpu_ns(self.server.pid) - cpu) / 1e9
        self.cpu_spent += spent
        self.per_write.append((spent, len(wanted)))
        mark = (mark or (answer or {}).get("id")) if self.marked else None
        latencies = []
        for fd, (at, reply) in got.items():
            observer = self.by_fd[fd]
            if fd not in wanted:
                failures.append(f"{observer.kind} observer {observer.id} [{observer.low}, {observer.high}] woken")
            elif mark and mark not in json.dumps(reply["changes"]):
                failures.append(f"{observer.kind} observer {observer.id} woken without the change: {reply['changes']}")
            latencies.append((at - start) * 1000)
        for fd in wanted - got.keys():
            observer = self.by_fd[fd]
            failures.append(f"{observer.kind} observer {observer.id} [{observer.low}, {observer.high}] not woken "
                            f"(its poll sent {start - observer.poll.sent_at:.2f} s before the write)")
        woken = self.client.metric("observable_longpoll_wakeups_total") - wakeups
        if woken != len(wanted):
            failures.append(f"observable_longpoll_wakeups_total grew by {woken:.0f}, {len(wanted)} expected")
        for fd in got:
            self.by_fd[fd].poll.send()
        if self.observers and not self.settle():
            failures.append("not all long-polls parked again")
        return status, answer, latencies, failures

    def close(self):
        for observer in self.observers:
            observer.poll.sock.close()
        self.epoll.close()


def run_writes(stream, rng, live, positions_of, count, expect, targets=None):
    """`count` writes, alternately a delete and a new order (random which
    comes first); `live` is the list of the ids of existing orders (changed
    in place). Every other delete takes an order from `targets` (ids shown on
    a page) when one is still there. Returns figures and failures."""
    index = {order: k for k, order in enumerate(live)}
    top = max(positions_of.values())
    latencies, last, failures = [], [], []
    deletes = news = stalled_writes = 0
    stalls = len(STALLS)
    cpu_before = cpu_seconds(stream.server.pid)
    stream.cpu_spent = 0.0
    wall = time.perf_counter()
    for w in range(count):
        if rng.random() < 0.5 and live:
            order = None
            if targets and deletes % 2 == 0:
                for _ in range(20):
                    candidate = rng.choice(targets)
                    if candidate in index:
                        order = candidate
                        break
            if order is None:
                order = live[rng.randrange(len(live))]
            expected = expect(positions_of[order])
            status, _, woke, failed = stream.write("DELETE", f"/truck/orders/{order}", None, expected, order)
            if status != 204:
                failed.append(f"DELETE answered {status}")
            k = index.pop(order)
            moved = live.pop()
            if moved != order:
                live[k] = moved
                index[moved] = k
            deletes += 1
        else:
            top += 1     # above every position given before: all a window needs
            expected = expect(top)
            status, answer, woke, failed = stream.write(
                "POST", "/truck/orders", {"donutId": rng.choice(DONUTS), "quantity": rng.randint(1, 12)}, expected, None)
            if status != 201:
                failed.append(f"POST answered {status}")
            else:
                positions_of[answer["id"]] = top
                index[answer["id"]] = len(live)
                live.append(answer["id"])
            news += 1
        if stream.stalled_write:
            stalled_writes += 1     # its wake times include the stall
        else:
            latencies += woke
            if woke:
                last.append(max(woke))
        failures += [f"write {w}: {f}" for f in failed]
        if not stream.server.alive():
            failures.append(f"write {w}: the server exited")
            break
    cpu = cpu_seconds(stream.server.pid) - cpu_before
    wall = time.perf_counter() - wall
    result = {"writes": count, "deletes": deletes, "new_orders": news,
              # From just before the write to the last answer (and the grace
              # period after it); and the whole cycle: with the polls sent
              # again and /metrics asked until they are all parked.
              "cpu_per_write_us": round(stream.cpu_spent / count * 1e6, 1),
              "cpu_per_cycle_us": round(cpu / count * 1e6, 1), "wall_per_write_ms": round(wall / count * 1000, 2),
              "answers": len(latencies), "stalls": len(STALLS) - stalls, "stalled_writes": stalled_writes}
    if latencies:
        result["wake_ms"] = {"p50": round(percentile(latencies, 50), 2), "p99": round(percentile(latencies, 99), 2),
                             "max": round(max(latencies), 2)}
        result["last_wake_ms"] = {"p50": round(percentile(last, 50), 2), "p99": round(percentile(last, 99), 2)}
    return result, failures


# ---------------------------------------------------------------- scenarios

def empty_rss(binary, workdir):
    path = os.path.join(workdir, "empty.sqlite")
    remove_database(path)
    server = start_server(binary, path, workdir)
    try:
        client = client_of(server.port)
        client.exchange("GET", "/truck")
        client.close()
        return settled_rss(server.pid)
    finally:
        server.stop(60)
        remove_database(path)


def shapes_scenario(args, template, rows, workdir):
    """Pages and whole-truck readers on the build under test."""
    result, failures = {"binary": args.binary}, []
    rss_empty = empty_rss(args.binary, workdir)
    path = os.path.join(workdir, "shapes.sqlite")
    copy_database(template, path)
    server = start_server(args.binary, path, workdir)
    try:
        client = client_of(server.port)
        n = len(rows)
        _, _, count = client.request("GET", "/truck/orderCount")
        count = count.get("orderCount") if isinstance(count, dict) else count
        if count != n:
            failures.append(f"orderCount {count}, {n} expected")
        rss_loaded = settled_rss(server.pid)
        result.update(start_s=round(server.startup_seconds, 2), rss_empty_mib=round(rss_empty / 1024, 1),
                      rss_loaded_mib=round(rss_loaded / 1024, 1),
                      rss_per_order_bytes=round((rss_loaded - rss_empty) * 1024 / n, 1))

        rng = random.Random(args.seed)
        positions = [p for _, p in rows]
        id_at = {p: i for i, p in rows}
        observers = []
        shown_ids = []
        started = time.perf_counter()
        for order, after in page_specs(rng, args.pages, positions):
            observer = new_observer(client)
            query = f"/truck/orders?limit=20&order={order}" + ("" if after is None else f"&after={after}")
            status, headers, body = client.request("GET", query, headers={"Observer": observer})
            if status != 200:
                failures.append(f"{query}: {status}")
                continue
            shown, more = expected_page(positions, order, after)
            ids = [o["id"] for o in body["orders"]]
            if ids != [id_at[p] for p in shown] or ("link" in headers) != more:
                failures.append(f"{query}: not the page expected (link {headers.get('link')})")
            low, high = window(order, after, shown, more)
            observers.append(Observer("page", observer, int(headers["observation-cursor"]), low, high))
            shown_ids += ids
        result["page_reads_s"] = round(time.perf_counter() - started, 1)
        rss_pages = settled_rss(server.pid)
        # The pages' polls parked before the whole truck is read (its answers
        # leave the heap with room that later allocations reuse unseen).
        page_observers = list(observers)
        stream = Stream(client, server, [], args.grace)
        # The server's own account of each window.
        for observer in observers:
            _, _, body = client.request("GET", f"/observers/{observer.id}")
            shape = body["shapes"][0] if len(body["shapes"]) == 1 else None
            told = shape and (-INF if shape["from"] is None else shape["from"],
                              INF if shape["through"] is None else shape["through"])
            if told != (observer.low, observer.high):
                failures.append(f"observer {observer.id}: window [{observer.low}, {observer.high}], server says {body['shapes']}")
        stream.park(page_observers)
        rss_page_polls = settled_rss(server.pid)
        result["rss_per_parked_poll_kib"] = round((rss_page_polls - rss_pages) / max(1, len(page_observers)), 2)
        # Whole truck: two unobserved reads first, so that the allocator has
        # held an answer's buffers before the readers are counted.
        for _ in range(2):
            client.exchange("GET", "/truck", patience=None)
        rss_before_whole = settled_rss(server.pid)
        started, sizes = time.perf_counter(), []
        for _ in range(args.whole):
            observer = new_observer(client)
            status, headers, content = client.exchange("GET", "/truck", headers={"Observer": observer}, patience=None)
            if status != 200:
                failures.append(f"GET /truck with an observer: {status} {bytes(content[:300])!r}")
                continue
            shown = content.count(b'"donutId"')
            if shown != n:
                failures.append(f"GET /truck showed {shown} orders, {n} expected")
            sizes.append(len(content))
            observers.append(Observer("whole", observer, int(headers["observation-cursor"])))
        whole_s = time.perf_counter() - started
        rss_whole = settled_rss(server.pid)
        whole = [o for o in observers if o.kind == "whole"]
        pages = [o for o in observers if o.kind == "page"]
        if whole:
            _, _, body = client.request("GET", f"/observers/{whole[0].id}")
            result["whole_reader_entries"] = {"reads": len(body["reads"]), "shapes": body["shapes"]}
        result.update(pages=len(pages), whole=len(whole),
                      whole_answer_mb=round(statistics.mean(sizes) / 1e6, 1) if sizes else None,
                      whole_read_s=round(whole_s / max(1, len(sizes)), 2),
                      rss_per_page_reader_kib=round((rss_pages - rss_loaded) / max(1, len(pages)), 2),
                      rss_before_whole_mib=round(rss_before_whole / 1024, 1),
                      rss_per_whole_reader_kib=round((rss_whole - rss_before_whole) / max(1, len(whole)), 2))

        stream.park(whole)
        rss_parked = settled_rss(server.pid)
        result["rss_per_parked_whole_poll_kib"] = round((rss_parked - rss_whole) / max(1, len(whole)), 2)
        result["registry_mib"] = round((rss_pages - rss_loaded + rss_whole - rss_before_whole) / 1024, 1)
        result["rss_parked_mib"] = round(rss_parked / 1024, 1)

        def expect(position):
            return whole + [o for o in pages if o.holds(position)]

        live = [i for i, _ in rows]
        positions_of = {i: p for i, p in rows}
        figures, failed = run_writes(stream, random.Random(args.seed + 1), live, positions_of, args.writes, expect,
                                     targets=shown_ids)
        failures += failed
        result["stream"] = figures
        result["rss_after_stream_mib"] = round(rss_kib(server.pid) / 1024, 1)
        stream.close()
        client.close()
    finally:
        server.stop(60)
        remove_database(path)
    return result, failures


def count_scenario(binary, args, template, rows, workdir, seed):
    """The write stream with nobody parked, then with `observers` reading
    /truck/orderCount (every write wakes all). Same data and writes for any
    build."""
    result, failures = {"binary": binary}, []
    path = os.path.join(workdir, "count.sqlite")
    copy_database(template, path)
    server = start_server(binary, path, workdir)
    try:
        client = client_of(server.port)
        result["start_s"] = round(server.startup_seconds, 2)
        result["rss_loaded_mib"] = round(settled_rss(server.pid, 0.5) / 1024, 1)
        # What this build does with a read of every order.
        probe = new_observer(client)
        status, _, content = client.exchange("GET", "/truck", headers={"Observer": probe}, patience=None)
        result["whole_truck_with_observer"] = status
        if status != 200:
            result["whole_truck_answer"] = bytes(content[:200]).decode(errors="replace")
        status, _, _ = client.exchange("GET", "/truck/orders?limit=20&order=desc", headers={"Observer": probe})
        result["page_with_observer"] = status
        client.exchange("DELETE", f"/observers/{probe}")
        rng = random.Random(seed)
        live = [i for i, _ in rows]
        positions_of = {i: p for i, p in rows}
        stream = Stream(client, server, [], args.grace)
        figures, failed = run_writes(stream, rng, live, positions_of, args.compare_writes, lambda position: [])
        failures += [f"nobody parked: {f}" for f in failed]
        result["nobody_parked"] = figures
        readers = []
        for _ in range(args.pages + args.whole):
            observer = new_observer(client)
            status, headers, _ = client.exchange("GET", "/truck/orderCount", headers={"Observer": observer})
            assert status == 200, status
            readers.append(Observer("orderCount", observer, int(headers["observation-cursor"])))
        stream = Stream(client, server, readers, args.grace, marked=False)
        figures, failed = run_writes(stream, rng, live, positions_of, args.compare_writes, lambda position: readers)
        failures += [f"orderCount readers: {f}" for f in failed]
        result["count_readers"] = len(readers)
        result["count_readers_stream"] = figures
        stream.close()
        client.close()
    finally:
        server.stop(60)
        remove_database(path)
    return result, failures


def newest_binary():
    folder = "/work/bin"
    numbered = []
    if os.path.isdir(folder):
        for name in os.listdir(folder):
            if name.startswith("shapes-") and name[7:].isdigit():
                numbered.append((int(name[7:]), os.path.join(folder, name)))
    if numbered:
        return max(numbered)[1]
    return os.path.join(ROOT, ".build", "release", "observable-server")


def median_of(runs, *keys):
    values = []
    for run in runs:
        value = run
        for key in keys:
            value = value[key]
        values.append(value)
    return {"median": round(statistics.median(values), 2), "runs": values}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--pages", type=int, default=1000, help="observers each reading one page of 20")
    parser.add_argument("--whole", type=int, default=100, help="observers each reading the whole truck")
    parser.add_argument("--writes", type=int, default=1000, help="writes in the stream with page and whole readers")
    parser.add_argument("--binary", default=None, help="the build under test (default: the newest /work/bin/shapes-N, "
                                                       "else .build/release/observable-server)")
    parser.add_argument("--compare-binary", default=None, help="an older build to compare CPU per write with")
    parser.add_argument("--compare-writes", type=int, default=300, help="writes in each comparison stream")
    parser.add_argument("--rounds", type=int, default=2, help="comparison rounds, the builds alternating")
    parser.add_argument("--grace", type=float, default=0.03, help="seconds to wait for answers nobody should send")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", default="/tmp/observable-shapes-bench")
    parser.add_argument("--reseed", action="store_true", help="make the database again even when one is there")
    parser.add_argument("--skip-shapes", action="store_true", help="only the comparison")
    args = parser.parse_args()
    args.binary = os.path.abspath(args.binary or newest_binary())
    os.makedirs(args.workdir, exist_ok=True)

    load = os.getloadavg()
    result = {"machine": {"cores": os.cpu_count(), "load_at_start": [round(x, 2) for x in load]},
              "orders": args.orders, "pages": args.pages, "whole": args.whole}
    template, rows = seed(args.binary, args.workdir, args.orders, args.reseed)
    failures = []
    if not args.skip_shapes:
        figures, failed = shapes_scenario(args, template, rows, args.workdir)
        result["shapes"] = figures
        failures += failed
    if args.compare_binary:
        binaries = [args.binary, os.path.abspath(args.compare_binary)]
        runs = {b: [] for b in binaries}
        for r in range(args.rounds):
            for binary in (binaries if r % 2 == 0 else binaries[::-1]):
                figures, failed = count_scenario(binary, args, template, rows, args.workdir, args.seed + 2)
                runs[binary].append(figures)
                failures += [f"{os.path.basename(binary)} round {r}: {f}" for f in failed]
        result["compare"] = {}
        for binary, done in runs.items():
            result["compare"][binary] = {
                "start_s": median_of(done, "start_s"), "rss_loaded_mib": median_of(done, "rss_loaded_mib"),
                "cpu_per_write_us_nobody_parked": median_of(done, "nobody_parked", "cpu_per_write_us"),
                "cpu_per_write_us_count_readers": median_of(done, "count_readers_stream", "cpu_per_write_us"),
                "cpu_per_cycle_us_count_readers": median_of(done, "count_readers_stream", "cpu_per_cycle_us"),
                "last_wake_ms_p50_count_readers": median_of(done, "count_readers_stream", "last_wake_ms", "p50"),
                "whole_truck_with_observer": done[0]["whole_truck_with_observer"],
                "whole_truck_answer": done[0].get("whole_truck_answer"),
                "page_with_observer": done[0]["page_with_observer"], "rounds": done}
    result["machine"]["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    result["failures"] = failures[:20]
    result["stalls"] = {"count": len(STALLS), "first": STALLS[:10]}
    result["write_failures"] = [f for f in failures if "write " in f][:20]
    result["failure_count"] = len(failures)
    print(json.dumps(result))
    summary(result)
    sys.exit(1 if failures else 0)


def summary(result):
    out = sys.stdout
    m = result["machine"]
    print(f"\n{result['orders']:,} orders, {result['pages']:,} page readers, {result['whole']:,} whole-truck readers; "
          f"load {m['load_at_start'][0]} at start, {m['load_at_end'][0]} at end", file=out)
    s = result.get("shapes")
    if s:
        print(f"  {os.path.basename(s['binary'])}: start with the orders {s['start_s']} s; RSS empty {s['rss_empty_mib']} MiB, "
              f"loaded {s['rss_loaded_mib']} MiB = {s['rss_per_order_bytes']} B per order", file=out)
        print(f"  RSS per page reader {s['rss_per_page_reader_kib']} KiB, per whole-truck reader "
              f"{s['rss_per_whole_reader_kib']} KiB, per parked long-poll {s['rss_per_parked_poll_kib']} KiB; "
              f"all the observers' reads {s['registry_mib']} MiB", file=out)
        print(f"  GET /truck: {s['whole_answer_mb']} MB, {s['whole_read_s']} s each", file=out)
        st = s["stream"]
        if "wake_ms" in st:
            print(f"  {st['writes']} writes ({st['deletes']} deletes, {st['new_orders']} new): {st['answers']} answers, "
                  f"wake p50 {st['wake_ms']['p50']} / p99 {st['wake_ms']['p99']} ms, last answer of a write "
                  f"p50 {st['last_wake_ms']['p50']} / p99 {st['last_wake_ms']['p99']} ms; server CPU "
                  f"{st['cpu_per_write_us']} us per write ({st['cpu_per_cycle_us']} with the polls sent again)", file=out)
    for binary, c in result.get("compare", {}).items():
        print(f"  {os.path.basename(binary)}: start {c['start_s']['median']} s, RSS {c['rss_loaded_mib']['median']} MiB, "
              f"CPU per write {c['cpu_per_write_us_nobody_parked']['median']} us (nobody parked), "
              f"{c['cpu_per_write_us_count_readers']['median']} us ({c['cpu_per_cycle_us_count_readers']['median']} "
              f"with the polls sent again) with {result['pages'] + result['whole']} orderCount "
              f"readers, all woken each write); GET /truck with an observer: {c['whole_truck_with_observer']}, "
              f"a page: {c['page_with_observer']}", file=out)
    print(f"  failures: {result['failure_count']}; requests stalled until another connection woke the server: "
          f"{result['stalls']['count']}", file=out)
    for failure in (result["failures"][:5] + result["write_failures"][:10]):
        print(f"    {failure}", file=out)


if __name__ == "__main__":
    main()
