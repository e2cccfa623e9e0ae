#!/usr/bin/env python3
"""Long-poll fan-out at scale: observable-server beside the plain-C peer.

Parks N long-polls (up to ~19,000 on one instance, ~50,000 across several),
one per observer, and measures for each server:

1. server RSS per parked poll: VmRSS (summed over instances) once every
   observer is set up and once all N are parked, the difference over N;
2. wake-ups by a change nobody read: answers within 1 s (must be 0), and for
   ours the change of observable_longpoll_wakeups_total;
3. latency of a change read by exactly one observer, p50/p99 over --changes
   changes (each answered poll parks again);
4. a change every observer read: the time until each of the N has its
   answer (p50, p99, max, from just before the write is sent) and the
   server CPU (user+sys from /proc/PID/stat, summed over instances) from
   just before the write until the last answer, --rounds times, every poll
   parked again between rounds. The CPU of the same write with nothing
   parked is given beside it, since ours answers PATCH /truck with every
   donut.

Ours: each observer reads its own donut's name and the truck's name (`GET
/truck/donuts/ID?fields=name` and `GET /truck?fields=name` with `Observer:`);
the changes are `PATCH /truck/donuts/ID`, `PATCH /truck` and, read by nobody,
`POST /account/login`. The peer (../shared/bench-peer): each observer reads
key k<i> and the shared key all; the changes are `POST /keys/k<i>`, `POST
/keys/all` and `POST /keys/nobody`.

The client side is several worker processes, each holding at most
--per-worker connections, each binding its sockets to a source address of
its own (127.0.0.2, 127.0.0.3, …) since one address has only ~28,000
ephemeral ports and one process 20,000 descriptors. Each worker sets up its
observers over a few pipelined keep-alive connections, parks their polls and
reports answer times (time.monotonic, the same clock in every process) to
this process, which orders the phases and writes the changes itself. Every
wait is bounded; a run that cannot finish raises SystemExit.

    bench/fanout --peer --ours .build/release/observable-server --observers 10000
    bench/fanout --peer --ours OLD --ours NEW --alternate 4     # ours, peer, peer, ours … on fresh databases
    bench/fanout --ours BINARY --instances 3 --postgres --observers 3000   # under scripts/with-postgres

bench/fanout builds the peer into bench/out, raises the descriptor limit and
starts a throwaway PostgreSQL when --postgres has no URL. Prints a table and
one JSON line, also written to bench/out/fanout.json.
"""
import argparse
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import random
import re
import resource
import select
import shutil
import socket
import statistics
import sys
import tempfile
import time

from cluster import BASE_PORT, cpu_of, metric_sum, metrics, start_ours
from harness import Client, Postgres, Server, raise_descriptor_limit, rss_kib, stop_instances, trusted_environment
from longpoll import percentile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")
PEER = os.path.join(OUT, "mhd-peer")
HOST = "127.0.0.1"
POLL_TIMEOUT = 60  # seconds a poll waits; both servers allow at most 60
SETUP_WINDOW = 16  # requests in flight on one setup connection


# MARK: - HTTP on raw sockets


def request_bytes(method, path, body=None, headers=None):
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    return head.encode() + b"\r\n" + data


CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)


def take_response(buffer):
    """Removes one complete response from the front of `buffer` (a bytearray):
    (status, head, body), or None while it is incomplete. Lean: the clients
    of thousands of polls read their answers with it."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buffer[:end])
    length = CONTENT_LENGTH.search(head)
    stop = end + 4 + (int(length.group(1)) if length else 0)
    if len(buffer) < stop:
        return None
    body = bytes(buffer[end + 4:stop])
    del buffer[:stop]
    return int(head[9:12]), head, body


def header(head, name):
    match = re.search(rb"\r\n" + re.escape(name.encode()) + rb":[ \t]*([^\r]*)", head, re.IGNORECASE)
    return match.group(1).decode() if match else None


def connect(port, source):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.connect((HOST, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def reset(sock):
    """Closes with a reset: no TIME_WAIT holds the source port for the next run."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


