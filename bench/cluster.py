#!/usr/bin/env python3
"""Benchmarks several observable-server instances on one PostgreSQL database.

Run under scripts/with-postgres (bench/cluster does both): it reads the
server's admin URL from OBSERVABLE_TEST_POSTGRES_ADMIN_URL and makes a new
database for every scenario. It measures, and prints as a table and then
as one JSON line (also written to bench/out/cluster.json):

- cross-instance wakes: three instances, N observers, each created through
  one instance, its reads tracked through the next and its long-poll parked
  on the third; latency of a change read by exactly one observer, written
  through an instance other than the one its poll is parked on (and, for
  comparison, through that same instance); the time until all N are
  answered for a change all of them read; wake-ups by a change nobody read;
- throughput of POST /truck/orders and GET /truck/orderCount with wrk: one
  instance on SQLite, one on PostgreSQL, and three on PostgreSQL (three wrk
  processes, one per instance, the connections split between them, their
  requests per second summed and the worst p99 kept), with server and
  PostgreSQL CPU per request and writes per ordered transaction;
- the database alone, with pgbench: a round trip (SELECT 1), and the
  ordered transaction of one order replayed statement by statement
  (bench/pgbench/ordered_order.sql) by one client and by eight, which is
  what the one row lock of observable_clock allows without the server.

Every wait is bounded; a scenario that cannot finish raises SystemExit.
"""
import argparse
import json
import os
import random
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

from harness import (Client, Postgres, cpu_seconds, postgres_tool, raise_descriptor_limit, start_instances,
                     stop_instances, trusted_environment)
from longpoll import Poll, percentile
from run import parse_latency

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")
SERVER = os.path.join(ROOT, ".build", "release", "observable-server")
BASE_PORT = 18500
SERVER_ARGUMENTS = []  # more options for every instance (--server-threads)


def cpu_of(pids):
    return sum(cpu_seconds(pid) for pid in pids)


def start_ours(count, database, folder, server=SERVER, arguments=(), base_port=BASE_PORT):
    """`count` instances of `server` on `database`, on ports from `base_port`, as the benchmarks run them."""
    # The load comes from a few loopback addresses: no share per address.
    return start_instances(count, server, database, folder, ["--log-level", "warning", "--max-connections-per-address",
                                                             "1000000", *SERVER_ARGUMENTS, *arguments],
                           base_port=base_port, env=trusted_environment(), preexec_fn=raise_descriptor_limit)


def metrics(port):
    with Client(port) as client:
        return client.metrics()


def commit_counts(instance):
    values = metrics(instance.port)
    return values.get("observable_commits_total", 0.0), values.get("observable_writes_committed_total", 0.0)


def metric_sum(instances, name):
    return sum(metrics(instance.port).get(name, 0.0) for instance in instances)


# MARK: - Throughput


def wrk_command(port, path, seconds, connections, threads, script):
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "10s"]
    if script:
        command += ["-s", os.path.join(ROOT, "bench", "wrk", script)]
    return command + [f"http://127.0.0.1:{port}{path}"]


def parse_wrk(text):
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    sockets = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)),
            "requests": int(re.search(r"(\d+) requests in", text).group(1)),
            "p99_ms": parse_latency(text),
            "non2xx": int(errors.group(1)) if errors else 0,
            "socket_errors": sum(int(x) for x in sockets.groups()) if sockets else 0}


