#!/usr/bin/env python3
"""Event streams of the change feed against a running observable-server
(loopback only).

Opens N streams (`Accept: text/event-stream`), each for an observer that read
the truck's name, then measures: server RSS per open stream; events sent to
streams by a change nobody read; time until every stream has the event of a
change all read; server CPU while N streams sit idle for `--idle` seconds
(heartbeats only). Prints one JSON object.

    bench/streams.py --port 8080 --pid PID --streams 10000

The server needs `--max-connections-per-address` above N: every stream
comes from 127.0.0.1 (bench/run starts it so).
"""
import argparse
import json
import selectors
import socket
import time

from harness import HOST, Client, cpu_seconds, rss_kib


class Stream:
    """One open stream on its own non-blocking connection: counts the
    events and comment lines it receives."""

    def __init__(self, port, observer):
        self.sock = socket.create_connection((HOST, port))
        self.sock.sendall(f"GET /observers/{observer}/changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.sock.setblocking(False)
        self.data = b""
        self.events = 0
        self.comments = 0
        self.last_event_at = None

    def read(self):
        try:
            chunk = self.sock.recv(65536)
        except BlockingIOError:
            return
        if not chunk:
            raise ConnectionError("stream closed")
        self.data += chunk
        # Counted on all the text so far (a stream here receives little):
        # chunk framing never splits these markers.
        events = self.data.count(b"event: changes")
        # A heartbeat is the chunk ":\n\n" (size 3).
        comments = self.data.count(b"3\r\n:\n\n\r\n")
        if events > self.events:
            self.last_event_at = time.time()
        self.events, self.comments = events, comments


def pump(selector, until):
    while time.time() < until:
        for key, _ in selector.select(timeout=max(0, min(0.05, until - time.time()))):
            key.data.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--streams", type=int, default=10000)
    parser.add_argument("--idle", type=float, default=30, help="seconds of silence measured for heartbeats")
    args = parser.parse_args()

    setup = Client(args.port, timeout=None)
    rss_before = rss_kib(args.pid)
    observers = []
    for _ in range(args.streams):
        _, _, body = setup.request("POST", "/observers", {"ttlSeconds": 3600})
        observers.append(body["id"])
        setup.request("GET", "/truck?fields=name", headers={"Observer": body["id"]})
    rss_observers = rss_kib(args.pid)

    selector = selectors.DefaultSelector()
    streams = []
    for observer in observers:
        stream = Stream(args.port, observer)
        selector.register(stream.sock, selectors.EVENT_READ, stream)
        streams.append(stream)
    deadline = time.time() + 60
    while setup.metric("observable_streams_open") < args.streams and time.time() < deadline:
        pump(selector, time.time() + 0.1)
    pump(selector, time.time() + 0.5)
    open_streams = setup.metric("observable_streams_open")
    rss_streams = rss_kib(args.pid)

    # A change nobody read: no stream hears of it.
    before = sum(s.events for s in streams)
    setup.request("POST", "/truck/orders", {"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": 1})
    pump(selector, time.time() + 1.0)
    unread_events = sum(s.events for s in streams) - before

    # A change every stream read: until the last has it.
    for stream in streams:
        stream.last_event_at = None
    start = time.time()
    setup.request("PATCH", "/truck", {"name": "Streaming Truck"})
    end = start + 10
    while time.time() < end and any(s.last_event_at is None for s in streams):
        pump(selector, time.time() + 0.02)
    times = sorted((s.last_event_at - start) for s in streams if s.last_event_at is not None)
    delivered = len(times)

    # Idle: only heartbeats (after the fan-out has settled).
    pump(selector, time.time() + 3)
    comments_before = sum(s.comments for s in streams)
    cpu_before = cpu_seconds(args.pid)
    idle_start = time.time()
    pump(selector, idle_start + args.idle)
    idle_seconds = time.time() - idle_start
    idle_cpu = cpu_seconds(args.pid) - cpu_before
    heartbeats = sum(s.comments for s in streams) - comments_before

    print(json.dumps({
        "streams": args.streams,
        "open": int(open_streams),
        "rss_kib": {"before": rss_before, "observers": rss_observers, "streams": rss_streams},
        "kib_per_stream": round((rss_streams - rss_observers) / args.streams, 2),
        "events_for_a_change_nobody_read": unread_events,
        "change_read_by_all": {"delivered": delivered, "p50_ms": round(times[len(times) // 2] * 1000, 1) if times else None,
                               "last_ms": round(times[-1] * 1000, 1) if times else None},
        "idle": {"seconds": round(idle_seconds, 1), "heartbeats": heartbeats,
                 "cpu_percent_of_one_core": round(100 * idle_cpu / idle_seconds, 2)},
    }))


if __name__ == "__main__":
    main()