class Setup:
    """A worker's keep-alive connections for setup, a few to each instance,
    each with up to SETUP_WINDOW requests in flight (HTTP/1.1 pipelining)."""

    def __init__(self, ports, source, per_instance):
        self.ports, self.source = ports, source
        self.connections = [[connect(port, source) for _ in range(per_instance)] for port in ports]
        self.used = time.monotonic()

    def exchange(self, requests, timeout):
        """requests: [(observer index, instance, bytes)], those of one observer
        sent in order on one connection; their answers (status, head, body) in
        the same order."""
        # A connection may have waited since early in the last exchange
        # while others finished it: connect anew before the server's idle
        # timeout (30 s) may have passed.
        if time.monotonic() - self.used > 20:
            for port, conns in zip(self.ports, self.connections):
                for k, sock in enumerate(conns):
                    reset(sock)
                    conns[k] = connect(port, self.source)
        self.used = time.monotonic()
        return self._exchange(requests, timeout)

    def _exchange(self, requests, timeout):
        answers = [None] * len(requests)
        queues, sockets = {}, {}
        for k, (index, instance, data) in enumerate(requests):
            conns = self.connections[instance]
            sock = conns[index % len(conns)]
            queues.setdefault(sock.fileno(), []).append((k, data))
            sockets[sock.fileno()] = sock
        waiting = {fd: [] for fd in queues}
        buffers = {fd: bytearray() for fd in queues}
        epoll = select.epoll()
        try:
            def fill(fd):
                queue = queues[fd]
                batch = []
                while queue and len(waiting[fd]) < SETUP_WINDOW:
                    k, data = queue.pop()
                    waiting[fd].append(k)
                    batch.append(data)
                if batch:
                    sockets[fd].sendall(b"".join(batch))

            for fd in queues:
                queues[fd].reverse()
                epoll.register(fd, select.EPOLLIN)
                fill(fd)
            remaining = len(requests)
            deadline = time.monotonic() + timeout
            while remaining:
                if time.monotonic() > deadline:
                    raise SystemExit(f"setup: {remaining} of {len(requests)} requests unanswered after {timeout} s")
                for fd, _ in epoll.poll(1.0):
                    chunk = sockets[fd].recv(1 << 16)
                    if not chunk:
                        raise SystemExit("setup: the server closed a keep-alive connection")
                    buffers[fd] += chunk
                    while (answer := take_response(buffers[fd])) is not None:
                        answers[waiting[fd].pop(0)] = answer
                        remaining -= 1
                    fill(fd)
        finally:
            epoll.close()
        return answers

    def close(self):
        for conns in self.connections:
            for sock in conns:
                reset(sock)


def expect(status, answer, what):
    if answer[0] != status:
        raise SystemExit(f"{what}: {answer[0]} {answer[2][:200]!r}")
    return answer


class Control:
    """This process's keep-alive connection to one instance, for the changes.
    A new one after a pause: our server closes connections idle for 30 s."""

    def __init__(self, port):
        self.port = port
        self.client = None
        self.used = 0.0

    def fresh(self):
        """Connects anew if the connection may be near the server's idle timeout
        (before a timed request, so that connecting is not timed)."""
        if self.client is None or time.monotonic() - self.used > 5:
            self.close()
            self.client = Client(self.port, timeout=None)
            self.client.connect()
            self.used = time.monotonic()

    def send(self, method, path, body=None):
        self.client.send(method, path, body)

    def finish(self):
        answer = self.client.answer()
        self.used = time.monotonic()
        return answer

    def request(self, method, path, body=None):
        self.fresh()
        self.send(method, path, body)
        return self.finish()

    def close(self):
        if self.client is not None:
            self.client.close()
            self.client = None


# MARK: - The two servers


