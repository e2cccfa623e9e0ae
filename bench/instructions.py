#!/usr/bin/env python3
"""Instructions per request, counted by callgrind: repeatable whatever else
the machine is doing, so two builds can be compared by a few percent.

    bench/instructions.py --binary .build/release/observable-server [--requests 2000]

Starts the server under valgrind (one HTTP thread), sends warm-up requests,
switches instrumentation on, sends the measured requests on one keep-alive
connection, dumps, and prints the instructions per request of each scenario.
"""
import argparse
import glob
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import Server, serve_command, trusted_environment

GLAZED = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"


def scenarios(observer):
    order = json.dumps({"donutId": GLAZED, "quantity": 1})
    return [
        ("GET /truck/orderCount", "GET", "/truck/orderCount", None, {}),
        ("GET /grid", "GET", "/grid", None, {}),
        ("GET /truck", "GET", "/truck", None, {}),
        ("GET /truck + Observer", "GET", "/truck", None, {"Observer": observer}),
        ("GET /truck, new observers", "GET", "/truck", None, {"Observer": "NEW"}),
        ("POST /truck/orders", "POST", "/truck/orders", order, {"Content-Type": "application/json"}),
        ("POST orders, /truck observed", "POST", "/truck/orders", order, {"Content-Type": "application/json", "Reader": observer}),
        ("PATCH /truck/donuts/{id}", "PATCH", "/truck/donuts/" + GLAZED, None, {"Content-Type": "application/json"}),
    ]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--port", type=int, default=18490)
    parser.add_argument("--only", default="", help="run only the scenarios whose name contains this")
    parser.add_argument("--keep", default="", help="a folder to copy each scenario's callgrind output to (for callgrind_annotate)")
    parser.add_argument("--server-args", default="", help="extra arguments for the server (e.g. --synchronous full)")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="observable-instructions-")
    results = {}
    try:
        for name, method, path, body, headers in scenarios("OBSERVER"):
            if args.only not in name:
                continue
            out = os.path.join(folder, "callgrind.out")
            for stale in glob.glob(out + "*"):
                os.remove(stale)
            database = os.path.join(folder, name.replace("/", "_").replace(" ", "_") + ".sqlite")
            server = Server(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                             *serve_command(args.binary, database, args.port,
                                            ["--threads", "1", "--log-level", "error", *args.server_args.split()])],
                            args.port, env=trusted_environment(), name="the server under callgrind").start(120)
            try:
                # http.client, as when the figures in BENCHMARKS.md were counted: the same request bytes.
                connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
                connection.request("POST", "/observers", body="{}")
                observer = json.loads(connection.getresponse().read())["id"]
                send_headers = {k: (observer if v == "OBSERVER" else v) for k, v in headers.items() if k != "Reader"}
                # "NEW": each request reads as an observer that has read nothing yet.
                fresh = []
                if headers.get("Observer") == "NEW":
                    for _ in range(args.warmup + args.requests):
                        connection.request("POST", "/observers", body="{}")
                        fresh.append(json.loads(connection.getresponse().read())["id"])
                if "Reader" in headers:
                    # An observer that read /truck: every new order is a change it receives.
                    connection.request("GET", "/truck", headers={"Observer": observer})
                    connection.getresponse().read()

                def send(i):
                    payload = body
                    if method == "PATCH":
                        payload = json.dumps({"name": f"Glazed {i % 2}"})
                    if fresh:
                        send_headers["Observer"] = fresh.pop()
                    connection.request(method, path, body=payload, headers=send_headers)
                    response = connection.getresponse()
                    response.read()
                    if response.status >= 300:
                        raise SystemExit(f"{name}: {response.status}")

                for i in range(args.warmup):
                    send(i)
                subprocess.run(["callgrind_control", "-i", "on", str(server.pid)], check=True, capture_output=True)
                for i in range(args.requests):
                    send(i)
                subprocess.run(["callgrind_control", "-d", str(server.pid)], check=True, capture_output=True)
            finally:
                server.stop(120)
            total = 0
            for dump in glob.glob(out + "*"):
                with open(dump) as f:
                    for line in f:
                        match = re.match(r"(summary|totals): (\d+)", line)
                        if match:
                            total = max(total, int(match.group(2)))
                            break
            results[name] = total / args.requests
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                for dump in glob.glob(out + "*"):
                    shutil.copy(dump, os.path.join(args.keep, name.replace("/", "_").replace(" ", "_") + os.path.basename(dump)[len("callgrind.out"):]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for name, per_request in results.items():
        print(f"{name:28} {per_request:>10,.0f} instructions per request")


if __name__ == "__main__":
    sys.exit(main())
