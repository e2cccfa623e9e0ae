#!/usr/bin/env python3
"""The observation registry's estimate of its memory (observable_registry_bytes
in /metrics, what --max-registry-memory bounds) against what the server's
resident memory grows by, scenario by scenario, each on a fresh server and
database.

    bench/registry-memory.py [--binary .build/release/observable-server] [--donuts 5000]
    bench/registry-memory.py --fan-out [--observers 20000] [--writes 6000] [--cap 64M]

Each scenario makes its observers and reads on one keep-alive connection,
then waits until the server is idle (its read journal folded) and reads
VmRSS and the estimate; the growth of each from before the observers is
printed with their ratio. The server runs with the quotas of a trusted
address (TRUSTED_QUOTAS in scripts/harness/server.py).
"""
import argparse
import json
import os
import shutil
import tempfile
import time

from harness import Client, Server, cpu_seconds, rss_kib, serve_command, trusted_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(binary, folder, port):
    """A server on a new database in `folder`, started, and a client of it."""
    database = os.path.join(tempfile.mkdtemp(dir=folder), "observable.sqlite")
    server = Server(serve_command(binary, database, port, ["--log-level", "warning"]), port, env=trusted_environment())
    return server.start(60), Client(port, timeout=120)


def request(client, method, path, body=None, headers=None):
    status, _, payload = client.exchange(method, path, body, headers)
    if status >= 300:
        raise SystemExit(f"{method} {path}: {status} {bytes(payload[:200])!r}")
    return json.loads(payload) if payload else None


def settle(server):
    """Waits until the server has used no CPU for a second (at most a minute)."""
    last = cpu_seconds(server.pid)
    for _ in range(120):
        time.sleep(0.5)
        now = cpu_seconds(server.pid)
        if now - last < 0.005:
            return
        last = now


def figures(server, client):
    """Resident memory and the registry's estimate, in bytes, once the server is idle."""
    settle(server)
    values = client.metrics()
    if "observable_registry_bytes" not in values:
        raise SystemExit("no observable_registry_bytes in /metrics")
    return rss_kib(server.pid) * 1024, int(values["observable_registry_bytes"])


def scenarios():
    """(name, observers, reads): the paths observer number i reads, given the donuts' ids."""
    return [
        ("400 observers, each GET /truck/donuts", 400, lambda i, donuts: ["/truck/donuts"]),
        ("50,000 observers, no reads", 50_000, lambda i, donuts: []),
        ("50,000 observers, each GET /truck", 50_000, lambda i, donuts: ["/truck"]),
        ("20,000 observers, each GET /truck?fields=name then /truck/donuts", 20_000,
         lambda i, donuts: ["/truck?fields=name", "/truck/donuts"]),
        ("20 observers, each every donut one by one", 20, lambda i, donuts: [f"/truck/donuts/{d}" for d in donuts]),
        ("5,000 observers, each 20 donuts of its own", 5_000,
         lambda i, donuts: [f"/truck/donuts/{donuts[(20 * i + k) % len(donuts)]}" for k in range(20)]),
    ]


def fan_out(args):
    """The cap under fan-out: a server with --max-registry-memory `cap`,
    `observers` observers that read /truck/orderCount and never poll, then
    `writes` orders, each of which reaches every observer. Prints the
    estimate and the resident memory's growth from before the observers,
    at their peak and at the end, against the cap."""
    folder = tempfile.mkdtemp(prefix="observable-registry-fanout-")
    env = {**trusted_environment(), "OBSERVABLE_MAX_REGISTRY_MEMORY": args.cap}
    database = os.path.join(folder, "observable.sqlite")
    server = Server(serve_command(args.binary, database, args.port, ["--log-level", "warning"]), args.port, env=env).start(60)
    client = Client(args.port, timeout=120)
    try:
        rss_before, estimate_before = figures(server, client)
        for _ in range(args.observers):
            observer = request(client, "POST", "/observers", {"ttlSeconds": 86400})["id"]
            request(client, "GET", "/truck/orderCount", headers={"Observer": observer})
        rss_observers, estimate_observers = figures(server, client)
        peak_rss, peak_estimate = rss_observers, estimate_observers
        donut = request(client, "GET", "/truck/donuts")["donuts"][0]["id"]
        started = time.monotonic()
        for i in range(args.writes):
            request(client, "POST", "/truck/orders", {"donutId": donut, "quantity": 1})
            if i % 250 == 0:
                peak_rss = max(peak_rss, rss_kib(server.pid) * 1024)
                peak_estimate = max(peak_estimate, int(client.metrics()["observable_registry_bytes"]))
        elapsed = time.monotonic() - started
        rss_after, estimate_after = figures(server, client)
        peak_rss, peak_estimate = max(peak_rss, rss_after), max(peak_estimate, estimate_after)
    finally:
        client.close()
        server.stop(30)
        shutil.rmtree(folder, ignore_errors=True)
    mib = 2 ** 20
    print(f"cap {args.cap}; {args.observers} observers of /truck/orderCount that never poll; {args.writes} orders "
          f"in {elapsed:.1f} s ({args.writes / elapsed:.0f} a second)")
    print(f"resident before observers {rss_before / mib:.1f} MiB; estimate before {estimate_before / mib:.1f} MiB")
    print(f"after the observers: resident +{(rss_observers - rss_before) / mib:.1f} MiB, estimate {estimate_observers / mib:.1f} MiB")
    print(f"peak during the orders: resident +{(peak_rss - rss_before) / mib:.1f} MiB, estimate {peak_estimate / mib:.1f} MiB")
    print(f"after the orders: resident +{(rss_after - rss_before) / mib:.1f} MiB, estimate {estimate_after / mib:.1f} MiB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "observable-server"))
    parser.add_argument("--donuts", type=int, default=5000)
    parser.add_argument("--port", type=int, default=18571)
    parser.add_argument("--only", default="", help="run only the scenarios whose name contains this")
    parser.add_argument("--fan-out", action="store_true", help="the cap under fan-out, instead of the scenarios")
    parser.add_argument("--observers", type=int, default=20_000)
    parser.add_argument("--writes", type=int, default=6_000)
    parser.add_argument("--cap", default="64M")
    args = parser.parse_args()
    if args.fan_out:
        fan_out(args)
        return
    folder = tempfile.mkdtemp(prefix="observable-registry-memory-")
    try:
        print(f"{'scenario':48} {'RSS growth':>12} {'estimate':>12} {'estimate/RSS':>13}")
        for name, count, reads in scenarios():
            if args.only not in name:
                continue
            server, client = start(args.binary, folder, args.port)
            try:
                for i in range(args.donuts - 4):
                    request(client, "POST", "/truck/donuts", {"name": f"Donut {i}"})
                donuts = [d["id"] for d in request(client, "GET", "/truck/donuts")["donuts"]]
                rss_before, estimate_before = figures(server, client)
                for i in range(count):
                    observer = request(client, "POST", "/observers", {"ttlSeconds": 86400})["id"]
                    for path in reads(i, donuts):
                        request(client, "GET", path, headers={"Observer": observer})
                rss_after, estimate_after = figures(server, client)
            finally:
                client.close()
                server.stop(30)
            rss, estimate = rss_after - rss_before, estimate_after - estimate_before
            print(f"{name:48} {rss / 2**20:9.1f} MiB {estimate / 2**20:9.1f} MiB {estimate / max(rss, 1):13.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