class Ours:
    """observable-server: observers read a donut's name and the truck's name."""

    kind = "ours"

    def __init__(self, binary):
        self.binary = binary
        self.label = binary

    def start(self, count, folder, port, limit, database):
        database = database or os.path.join(folder, "observable.sqlite")
        # Like the peer's, its connections are not closed for idleness: a
        # setup connection may wait longer than the default 30 s while the
        # other instances finish theirs.
        return start_ours(count, database, folder, self.binary,
                               ["--connection-limit", str(limit), "--max-connections-per-address", str(limit),
                                "--idle-timeout", "3600"], port)

    def setup(self, session, indices, instance_of, timeout):
        """Creates each observer's donut and the observer, then tracks its two
        reads: [(observer, cursor, target)], target being the donut."""
        first = session.exchange([
            (i, instance_of(i), request_bytes(*request))
            for i in indices
            for request in (("POST", "/truck/donuts", {"name": f"Fan {i}"}), ("POST", "/observers", {"ttlSeconds": 3600}))
        ], timeout)
        donuts = [json.loads(expect(201, a, "POST /truck/donuts")[2])["id"] for a in first[0::2]]
        observers = [json.loads(expect(201, a, "POST /observers")[2])["id"] for a in first[1::2]]
        reads = session.exchange([
            (i, instance_of(i), request_bytes("GET", path, headers={"Observer": observer}))
            for i, donut, observer in zip(indices, donuts, observers)
            for path in (f"/truck/donuts/{donut}?fields=name", "/truck?fields=name")
        ], timeout)
        cursors = [int(header(expect(200, a, "GET /truck with an observer")[1], "Observation-Cursor")) for a in reads[1::2]]
        for a in reads[0::2]:
            expect(200, a, "GET /truck/donuts/ID with an observer")
        return list(zip(observers, cursors, donuts))

    def nobody(self):
        return "POST", "/account/login", {"userName": f"nobody-{random.random()}"}

    def single(self, target):
        return "PATCH", f"/truck/donuts/{target}", {"name": f"Renamed {random.random()}"}

    def every(self):
        return "PATCH", "/truck", {"name": f"Truck {random.random()}"}

    def single_evidence(self, target):
        return f'"/truck/donuts/{target}/name"'.encode()

    every_evidence = b'"/truck/name"'

    def parked(self, instances):
        return metric_sum(instances, "observable_longpolls_parked")

    def counters(self, instances):
        """What tells whether a change nobody read was committed and woke anyone."""
        return {"wakeups": metric_sum(instances, "observable_longpoll_wakeups_total"),
                "seq": metrics(instances[0].port).get("observable_change_seq", 0.0)}

    def unread(self, before, after, answer):
        return {"wakeups_metric": int(after["wakeups"] - before["wakeups"]), "committed": after["seq"] > before["seq"]}


class Peer:
    """The plain-C peer: observers read key k<i> and the key all."""

    kind = "peer"
    label = "peer"

    def start(self, count, folder, port, limit, database):
        if count != 1 or database:
            raise SystemExit("the peer runs as one instance on SQLite")
        peer = Server([PEER, "-p", str(port), "-d", os.path.join(folder, "peer.sqlite"), "-c", str(limit)], port,
                      log_path=os.path.join(folder, "peer.log"), env=trusted_environment(), name="peer",
                      preexec_fn=raise_descriptor_limit)
        return [peer.start()]

    def setup(self, session, indices, instance_of, timeout):
        created = session.exchange([(i, instance_of(i), request_bytes("POST", "/observers")) for i in indices], timeout)
        observers = [json.loads(expect(201, a, "POST /observers")[2]) for a in created]
        reads = session.exchange([
            (i, instance_of(i), request_bytes("POST", f"/observers/{o['id']}/reads?key={key}"))
            for i, o in zip(indices, observers)
            for key in (f"k{i}", "all")
        ], timeout)
        for a in reads:
            expect(204, a, "POST /observers/ID/reads")
        return [(o["id"], o["cursor"], f"k{i}") for i, o in zip(indices, observers)]

    def nobody(self):
        return "POST", "/keys/nobody", None

    def single(self, target):
        return "POST", f"/keys/{target}", None

    def every(self):
        return "POST", "/keys/all", None

    def single_evidence(self, target):
        return f'"path":"{target}"'.encode()

    every_evidence = b'"path":"all"'

    def stats(self, instance):
        with Client(instance.port, timeout=None) as client:
            return client.request("GET", "/stats")[2]

    def parked(self, instances):
        return sum(self.stats(i)["parked"] for i in instances)

    def counters(self, instances):
        return {"seq": self.stats(instances[0])["seq"]}

    def unread(self, before, after, answer):
        return {"wakeups_metric": answer["woken"], "committed": answer["seq"] > before["seq"]}


# MARK: - The client's worker processes


