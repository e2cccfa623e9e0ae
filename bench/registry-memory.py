#!/usr/bin/env python3
"""The observation registry's estimate of its memory (observable_registry_bytes
in /metrics, what --max-registry-memory bounds) against what the server's
resident memory grows by, scenario by scenario, each on a fresh server and
database.

    bench/registry-memory.py [--binary .build/release/observable-server] [--donuts 5000]

Each scenario makes its observers and reads on one keep-alive connection,
then waits until the server is idle (its read journal folded) and reads
VmRSS and the estimate; the growth of each from before the observers is
printed with their ratio. The server runs with the quotas of a trusted
address (bench/run.py's TRUSTED_QUOTAS).
"""
import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from longpoll import rss_kib  # noqa: E402
from run import cpu_seconds, trusted_environment, wait_up  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Server:
    def __init__(self, binary, folder, port):
        self.port = port
        database = os.path.join(tempfile.mkdtemp(dir=folder), "observable.sqlite")
        self.process = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--database", database,
                                         "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        env=trusted_environment())
        wait_up(port, self.process, seconds=60)
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def request(self, method, path, body=None, headers=None):
        self.connection.request(method, path, body=None if body is None else json.dumps(body),
                                headers={"Content-Type": "application/json", **(headers or {})})
        response = self.connection.getresponse()
        data = response.read()
        if response.status >= 300:
            raise SystemExit(f"{method} {path}: {response.status} {data[:200]!r}")
        return json.loads(data) if data else None

    def registry_bytes(self):
        self.connection.request("GET", "/metrics")
        for line in self.connection.getresponse().read().decode().splitlines():
            if line.startswith("observable_registry_bytes "):
                return int(line.split()[1])
        raise SystemExit("no observable_registry_bytes in /metrics")

    def settle(self):
        """Waits until the server has used no CPU for a second (at most a minute)."""
        last = cpu_seconds(self.process.pid)
        for _ in range(120):
            time.sleep(0.5)
            now = cpu_seconds(self.process.pid)
            if now - last < 0.005:
                return
            last = now

    def figures(self):
        self.settle()
        return rss_kib(self.process.pid) * 1024, self.registry_bytes()

    def stop(self):
        self.process.terminate()
        self.process.wait(30)


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "observable-server"))
    parser.add_argument("--donuts", type=int, default=5000)
    parser.add_argument("--port", type=int, default=18571)
    parser.add_argument("--only", default="", help="run only the scenarios whose name contains this")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="observable-registry-memory-")
    try:
        print(f"{'scenario':48} {'RSS growth':>12} {'estimate':>12} {'estimate/RSS':>13}")
        for name, count, reads in scenarios():
            if args.only not in name:
                continue
            server = Server(args.binary, folder, args.port)
            try:
                for i in range(args.donuts - 4):
                    server.request("POST", "/truck/donuts", {"name": f"Donut {i}"})
                donuts = [d["id"] for d in server.request("GET", "/truck/donuts")["donuts"]]
                rss_before, estimate_before = server.figures()
                for i in range(count):
                    observer = server.request("POST", "/observers", {"ttlSeconds": 86400})["id"]
                    for path in reads(i, donuts):
                        server.request("GET", path, headers={"Observer": observer})
                rss_after, estimate_after = server.figures()
            finally:
                server.stop()
            rss, estimate = rss_after - rss_before, estimate_after - estimate_before
            print(f"{name:48} {rss / 2**20:9.1f} MiB {estimate / 2**20:9.1f} MiB {estimate / max(rss, 1):13.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