def throughput(postgres, engine, count, name, path, script, args, folder):
    """One scenario on a new database: `count` instances, one wrk per instance."""
    if engine == "sqlite":
        database_name = None
        postgres.count += 1
        database = os.path.join(folder, f"bench_{postgres.count}.sqlite")
    else:
        database_name = postgres.fresh(f"{count}x {name}")
        database = postgres.url(database_name)
    instances = start_ours(count, database, folder)
    try:
        pg_pids = postgres.pids(database_name) if database_name else []
        counts_before = [commit_counts(i) for i in instances]
        shares = [args.connections // count + (1 if k < args.connections % count else 0) for k in range(count)]
        threads = 2 if count == 1 else 1
        server_before, pg_before = cpu_of([i.pid for i in instances]), cpu_of(pg_pids)
        runs = [subprocess.Popen(wrk_command(i.port, path, args.seconds, c, threads, script), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for i, c in zip(instances, shares)]
        outputs = []
        for run in runs:
            out, err = run.communicate(timeout=args.seconds + 60)
            if run.returncode != 0:
                raise SystemExit(f"wrk failed: {err}")
            outputs.append(parse_wrk(out))
        server_cpu, pg_cpu = cpu_of([i.pid for i in instances]) - server_before, cpu_of(pg_pids) - pg_before
        counts = [tuple(a - b for a, b in zip(commit_counts(i), before)) for i, before in zip(instances, counts_before)]
        for instance in instances:
            if not instance.alive():
                raise SystemExit(f"instance on {instance.port} exited during {name}")
    finally:
        stop_instances(instances)
    requests = sum(o["requests"] for o in outputs)
    row = {"scenario": name, "engine": engine, "instances": count, "connections": args.connections,
           "rps": round(sum(o["rps"] for o in outputs), 1),
           "p99_ms": round(max(o["p99_ms"] for o in outputs), 2),
           "per_instance_rps": [round(o["rps"]) for o in outputs],
           "server_cpu_us": round(server_cpu / max(requests, 1) * 1e6, 1),
           "postgres_cpu_us": round(pg_cpu / max(requests, 1) * 1e6, 1) if database_name else None,
           "non2xx": sum(o["non2xx"] for o in outputs),
           "socket_errors": sum(o["socket_errors"] for o in outputs)}
    commits, writes = sum(c for c, _ in counts), sum(w for _, w in counts)
    if writes:
        # Writes per ordered transaction, in all and per instance: group
        # commit only gathers writes that arrive while a commit runs.
        row["writes_per_commit"] = round(writes / max(commits, 1), 1)
        row["per_instance_writes_per_commit"] = [round(w / max(c, 1), 1) for c, w in counts]
    return row


# MARK: - Cross-instance wakes


class Fleet:
    """Polls across instances, answered as they arrive (epoll over raw sockets)."""

    def __init__(self):
        self.epoll = select.epoll()
        self.by_fd = {}

    def add(self, poll):
        self.by_fd[poll.sock.fileno()] = poll
        self.epoll.register(poll.sock.fileno(), select.EPOLLIN)

    def collect(self, wanted, timeout):
        """Answers of any poll until all of `wanted` (polls) answered: {poll: (time, answer)}."""
        got = {}
        wanted = set(wanted)
        end = time.time() + timeout
        while not wanted.issubset(got) and time.time() < end:
            for fd, _ in self.epoll.poll(0.05):
                poll = self.by_fd[fd]
                answer = poll.read()
                if answer is not None:
                    got[poll] = (time.perf_counter(), answer)
        return got

    def close(self):
        for poll in self.by_fd.values():
            poll.sock.close()
        self.epoll.close()


def wait_parked(instances, count, deadline=30):
    end = time.time() + deadline
    while time.time() < end:
        if metric_sum(instances, "observable_longpolls_parked") >= count:
            return True
        time.sleep(0.05)
    return False


def wakes(postgres, args, folder):
    n = args.observers
    database_name = postgres.fresh("wakes")
    instances = start_ours(3, postgres.url(database_name), folder)
    fleet = Fleet()
    anomalies = []
    try:
        clients = [Client(i.port, timeout=None) for i in instances]
        random.seed(11)
        setup_start = time.perf_counter()
        donuts = []
        for i in range(n):
            status, _, body = clients[i % 3].request("POST", "/truck/donuts", {"name": f"Bench {i}"})
            assert status == 201, status
            donuts.append(body["id"])
        # Observer i: created through instance i, reads tracked through i+1, poll parked on i+2.
        observers = []
        for i in range(n):
            status, _, body = clients[i % 3].request("POST", "/observers", {"ttlSeconds": 3600})
            assert status == 201, status
            observer = body["id"]
            reader = clients[(i + 1) % 3]
            status, _, _ = reader.request("GET", f"/truck/donuts/{donuts[i]}?fields=name", headers={"Observer": observer})
            assert status == 200, status
            status, headers, _ = reader.request("GET", "/truck?fields=name", headers={"Observer": observer})
            assert status == 200, status
            observers.append((observer, int(headers["observation-cursor"])))
        setup_seconds = time.perf_counter() - setup_start
        polls, parked_on = [], []
        for i, (observer, cursor) in enumerate(observers):
            poll = Poll(instances[(i + 2) % 3].port, observer, cursor)
            poll.send()
            fleet.add(poll)
            polls.append(poll)
            parked_on.append((i + 2) % 3)
        if not wait_parked(instances, n):
            raise SystemExit("not all long-polls parked")
        per_instance = [metrics(i.port).get("observable_longpolls_parked", 0) for i in instances]

        def resend(answered):
            for poll in answered:
                poll.send()

        # A change nobody read wakes nobody, on any instance.
        wakeups_before = metric_sum(instances, "observable_longpoll_wakeups_total")
        clients[0].request("POST", "/account/login", {"userName": f"nobody-{random.random()}"})
        stray = fleet.collect([], 1.0)
        spurious = len(stray) + int(metric_sum(instances, "observable_longpoll_wakeups_total") - wakeups_before)
        resend(stray)

        def single(changes, through_parked):
            latencies, acks = [], []
            for k in range(changes):
                i = random.randrange(n)
                writer = parked_on[i] if through_parked else (parked_on[i] + 1 + k % 2) % 3
                poll = polls[i]
                start = time.perf_counter()
                clients[writer].send("PATCH", f"/truck/donuts/{donuts[i]}", {"name": f"Renamed {random.random()}"})
                got = fleet.collect([poll], 5.0)
                status, _, _ = clients[writer].answer()
                acked = time.perf_counter()
                if status != 200:
                    anomalies.append(f"PATCH through instance {writer} answered {status}")
                if poll not in got:
                    raise SystemExit(f"a change written through instance {writer} did not reach its observer on instance {parked_on[i]} within 5 s")
                answer = got[poll][1]
                if not any(c["path"] == f"/truck/donuts/{donuts[i]}/name" for c in answer["changes"]):
                    anomalies.append(f"poll answered without the change: {answer}")
                others = [p for p in got if p is not poll]
                if others:
                    anomalies.append(f"{len(others)} other polls answered by a change only one observer read")
                latencies.append((got[poll][0] - start) * 1000)
                acks.append((acked - start) * 1000)
                resend(got)
            return latencies, acks

        cross, cross_acks = single(args.changes, through_parked=False)
        wait_parked(instances, n, 10)
        same, _ = single(max(args.changes // 2, 1), through_parked=True)
        wait_parked(instances, n, 10)

        # A change every observer read, written through instance 0 (a third of the polls are parked there).
        rounds = []
        for r in range(args.fanout_rounds):
            if not wait_parked(instances, n, 30):
                raise SystemExit("the polls did not park again after a fan-out")
            start = time.perf_counter()
            clients[0].send("PATCH", "/truck", {"name": f"Truck {random.random()}"})
            got = fleet.collect(polls, 30.0)
            clients[0].answer()
            if len(got) != n:
                raise SystemExit(f"fan-out: only {len(got)} of {n} answered within 30 s")
            times = sorted((t - start) * 1000 for t, _ in got.values())
            by_instance = [max((got[p][0] - start) * 1000 for p, k in zip(polls, parked_on) if k == j) for j in range(3)]
            rounds.append({"p50": round(percentile(times, 50), 1), "p99": round(percentile(times, 99), 1),
                           "max": round(times[-1], 1), "max_by_instance": [round(x, 1) for x in by_instance]})
            resend(got)
        for client in clients:
            client.close()
    finally:
        fleet.close()
        stop_instances(instances)
    return {"observers": n, "parked_per_instance": [int(x) for x in per_instance], "setup_seconds": round(setup_seconds, 1),
            "spurious_wakeups": spurious,
            "cross_ms": {"p50": round(percentile(cross, 50), 2), "p99": round(percentile(cross, 99), 2),
                         "max": round(max(cross), 2), "changes": len(cross)},
            "cross_ack_ms": {"p50": round(percentile(cross_acks, 50), 2), "p99": round(percentile(cross_acks, 99), 2)},
            "same_ms": {"p50": round(percentile(same, 50), 2), "p99": round(percentile(same, 99), 2), "changes": len(same)},
            "fanout_ms": rounds, "anomalies": anomalies[:20]}


# MARK: - The database alone


def pgbench(postgres, args, folder):
    database_name = postgres.fresh("pgbench")
    url = postgres.url(database_name)
    subprocess.run([SERVER, "migrate", "--database", url], check=True, capture_output=True, timeout=120)
    tool = postgres_tool("pgbench")

    def run(script, clients, seconds):
        command = [tool, "-n", "-M", "prepared", f"-c{clients}", f"-j{min(clients, 2)}", f"-T{seconds}",
                   "-f", os.path.join(ROOT, "bench", "pgbench", script), url]
        text = subprocess.run(command, capture_output=True, text=True, check=True, timeout=seconds + 60).stdout
        return {"clients": clients, "latency_ms": float(re.search(r"latency average = ([\d.]+) ms", text).group(1)),
                "tps": round(float(re.search(r"tps = ([\d.]+)", text).group(1)))}

    seconds = max(2, min(args.seconds, 5))
    return {"round_trip": run("select_one.sql", 1, seconds),
            "ordered_one_client": run("ordered_order.sql", 1, seconds),
            "ordered_eight_clients": run("ordered_order.sql", 8, seconds)}


# MARK: - Main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=8, help="duration of each wrk run")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections in all, split between instances")
    parser.add_argument("--observers", type=int, default=1000, help="parked observers across the three instances")
    parser.add_argument("--changes", type=int, default=200, help="changes read by one observer, written through another instance")
    parser.add_argument("--fanout-rounds", type=int, default=3)
    parser.add_argument("--server-threads", type=int, help="HTTP worker threads of every instance (default: the server's, one fewer than the cores)")
    parser.add_argument("--skip-wakes", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-pgbench", action="store_true")
    parser.add_argument("--only", default="", help="run only the throughput scenarios whose name contains this")
    args = parser.parse_args()
    admin_url = os.environ.get("OBSERVABLE_TEST_POSTGRES_ADMIN_URL")
    if not admin_url:
        raise SystemExit("run under scripts/with-postgres (or use bench/cluster)")
    if not os.access(SERVER, os.X_OK):
        raise SystemExit(f"{SERVER} is missing: swift build -c release --product observable-server")
    if args.server_threads:
        SERVER_ARGUMENTS.extend(["--threads", str(args.server_threads)])
    postgres = Postgres(admin_url)
    folder = tempfile.mkdtemp(prefix="observable-cluster-")
    started = time.time()
    results = {"machine": {"cores": os.cpu_count(), "kernel": os.uname().release,
                           "load_before": [round(x, 2) for x in os.getloadavg()],
                           "server_threads": args.server_threads,
                           "postgres": postgres.sql("SHOW server_version").strip(),
                           "fsync": postgres.sql("SHOW fsync").strip()},
               "wakes": None, "throughput": [], "pgbench": None}
    try:
        if not args.skip_wakes:
            results["wakes"] = wakes(postgres, args, folder)
        if not args.skip_throughput:
            scenarios = [("POST /truck/orders", "/truck/orders", "post_order.lua"),
                         ("GET /truck/orderCount", "/truck/orderCount", None)]
            for name, path, script in [s for s in scenarios if args.only in s[0]]:
                for engine, count in (("sqlite", 1), ("postgres", 1), ("postgres", 3)):
                    results["throughput"].append(throughput(postgres, engine, count, name, path, script, args, folder))
        if not args.skip_pgbench:
            results["pgbench"] = pgbench(postgres, args, folder)
    except BaseException:
        print(f"server logs kept in {folder}", file=sys.stderr)
        raise
    results["seconds"] = round(time.time() - started)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "cluster.json"), "w") as f:
        json.dump(results, f, indent=2)
    shutil.rmtree(folder, ignore_errors=True)
    print_table(results)
    print(json.dumps(results))


def per_instance(row):
    if row["instances"] == 1:
        return ""
    text = "req/s " + ", ".join(str(x) for x in row["per_instance_rps"])
    if "per_instance_writes_per_commit" in row:
        text += "; writes/txn " + ", ".join(str(x) for x in row["per_instance_writes_per_commit"])
    return text


def print_table(results):
    m = results["machine"]
    print(f"\nmachine: {m['cores']} cores, Linux {m['kernel']}, load before {m['load_before']}; "
          f"PostgreSQL {m['postgres']}, fsync={m['fsync']}; server threads: {m['server_threads'] or 'default'}")
    w = results["wakes"]
    if w:
        print(f"\ncross-instance wakes: 3 instances, {w['observers']} observers parked {w['parked_per_instance']}"
              f" (setup {w['setup_seconds']} s)")
        print(f"  change read by one observer, written through another instance ({w['cross_ms']['changes']} changes)"
              f"   p50 {w['cross_ms']['p50']} ms, p99 {w['cross_ms']['p99']} ms, max {w['cross_ms']['max']} ms")
        print(f"    the writer's own answer                                      p50 {w['cross_ack_ms']['p50']} ms, p99 {w['cross_ack_ms']['p99']} ms")
        print(f"  the same, written through the instance it is parked on ({w['same_ms']['changes']} changes)"
              f"    p50 {w['same_ms']['p50']} ms, p99 {w['same_ms']['p99']} ms")
        for k, r in enumerate(w["fanout_ms"]):
            print(f"  change read by all {w['observers']}, round {k + 1}: p50 {r['p50']} ms, p99 {r['p99']} ms, max {r['max']} ms"
                  f" (last answer per instance {r['max_by_instance']} ms; written through instance 0)")
        print(f"  wake-ups by a change nobody read  {w['spurious_wakeups']}")
        for anomaly in w["anomalies"]:
            print(f"  ! {anomaly}")
    if results["throughput"]:
        print(f"\n{'scenario':24} {'engine':18} {'req/s':>8} {'p99 ms':>8} {'server CPU':>10} {'PG CPU':>8} {'writes/txn':>10}  per instance")
        for row in results["throughput"]:
            engine = f"{row['engine']} x{row['instances']}"
            pg = f"{row['postgres_cpu_us']:.0f}" if row["postgres_cpu_us"] is not None else "-"
            line = (f"{row['scenario']:24} {engine:18} {row['rps']:>8.0f} {row['p99_ms']:>8.2f} {row['server_cpu_us']:>10.0f}"
                    f" {pg:>8} {row.get('writes_per_commit', '-'):>10}  {per_instance(row)}")
            if row["non2xx"] or row["socket_errors"]:
                line += f"  ({row['non2xx']} non-2xx, {row['socket_errors']} socket errors)"
            print(line)
        print("  (CPU in µs per request: all instances, and PostgreSQL's processes for the database)")
    p = results["pgbench"]
    if p:
        print(f"\npgbench on the same database server, -M prepared:")
        print(f"  round trip (SELECT 1, one client)                     {p['round_trip']['latency_ms'] * 1000:.0f} µs")
        print(f"  ordered transaction of one order (5 commands), 1 client   {p['ordered_one_client']['latency_ms']:.3f} ms,"
              f" {p['ordered_one_client']['tps']} tps")
        print(f"  the same, 8 clients on the one clock row                   {p['ordered_eight_clients']['latency_ms']:.3f} ms,"
              f" {p['ordered_eight_clients']['tps']} tps")
    print(f"\n{results['seconds']} s in all")


if __name__ == "__main__":
    main()