class Poll:
    """A long-poll on a connection of its own; `parked` until its answer arrives."""

    def __init__(self, index, observer, cursor, port):
        self.index, self.observer, self.since, self.port = index, observer, cursor, port
        self.sock = None
        self.buffer = bytearray()
        self.parked = False
        self.sent_at = 0.0
        self.answer = None

    def send(self, source):
        if self.sock is None:
            self.sock = connect(self.port, source)
        if self.answer is not None:
            self.since = json.loads(self.answer)["cursor"]
            self.answer = None
        self.sock.sendall(f"GET /observers/{self.observer}/changes?since={self.since}&timeout={POLL_TIMEOUT}"
                          f" HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        self.parked = True
        self.sent_at = time.monotonic()

    def receive(self):
        """Reads what has arrived; the answer's body once complete, else None."""
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise SystemExit(f"the server closed the connection of poll {self.index}")
        self.buffer += chunk
        answer = take_response(self.buffer)
        if answer is None:
            return None
        status, _, body = answer
        if status != 200:
            raise SystemExit(f"poll {self.index} answered {status}: {body[:200]!r}")
        self.answer = body  # its cursor is read when the poll parks again, after the timing
        self.parked = False
        return body


class Worker:
    """One client process: its observers, their polls, and a loop that reads
    answers and this process's commands (epoll over both)."""

    def __init__(self, pipe, api, ports, indices, source, setup_connections):
        self.pipe, self.api, self.ports, self.indices, self.source = pipe, api, ports, indices, source
        self.setup_connections = setup_connections
        self.polls = {}
        self.by_fd = {}
        self.epoll = select.epoll()
        self.epoll.register(pipe.fileno(), select.EPOLLIN)
        self.got = {}  # index -> (time, whether the answer holds the evidence asked for)
        self.watch = None
        self.stray = 0
        self.timeouts = 0

    def instance_of(self, index):
        return index % len(self.ports)

    def setup(self, timeout):
        started = time.monotonic()
        session = Setup(self.ports, self.source, self.setup_connections)
        try:
            made = self.api.setup(session, self.indices, self.instance_of, timeout)
        finally:
            session.close()
        targets = {}
        for index, (observer, cursor, target) in zip(self.indices, made):
            self.polls[index] = Poll(index, observer, cursor, self.ports[self.instance_of(index)])
            targets[index] = target
        return {"targets": targets, "seconds": time.monotonic() - started}

    def park(self, indices=None):
        count = 0
        for poll in (self.polls.values() if indices is None else (self.polls[i] for i in indices)):
            if not poll.parked:
                fresh = poll.sock is None
                poll.send(self.source)
                if fresh:
                    poll.sock.setblocking(False)
                    self.by_fd[poll.sock.fileno()] = poll
                    self.epoll.register(poll.sock.fileno(), select.EPOLLIN)
                count += 1
        return count

    def start_watch(self, wanted, evidence, timeout):
        """Counts what arrived between watches as stray, then waits for the
        polls in `wanted` (all of this worker's when None)."""
        self.stray += len(self.got)
        self.got = {}
        wanted = set(self.polls) if wanted is None else set(wanted)
        self.watch = (wanted, evidence, time.monotonic() + timeout)

    def end_watch(self):
        """Reports the answers once all wanted arrived, or at the deadline."""
        wanted, _, deadline = self.watch
        if not wanted.issubset(self.got) and time.monotonic() < deadline:
            return
        self.pipe.send(("answers", {"times": {i: t for i, (t, _) in self.got.items()},
                                    "missing": len(wanted - set(self.got)),
                                    "without_evidence": sum(1 for i in wanted if i in self.got and not self.got[i][1]),
                                    "others": len(set(self.got) - wanted)}))
        self.got = {}
        self.watch = None

    def answer(self, poll):
        body = poll.receive()
        if body is None:
            return
        arrived = time.monotonic()
        if b'"changes":[]' in body and arrived - poll.sent_at > POLL_TIMEOUT - 5:
            self.timeouts += 1
            poll.send(self.source)
            return
        evidence = self.watch[1] if self.watch else b""
        self.got[poll.index] = (arrived, evidence in body)

    def command(self, name, *arguments):
        if name == "park":
            self.pipe.send(("parked", self.park(*arguments)))
        elif name == "watch":
            self.start_watch(*arguments)
            self.pipe.send(("watching", None))
        elif name == "report":
            self.pipe.send(("report", {"stray": self.stray + len(self.got), "timeouts": self.timeouts}))
        elif name == "stop":
            for poll in self.polls.values():
                if poll.sock is not None:
                    reset(poll.sock)
            return False
        return True

    def run(self, setup_timeout):
        self.pipe.send(("setup", self.setup(setup_timeout)))
        pipe_fd = self.pipe.fileno()
        while True:
            for fd, _ in self.epoll.poll(0.05):
                if fd == pipe_fd:
                    if not self.command(*self.pipe.recv()):
                        return
                else:
                    self.answer(self.by_fd[fd])
            if self.watch:
                self.end_watch()


def worker_main(pipe, api, ports, indices, source, setup_connections, setup_timeout):
    raise_descriptor_limit()
    try:
        Worker(pipe, api, ports, indices, source, setup_connections).run(setup_timeout)
    except BaseException as error:  # the parent turns it into its own SystemExit
        pipe.send(("error", f"{type(error).__name__}: {error}"))


class Workers:
    """The worker processes of one run, and the exchange of commands and reports with them."""

    def __init__(self, api, ports, n, count, setup_connections):
        per = math.ceil(n / count)
        self.ranges = [range(w * per, min(n, (w + 1) * per)) for w in range(count)]
        context = multiprocessing.get_context("fork")
        self.pipes, self.processes = [], []
        self.setup_timeout = setup_timeout = max(120, n / 50)
        for w, indices in enumerate(self.ranges):
            ours, theirs = context.Pipe()
            process = context.Process(target=worker_main, daemon=True,
                                      args=(theirs, api, ports, indices, f"127.0.0.{w + 2}", setup_connections, setup_timeout))
            process.start()
            theirs.close()
            self.pipes.append(ours)
            self.processes.append(process)

    def owner(self, index):
        return next(w for w, r in enumerate(self.ranges) if index in r)

    def collect(self, kind, timeout, which=None):
        """One message of `kind` from each worker (or those in `which`), in worker order."""
        which = range(len(self.pipes)) if which is None else which
        pending = {self.pipes[w]: w for w in which}
        got = {}
        deadline = time.monotonic() + timeout
        while pending:
            ready = multiprocessing.connection.wait(list(pending), max(0.0, deadline - time.monotonic()))
            if not ready:
                raise SystemExit(f"workers {sorted(pending.values())} sent no {kind!r} within {timeout:.0f} s")
            for pipe in ready:
                try:
                    message, payload = pipe.recv()
                except EOFError:
                    raise SystemExit(f"worker {pending[pipe]} exited") from None
                if message == "error":
                    raise SystemExit(f"worker {pending[pipe]}: {payload}")
                if message != kind:
                    raise SystemExit(f"worker {pending[pipe]} sent {message!r}, expected {kind!r}")
                got[pending.pop(pipe)] = payload
        return [got[w] for w in which]

    def tell(self, *command, which=None):
        for w in (range(len(self.pipes)) if which is None else which):
            self.pipes[w].send(command)

    def stop(self):
        for pipe in self.pipes:
            try:
                pipe.send(("stop",))
            except OSError:
                pass
        for process in self.processes:
            process.join(10)
            if process.is_alive():
                process.terminate()
                process.join()


# MARK: - One run: a server (or several instances) and its measurements


def server_cpu(instances, pg_pids):
    """CPU seconds of the instances, and of PostgreSQL's processes for their database."""
    return cpu_of([i.pid for i in instances]), cpu_of(pg_pids)


def wait_parked(api, instances, n, timeout):
    deadline = time.monotonic() + timeout
    while True:
        parked = api.parked(instances)
        if parked >= n:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"only {int(parked)} of {n} long-polls parked after {timeout:.0f} s")
        time.sleep(0.05)


