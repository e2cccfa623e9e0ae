#!/usr/bin/env python3
"""Runs observable-server and the C reference side by side on this machine and
prints a table: requests per second, p99 latency and server CPU per request
for each scenario, ours as a fraction of the reference, durable writes with
synchronous NORMAL and FULL, and the long-poll fan-out figures."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import Client, Server, cpu_seconds, serve_command, trusted_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")
OURS = os.path.join(ROOT, ".build", "release", "observable-server")
REFERENCE = os.path.join(OUT, "reference")
GLAZED = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"


def start(kind, port, folder, synchronous="normal"):
    """Ours or the reference on `port` and a new database in `folder`, started."""
    database = os.path.join(folder, f"{kind}-{synchronous}-{port}.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(database + suffix):
            os.remove(database + suffix)
    if kind == "ours":
        # Every connection comes from 127.0.0.1 here (10,000 streams): no share per address.
        command = serve_command(OURS, database, port, ["--synchronous", synchronous, "--log-level", "warning",
                                                       "--max-connections-per-address", "1000000"])
    else:
        # The same tables as ours: made by ours, from the models' declarations.
        subprocess.run([OURS, "migrate", "--database", database], check=True, stdout=subprocess.DEVNULL)
        command = [REFERENCE, str(port), database, "-", synchronous]
    return Server(command, port, env=trusted_environment(), name=kind).start(20)


def parse_latency(text):
    match = re.search(r"99%\s+([\d.]+)(us|ms|s)", text)
    if not match:
        return float("nan")
    value, unit = float(match.group(1)), match.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def wrk(server, path, seconds, connections, script=None, headers=()):
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for header in headers:
        command += ["-H", header]
    if script:
        command += ["-s", os.path.join(ROOT, "bench", "wrk", script)]
    command.append(f"http://127.0.0.1:{server.port}{path}")
    before = cpu_seconds(server.pid)
    text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(server.pid) - before
    requests = int(re.search(r"(\d+) requests in", text).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {"rps": rps, "p99_ms": parse_latency(text), "cpu_us": cpu / max(requests, 1) * 1e6,
            "requests": requests, "non2xx": int(errors.group(1)) if errors else 0}


def create_observer(port):
    with Client(port) as client:
        return client.request("POST", "/observers", {})[2]["id"]


def delete_observer(port, observer):
    with Client(port) as client:
        client.request("DELETE", f"/observers/{observer}")


def reader_of(port, path):
    """An observer that has read `path` (and so is told of its changes)."""
    observer = create_observer(port)
    with Client(port) as client:
        client.request("GET", path, headers={"Observer": observer})
    return observer


def run_script(script, port, folder, *arguments):
    """Runs bench/`script` against a fresh server of ours; its JSON line."""
    ours = start("ours", port, folder)
    try:
        text = subprocess.run([sys.executable, os.path.join(ROOT, "bench", script), "--port", str(ours.port),
                               "--pid", str(ours.pid), *arguments], capture_output=True, text=True, timeout=900)
        if text.returncode != 0:
            print(text.stderr, file=sys.stderr)
            raise SystemExit(f"{script} failed")
        return json.loads(text.stdout)
    finally:
        ours.stop(10)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10, help="duration of each wrk run")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--observers", default="1000,10000", help="long-poll fan-out sizes, comma separated ('' to skip)")
    parser.add_argument("--streams", default="10000", help="event-stream sizes, comma separated ('' to skip)")
    parser.add_argument("--stream-idle", type=float, default=31, help="seconds the streams sit idle for the heartbeat figure")
    parser.add_argument("--skip-durable", action="store_true")
    parser.add_argument("--only", default="", help="run only the throughput scenarios whose name contains this")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="observable-bench-")
    results = {"machine": {"cores": os.cpu_count(), "kernel": os.uname().release}, "throughput": [], "durable": [], "longpoll": [], "streams": []}

    # (name, path, wrk script, observer, the reference's scenario). The
    # observer, removed after its scenario so that the next ones do the same
    # work as the reference: "header" sends an `Observer:` header with every
    # request (its reads are tracked); "reader" is an observer that read
    # /truck before the run, so every new order is a change it receives and
    # its elements reads it gains (ours only, compared with the reference's
    # plain POST). Each write scenario starts both servers afresh, on new
    # databases, so that it does not pay for what earlier scenarios left
    # (tens of thousands of orders, a deleted observer's reads, a change log
    # being pruned) and both servers start from the same state.
    writes = ("POST", "PATCH")
    scenarios = [
        ("GET /truck/orderCount", "/truck/orderCount", None, None, "GET /truck/orderCount"),
        ("GET /grid", "/grid", None, None, None),
        ("GET /truck + Observer", "/truck", None, "header", "GET /truck"),
        ("POST orders, /truck observed", "/truck/orders", "post_order.lua", "reader", "POST /truck/orders"),
        ("POST /truck/orders", "/truck/orders", "post_order.lua", None, "POST /truck/orders"),
        ("PATCH /truck/donuts/{id}", "/truck/donuts/x", "patch_donut.lua", None, "PATCH /truck/donuts/{id}"),
    ]
    ours = start("ours", 18401, folder)
    reference = start("reference", 18402, folder)
    try:
        reference_rows = {}
        for name, path, script, observer_kind, reference_name in scenarios:
            if args.only not in name:
                continue
            if name.startswith(writes):
                ours.stop(10)
                reference.stop(10)
                ours = start("ours", ours.port, folder)
                reference = start("reference", reference.port, folder)
            observer = None
            if observer_kind == "header":
                observer = create_observer(ours.port)
            elif observer_kind == "reader":
                observer = reader_of(ours.port, "/truck")
            headers = [f"Observer: {observer}"] if observer_kind == "header" else []
            row = {"scenario": name, "ours": wrk(ours, path, args.seconds, args.connections, script, headers)}
            if observer:
                delete_observer(ours.port, observer)
            if reference_name:
                if reference_name not in reference_rows or name.startswith(writes):
                    reference_rows[reference_name] = wrk(reference, path, args.seconds, args.connections, script)
                row["reference"] = reference_rows[reference_name]
                row["ratio"] = row["ours"]["rps"] / row["reference"]["rps"]
            results["throughput"].append(row)
    finally:
        ours.stop(10)
        reference.stop(10)

    if not args.skip_durable:
        for synchronous in ("normal", "full"):
            ours = start("ours", 18403, folder, synchronous)
            reference = start("reference", 18404, folder, synchronous)
            try:
                row = {"synchronous": synchronous,
                       "ours": wrk(ours, "/truck/orders", args.seconds, 64, "post_order.lua"),
                       "reference": wrk(reference, "/truck/orders", args.seconds, 64, "post_order.lua")}
                row["ratio"] = row["ours"]["rps"] / row["reference"]["rps"]
                results["durable"].append(row)
            finally:
                ours.stop(10)
                reference.stop(10)

    for n in [int(x) for x in args.observers.split(",") if x]:
        results["longpoll"].append(run_script("longpoll.py", 18405, folder, "--observers", str(n)))
    for n in [int(x) for x in args.streams.split(",") if x]:
        results["streams"].append(run_script("streams.py", 18406, folder, "--streams", str(n), "--idle", str(args.stream_idle)))

    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    shutil.rmtree(folder, ignore_errors=True)
    print_table(results)


def print_table(results):
    print(f"\nmachine: {results['machine']['cores']} cores, Linux {results['machine']['kernel']}")
    print(f"\n{'scenario':28} {'ours req/s':>11} {'p99 ms':>8} {'CPU us/req':>10} | {'ref req/s':>10} {'p99 ms':>8} {'CPU us/req':>10} | {'ratio':>6} {'CPU ratio':>9}")
    for row in results["throughput"]:
        o = row["ours"]
        line = f"{row['scenario']:28} {o['rps']:>11.0f} {o['p99_ms']:>8.2f} {o['cpu_us']:>10.1f} |"
        if "reference" in row:
            r = row["reference"]
            line += f" {r['rps']:>10.0f} {r['p99_ms']:>8.2f} {r['cpu_us']:>10.1f} | {row['ratio']:>6.2f} {r['cpu_us'] / o['cpu_us']:>9.2f}"
        if o["non2xx"]:
            line += f"  ({o['non2xx']} non-2xx)"
        print(line)
    for row in results["durable"]:
        o, r = row["ours"], row["reference"]
        print(f"{'POST orders, 64 conns, ' + row['synchronous']:28} {o['rps']:>11.0f} {o['p99_ms']:>8.2f} {o['cpu_us']:>10.1f} |"
              f" {r['rps']:>10.0f} {r['p99_ms']:>8.2f} {r['cpu_us']:>10.1f} | {row['ratio']:>6.2f} {r['cpu_us'] / o['cpu_us']:>9.2f}")
    for row in results["longpoll"]:
        print(f"\nlong-poll fan-out, {row['observers']} parked observers:")
        print(f"  server RSS per parked long-poll   {row['rss_per_parked_kib']} KiB ({row['rss_before_mib']} -> {row['rss_parked_mib']} MiB)")
        print(f"  wake-ups by a change nobody read  {row['spurious_wakeups']}")
        print(f"  change read by one observer       p50 {row['single_wake_ms']['p50']} ms, p99 {row['single_wake_ms']['p99']} ms")
        print(f"  change read by all                p50 {row['all_wake_ms']['p50']} ms, p99 {row['all_wake_ms']['p99']} ms, max {row['all_wake_ms']['max']} ms")
        print(f"  server CPU per unread change      {row['cpu_per_unread_change_us_with_n_parked']} us with {row['observers']} parked,"
              f" {row['cpu_per_unread_change_us_with_10_parked']} us with 10 parked")
    for row in results["streams"]:
        print(f"\nevent streams, {row['streams']} open ({row['open']} counted by the server):")
        print(f"  server RSS per open stream        {row['kib_per_stream']} KiB")
        print(f"  events for a change nobody read   {row['events_for_a_change_nobody_read']}")
        print(f"  change read by all                {row['change_read_by_all']['delivered']} delivered, p50 {row['change_read_by_all']['p50_ms']} ms,"
              f" last {row['change_read_by_all']['last_ms']} ms")
        print(f"  idle {row['idle']['seconds']} s                      {row['idle']['heartbeats']} heartbeats,"
              f" {row['idle']['cpu_percent_of_one_core']} % of one core")


if __name__ == "__main__":
    main()
