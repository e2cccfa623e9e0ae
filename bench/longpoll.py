#!/usr/bin/env python3
"""Long-poll fan-out against a running observable-server (loopback only).

Parks N observers, each having read its own donut's name and the shared
/truck/name, then measures: server RSS per parked long-poll; wake-ups caused
by a change nobody read; latency of a change read by exactly one observer
(p50/p99 over 100 changes); time until all N have their answer for a change
that all read; server CPU per change with N versus 10 observers parked on
other keys. Prints one JSON object. Bounded in time and count.

The server needs `--max-connections-per-address` above N: every poll comes
from 127.0.0.1 (bench/run starts it so).
"""
import argparse
import json
import random
import select
import socket
import time

from harness import HOST, Client, cpu_seconds, rss_kib


class Poll:
    """A parked long-poll on its own connection."""

    timeout = 60    # seconds the server keeps it parked (its --max-long-poll bounds it)
    headers = ""    # more header lines, each ending in \r\n

    def __init__(self, port, observer, since):
        self.observer = observer
        self.since = since
        self.sock = socket.create_connection((HOST, port))
        self.sock.setblocking(False)
        self.buffer = b""
        self.answered_at = None

    def send(self):
        self.buffer = b""
        self.answered_at = None
        request = f"GET /observers/{self.observer}/changes?since={self.since}&timeout={self.timeout} HTTP/1.1\r\nHost: x\r\n{self.headers}\r\n"
        self.sock.setblocking(True)
        self.sock.sendall(request.encode())
        self.sock.setblocking(False)

    def read(self):
        """Reads what is there; returns the answer once complete."""
        try:
            chunk = self.sock.recv(65536)
        except BlockingIOError:
            return None
        if not chunk:
            raise ConnectionError("closed")
        self.buffer += chunk
        if b"\r\n\r\n" not in self.buffer:
            return None
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        length = 0
        for line in head.decode().split("\r\n")[1:]:
            if line.lower().startswith("content-length:"):
                length = int(line.split(":", 1)[1])
        if len(rest) < length:
            return None
        answer = json.loads(rest[:length])
        self.since = answer["cursor"]
        return answer


def wait_parked(client, count, deadline=30):
    end = time.time() + deadline
    while time.time() < end:
        if client.metric("observable_longpolls_parked") >= count:
            return True
        time.sleep(0.05)
    return False


def collect(epoll, polls_by_fd, wanted, timeout):
    """Waits for answers from the polls in `wanted` (fds); returns {fd: (time, answer)}."""
    got = {}
    end = time.time() + timeout
    while len(got) < len(wanted) and time.time() < end:
        for fd, _ in epoll.poll(0.05):
            poll = polls_by_fd[fd]
            answer = poll.read()
            if answer is not None:
                got[fd] = (time.perf_counter(), answer)
    return got


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the server's process id (RSS and CPU)")
    parser.add_argument("--observers", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=100)
    args = parser.parse_args()
    n = args.observers
    client = Client(args.port, timeout=None)
    random.seed(7)

    # Setup: one donut per observer, each observer reads its donut's name and the truck's name.
    donuts = []
    for i in range(n):
        status, _, body = client.request("POST", "/truck/donuts", {"name": f"Bench {i}"})
        assert status == 201, status
        donuts.append(body["id"])
    observers = []
    for i in range(n):
        _, _, body = client.request("POST", "/observers", {"ttlSeconds": 3600})
        observer = body["id"]
        client.request("GET", f"/truck/donuts/{donuts[i]}?fields=name", headers={"Observer": observer})
        _, headers, _ = client.request("GET", "/truck?fields=name", headers={"Observer": observer})
        observers.append((observer, int(headers["observation-cursor"])))

    time.sleep(0.5)
    rss_before = rss_kib(args.pid)
    epoll = select.epoll()
    polls, polls_by_fd = [], {}
    for observer, cursor in observers:
        poll = Poll(args.port, observer, cursor)
        poll.send()
        polls.append(poll)
        polls_by_fd[poll.sock.fileno()] = poll
        epoll.register(poll.sock.fileno(), select.EPOLLIN)
    if not wait_parked(client, n):
        raise SystemExit("not all long-polls parked")
    time.sleep(0.5)
    rss_after = rss_kib(args.pid)
    result = {"observers": n, "rss_per_parked_kib": round((rss_after - rss_before) / n, 2),
              "rss_before_mib": round(rss_before / 1024, 1), "rss_parked_mib": round(rss_after / 1024, 1)}

    # A change nobody read wakes nobody.
    wakeups = client.metric("observable_longpoll_wakeups_total")
    client.request("POST", "/account/login", {"userName": f"nobody-{random.random()}"})
    stray = collect(epoll, polls_by_fd, set(polls_by_fd), 1.0)
    result["spurious_wakeups"] = len(stray) + int(client.metric("observable_longpoll_wakeups_total") - wakeups)

    # A change read by exactly one observer.
    latencies = []
    for _ in range(args.changes):
        i = random.randrange(n)
        poll = polls[i]
        start = time.perf_counter()
        client.request("PATCH", f"/truck/donuts/{donuts[i]}", {"name": f"Renamed {random.random()}"})
        got = collect(epoll, polls_by_fd, {poll.sock.fileno()}, 5.0)
        if poll.sock.fileno() not in got:
            raise SystemExit("a single-observer change was not delivered")
        latencies.append((got[poll.sock.fileno()][0] - start) * 1000)
        poll.send()
    wait_parked(client, n)
    result["single_wake_ms"] = {"p50": round(percentile(latencies, 50), 3), "p99": round(percentile(latencies, 99), 3)}

    # Registry cost: CPU per change nobody read, with N parked on other keys.
    def cpu_per_change(count=1000):
        before = cpu_seconds(args.pid)
        for k in range(count):
            client.request("POST", "/account/login", {"userName": f"user-{k}-{random.random()}"})
        return (cpu_seconds(args.pid) - before) / count * 1e6

    result["cpu_per_unread_change_us_with_n_parked"] = round(cpu_per_change(), 1)

    # A change every observer read.
    cpu_before = cpu_seconds(args.pid)
    start = time.perf_counter()
    client.request("PATCH", "/truck", {"name": f"Truck {random.random()}"})
    got = collect(epoll, polls_by_fd, set(polls_by_fd), 30.0)
    if len(got) != n:
        raise SystemExit(f"only {len(got)} of {n} answered")
    cpu_all = cpu_seconds(args.pid) - cpu_before
    times = [(t - start) * 1000 for t, _ in got.values()]
    result["all_wake_server_cpu_ms"] = round(cpu_all * 1000, 1)
    result["all_wake_ms"] = {"p50": round(percentile(times, 50), 1), "p99": round(percentile(times, 99), 1),
                             "max": round(max(times), 1)}

    # Re-park only 10, and measure the same unread change again.
    for poll in polls[:10]:
        poll.send()
    for poll in polls[10:]:
        epoll.unregister(poll.sock.fileno())
        poll.sock.close()
    time.sleep(0.3)
    result["cpu_per_unread_change_us_with_10_parked"] = round(cpu_per_change(), 1)
    for poll in polls[:10]:
        poll.sock.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