def measure(api, instances, workers, writer, args, postgres_pids):
    n = args.observers
    park_timeout = max(30, n / 500)
    setup = workers.collect("setup", workers.setup_timeout + 30)
    targets = {}
    for report in setup:
        targets.update(report["targets"])
    result = {"setup_seconds": round(max(r["seconds"] for r in setup), 1)}
    anomalies = []

    time.sleep(0.5)
    rss_before = sum(rss_kib(i.pid) for i in instances)
    started = time.monotonic()
    workers.tell("park")
    workers.collect("parked", park_timeout)
    wait_parked(api, instances, n, park_timeout)
    result["park_seconds"] = round(time.monotonic() - started, 1)
    time.sleep(0.5)
    rss_parked = sum(rss_kib(i.pid) for i in instances)
    result.update(rss_before_mib=round(rss_before / 1024, 1), rss_parked_mib=round(rss_parked / 1024, 1),
                  rss_per_parked_kib=round((rss_parked - rss_before) / n, 2))

    def watch(wanted_by_worker, evidence, timeout):
        which = list(wanted_by_worker)
        for w in which:
            workers.tell("watch", wanted_by_worker[w], evidence, timeout, which=[w])
        workers.collect("watching", 10, which)
        return which

    def answers(which, timeout):
        got = workers.collect("answers", timeout + 10, which)
        for report in got:
            if report["without_evidence"]:
                anomalies.append(f"{report['without_evidence']} answers without the change they were woken for")
            if report["others"]:
                anomalies.append(f"{report['others']} other polls answered")
        return got

    # A change nobody read: no answer within 1 s.
    before = api.counters(instances)
    which = watch({w: [] for w in range(len(workers.pipes))}, b"", 1.0)
    status, _, answer = writer.request(*api.nobody())
    if status >= 300:
        raise SystemExit(f"the change nobody read answered {status}")
    got = answers(which, 1.0)
    result["unread_change"] = {"answers_within_1s": sum(len(g["times"]) for g in got),
                               **api.unread(before, api.counters(instances), answer)}
    workers.tell("park")
    workers.collect("parked", park_timeout)

    # Changes read by exactly one observer.
    latencies = []
    rng = random.Random(7)
    for _ in range(args.changes):
        i = rng.randrange(n)
        w = workers.owner(i)
        which = watch({w: [i]}, api.single_evidence(targets[i]), 5.0)
        start = time.monotonic()
        status, _, _ = writer.request(*api.single(targets[i]))
        if status >= 300:
            raise SystemExit(f"the change of observer {i}'s read answered {status}")
        report = answers(which, 5.0)[0]
        if i not in report["times"]:
            raise SystemExit(f"a change read by observer {i} alone was not answered within 5 s")
        latencies.append((report["times"][i] - start) * 1000)
        workers.tell("park", [i], which=[w])
        workers.collect("parked", 10, [w])
    result["single_ms"] = {"p50": round(percentile(latencies, 50), 2), "p99": round(percentile(latencies, 99), 2),
                           "max": round(max(latencies), 2), "changes": len(latencies)}

    # A change every observer read, --rounds times.
    rounds = []
    wake_timeout = max(30, n / 200)
    for _ in range(args.rounds):
        workers.tell("park")
        workers.collect("parked", park_timeout)
        wait_parked(api, instances, n, park_timeout)
        time.sleep(0.2)
        which = watch({w: None for w in range(len(workers.pipes))}, api.every_evidence, wake_timeout)
        writer.fresh()
        pg_pids = postgres_pids()  # again each round: the instances' pools may have grown
        cpu_before = server_cpu(instances, pg_pids)
        start = time.monotonic()
        writer.send(*api.every())
        got = answers(which, wake_timeout)
        cpu_after = server_cpu(instances, pg_pids)
        if os.environ.get("FANOUT_TRACE"):  # the window of each wake-all, on CLOCK_MONOTONIC (perf record -k CLOCK_MONOTONIC)
            print(f"wake-all window {start:.3f},{time.monotonic():.3f}", file=sys.stderr, flush=True)
        status, _, _ = writer.finish()
        if status >= 300:
            raise SystemExit(f"the change all read answered {status}")
        missing = sum(g["missing"] for g in got)
        if missing:
            raise SystemExit(f"{missing} of {n} polls unanswered {wake_timeout:.0f} s after a change all of them read")
        times = sorted((t - start) * 1000 for g in got for t in g["times"].values())
        rounds.append({"p50": round(percentile(times, 50), 1), "p99": round(percentile(times, 99), 1),
                       "max": round(times[-1], 1), "cpu_ms": round((cpu_after[0] - cpu_before[0]) * 1000),
                       "postgres_cpu_ms": round((cpu_after[1] - cpu_before[1]) * 1000) if pg_pids else None})
    result["all_rounds"] = rounds
    result["all"] = {key: statistics.median(r[key] for r in rounds) for key in ("p50", "p99", "max", "cpu_ms")}

    # The same write with nothing parked (the polls stay answered).
    repeats = 5
    cpu_before = server_cpu(instances, [])
    for _ in range(repeats):
        writer.request(*api.every())
    result["all_write_alone_cpu_ms"] = round((server_cpu(instances, [])[0] - cpu_before[0]) * 1000 / repeats, 1)

    workers.tell("report")
    reports = workers.collect("report", 10)
    result["stray_answers"] = sum(r["stray"] for r in reports)
    result["poll_timeouts"] = sum(r["timeouts"] for r in reports)
    result["anomalies"] = anomalies[:20]
    return result


