#!/usr/bin/env python3
"""How long a restart takes with the largest database the row quota allows:
every collection filled to --max-rows (orders, donuts, posts with the
longest image URLs, jobs, games of the most pairs (26: 52 cards each), the grid's dots), the
server stopped with SIGTERM, started again, and timed until /healthz answers.

    bench/restart.py [--binary .build/release/observable-server] [--rows 5000] [--rounds 3]

The filling client is trusted (past the write rate and the quota it fills
to); the restart is the server's defaults.
"""
import argparse
import json
import os
import shutil
import tempfile
import time

from harness import Client, Server, serve_command, trusted_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def request(client, method, path, body=None):
    status, _, payload = client.exchange(method, path, body)
    if status >= 300:
        raise SystemExit(f"{method} {path}: {status} {bytes(payload[:200])!r}")
    return json.loads(payload) if payload else None


def fill(client, rows):
    donut = request(client, "GET", "/truck/donuts")["donuts"][0]["id"]
    url = "https://example.com/" + "a" * 2000 + ".png"
    for i in range(rows - 4):
        request(client, "POST", "/truck/donuts", {"name": f"Donut {i}"})
    for i in range(rows):
        request(client, "POST", "/truck/orders", {"donutId": donut, "quantity": 1 + i % 1000})
        request(client, "POST", "/posts", {"imageURL": url, "height": 100 + i % 300})
        request(client, "POST", "/jobs", {"total": 100})
        request(client, "POST", "/games", {"pairs": 26, "seed": i})
    for _ in range(rows // 100):
        request(client, "POST", "/grid/rows", {"dots": 100})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "observable-server"))
    parser.add_argument("--rows", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18591)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="observable-restart-")
    database = os.path.join(folder, "observable.sqlite")
    command = serve_command(args.binary, database, args.port, ["--log-level", "warning", "--max-rows", str(args.rows)])
    try:
        server = Server(command, args.port, env=trusted_environment()).start(60)
        client = Client(args.port, timeout=120)
        started = time.monotonic()
        fill(client, args.rows)
        client.close()
        print(f"filled {args.rows} rows in each collection in {time.monotonic() - started:.0f} s")
        server.stop(60)
        size = sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder))
        print(f"database and its files: {size / 2**20:.0f} MiB")
        # The restarts, with the server's defaults.
        env = {k: v for k, v in os.environ.items() if not k.startswith("OBSERVABLE_")}
        for round in range(args.rounds):
            began = time.monotonic()
            server = Server(command, args.port, env=env).start(120)
            served = time.monotonic() - began
            client = Client(args.port, timeout=120)
            orders = request(client, "GET", "/truck/orderCount")["orderCount"]
            client.close()
            server.stop(60)
            print(f"restart {round + 1}: /healthz answered {served:.2f} s after the start ({orders} orders)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