def exited(instances):
    return [i.port for i in instances if not i.alive()]


def run(api, args, folder, port, postgres):
    """Starts the server(s) afresh, sets up the observers, measures, stops."""
    n = args.observers
    count = args.instances if api.kind == "ours" else 1
    workers_count = args.workers or max(2, math.ceil(n / args.per_worker))
    per_instance = math.ceil(n / count)
    limit = per_instance + workers_count * args.setup_connections + 100
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if limit > hard:
        raise SystemExit(f"{per_instance} polls on one instance need {limit} descriptors; the hard limit is {hard}")
    if math.ceil(n / workers_count) + count * args.setup_connections + 64 > hard:
        raise SystemExit(f"{workers_count} workers hold too many polls each for {hard} descriptors: use --workers")
    database_name = postgres.fresh(f"fanout {count}x") if postgres and api.kind == "ours" else None
    instances = api.start(count, folder, port, limit, database_name and postgres.url(database_name))
    postgres_pids = (lambda: postgres.pids(database_name)) if database_name else list
    workers = writer = None
    try:
        workers = Workers(api, [i.port for i in instances], n, workers_count, args.setup_connections)
        writer = Control(instances[0].port)
        result = measure(api, instances, workers, writer, args, postgres_pids)
        if exited(instances):
            raise SystemExit(f"{api.label} on ports {exited(instances)} exited during the run")
    except OSError as error:
        gone = f" (the server on ports {exited(instances)} exited)" if exited(instances) else ""
        raise SystemExit(f"{api.label}: {error}{gone}") from error
    finally:
        if writer:
            writer.close()
        if workers:
            workers.stop()
        stop_instances(instances)
    return {"server": api.label, "kind": api.kind, "instances": count, "engine": "postgres" if database_name else "sqlite",
            "observers": n, "workers": workers_count, "connection_limit": limit, **result}


# MARK: - Main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ours", action="append", default=[], metavar="BINARY", help="an observable-server build (repeatable)")
    parser.add_argument("--peer", action="store_true", help=f"the plain-C peer ({os.path.relpath(PEER, ROOT)})")
    parser.add_argument("--observers", type=int, default=10000, help="parked long-polls in all")
    parser.add_argument("--rounds", type=int, default=3, help="wake-alls per run")
    parser.add_argument("--changes", type=int, default=100, help="changes read by one observer")
    parser.add_argument("--alternate", type=int, default=1, metavar="R",
                        help="runs of every server, in alternating order (ours, peer, peer, ours …), each on a fresh database")
    parser.add_argument("--instances", type=int, default=1, help="instances of ours, on one PostgreSQL database")
    parser.add_argument("--postgres", nargs="?", const=os.environ.get("OBSERVABLE_TEST_POSTGRES_ADMIN_URL", ""),
                        metavar="ADMIN_URL", help="run ours on PostgreSQL, a fresh database per run"
                        " (default URL: $OBSERVABLE_TEST_POSTGRES_ADMIN_URL, set by scripts/with-postgres)")
    parser.add_argument("--per-worker", type=int, default=15000, help="most connections one client process holds")
    parser.add_argument("--workers", type=int, help="client processes (default: enough for --per-worker, at least 2)")
    parser.add_argument("--setup-connections", type=int, default=4, help="setup connections per worker and instance")
    args = parser.parse_args()
    if not args.ours and not args.peer:
        parser.error("name a server: --peer and/or --ours BINARY")
    if args.instances > 1 and args.postgres is None:
        parser.error("several instances share a PostgreSQL database: add --postgres")
    if args.postgres == "":
        raise SystemExit("--postgres without a URL runs under scripts/with-postgres (bench/fanout does that)")
    for binary in args.ours:
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"{binary} is not an executable")
    if args.peer and not os.access(PEER, os.X_OK):
        raise SystemExit(f"{PEER} is missing: cc -O2 -o bench/out/mhd-peer ../shared/bench-peer/server.c"
                         " -lmicrohttpd -lsqlite3 -lpthread (bench/fanout does that)")
    raise_descriptor_limit()
    postgres = Postgres(args.postgres) if args.postgres else None
    servers = [Ours(binary) for binary in args.ours] + ([Peer()] if args.peer else [])
    results = {"machine": {"cores": os.cpu_count(), "kernel": os.uname().release,
                           "load_before": [round(x, 2) for x in os.getloadavg()],
                           "descriptor_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[1]},
               "observers": args.observers, "instances": args.instances, "rounds": args.rounds, "runs": []}
    started = time.time()
    port = BASE_PORT + 200
    for r in range(args.alternate):
        for api in (servers if r % 2 == 0 else servers[::-1]):
            folder = tempfile.mkdtemp(prefix="observable-fanout-")
            print(f"round {r + 1}: {api.label} …", file=sys.stderr, flush=True)
            try:
                row = run(api, args, folder, port, postgres)
            except BaseException:
                print(f"server logs kept in {folder}", file=sys.stderr)
                raise
            port += args.instances  # a new port each run: closed connections may hold the last one
            shutil.rmtree(folder, ignore_errors=True)
            results["runs"].append({"round": r + 1, **row})
    results["ratios"] = ratios(results["runs"])
    results["seconds"] = round(time.time() - started)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "fanout.json"), "w") as f:
        json.dump(results, f, indent=2)
    print_table(results)
    print(json.dumps(results))


def ratios(runs):
    """Each build of ours over the peer of the same round, median over rounds."""
    peer = {row["round"]: row for row in runs if row["kind"] == "peer"}
    found = {}
    for label in dict.fromkeys(row["server"] for row in runs if row["kind"] == "ours"):
        pairs = [(row, peer[row["round"]]) for row in runs if row["server"] == label and row["round"] in peer]
        if not pairs:
            continue

        def median_ratio(value):
            values = [value(o) / value(p) for o, p in pairs if value(p)]
            return round(statistics.median(values), 2) if values else None

        found[label] = {"all_wake_cpu": median_ratio(lambda row: row["all"]["cpu_ms"]),
                        "all_wake_max": median_ratio(lambda row: row["all"]["max"]),
                        "rss_per_parked": median_ratio(lambda row: row["rss_per_parked_kib"]),
                        "rounds": len(pairs)}
    return found


def print_table(results):
    m = results["machine"]
    print(f"\nmachine: {m['cores']} cores, Linux {m['kernel']}, load before {m['load_before']};"
          f" {results['observers']} parked long-polls, {results['rounds']} wake-alls per run")
    print(f"\n{'round':>5} {'server':32} {'inst':>4} {'RSS/parked':>10} {'unread':>7} {'one p50/p99 ms':>15}"
          f" {'all p50/p99/max ms':>20} {'all CPU ms':>10} {'write alone':>11}  each round (max ms / CPU ms)")
    for row in results["runs"]:
        unread = row["unread_change"]
        a = row["all"]
        each = ", ".join(f"{r['max']:.0f}/{r['cpu_ms']}" + (f"+PG {r['postgres_cpu_ms']}" if r["postgres_cpu_ms"] is not None else "")
                         for r in row["all_rounds"])
        server = row["server"] if len(row["server"]) <= 32 else "…" + row["server"][-31:]
        print(f"{row['round']:>5} {server:32} {row['instances']:>4} {row['rss_per_parked_kib']:>7.2f} KiB"
              f" {unread['answers_within_1s']:>3}/{unread['wakeups_metric']:<3}"
              f" {row['single_ms']['p50']:>7.2f}/{row['single_ms']['p99']:<7.2f}"
              f" {a['p50']:>6.0f}/{a['p99']:>6.0f}/{a['max']:>6.0f} {a['cpu_ms']:>10.0f} {row['all_write_alone_cpu_ms']:>11.1f}  {each}")
        notes = [f"setup {row['setup_seconds']} s, park {row['park_seconds']} s"]
        if not unread["committed"]:
            notes.append("the change nobody read was not committed")
        if row["stray_answers"] or row["poll_timeouts"]:
            notes.append(f"{row['stray_answers']} stray answers, {row['poll_timeouts']} polls timed out and parked again")
        print("      " + "; ".join(notes + row["anomalies"]))
    print("  (unread: answers within 1 s of a change nobody read / wake-ups the server counted;"
          " CPU summed over instances; write alone: the wake-all's write with nothing parked)")
    for label, r in results["ratios"].items():
        print(f"\n{label} / peer, median of {r['rounds']} rounds: wake-all CPU {r['all_wake_cpu']},"
              f" wake-all max time {r['all_wake_max']}, RSS per parked poll {r['rss_per_parked']}")
    print(f"\n{results['seconds']} s in all")


if __name__ == "__main__":
    main()
