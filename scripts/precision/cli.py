"""The command line: one run in a mode, or every planted fault."""

import argparse
import os
import random
import shutil
import sys
import tempfile

from harness import admin_url
from . import __doc__ as DESCRIPTION
from .checker import Checker
from .concurrent import ConcurrentChecker
from .report import Report
from .transport import cluster_database, start_servers, stop_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_mode(args, mode, fault=None):
    report = Report(max_print=args.max_print)
    tmp = tempfile.mkdtemp(prefix="precision-check-")
    insts = []
    try:
        if mode == "cluster":
            db = cluster_database(args)
            if not db:
                raise SystemExit("cluster mode needs PostgreSQL: run under scripts/with-postgres or pass --postgres-url")
            insts = start_servers(args, tmp, 3, db, fault)
        else:
            insts = start_servers(args, tmp, 1, os.path.join(tmp, "db.sqlite"), fault)
        print(f"mode {mode}{' with planted fault ' + fault if fault else ''}: {len(insts)} instance(s) on ports "
              f"{[i.port for i in insts]}, logs in {tmp}", flush=True)
        if mode == "concurrent":
            checker = ConcurrentChecker(args, report, insts)
        else:
            checker = Checker(args, report, insts)
        checker.run()
    finally:
        for inst in insts:
            if inst.alive():
                stop_server(inst, "term", report)
        if report.total() == 0 and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"server logs kept in {tmp}", flush=True)
    return report


def main():
    ap = argparse.ArgumentParser(description=DESCRIPTION.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["sequential", "concurrent", "cluster"], default="sequential")
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/observable-server"))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--ops", type=int, default=3000)
    ap.add_argument("--observers", type=int, default=50)
    ap.add_argument("--restarts", type=int, default=2)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--longpolls", type=int, default=None, help="most long-poll and displacement tests (default ops/100, at most 300)")
    ap.add_argument("--streams", type=int, default=None, help="most stream tests (default ops/150, at most 200)")
    ap.add_argument("--postgres-url", default=None, help="admin URL of a PostgreSQL server (default $OBSERVABLE_TEST_POSTGRES_ADMIN_URL)")
    ap.add_argument("--no-queries", dest="queries", action="store_false",
                    help="leave out query reads (SPEC §3d), for a server without them")
    ap.add_argument("--planted-faults", action="store_true", help="check that each planted fault is caught")
    ap.add_argument("--max-print", type=int, default=20, help="failures printed per category (all are counted)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder with the server logs")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 10**9)
    if args.longpolls is None:
        args.longpolls = min(300, max(10, args.ops // 100))
    if args.streams is None:
        args.streams = min(200, max(8, args.ops // 150))
    args.binary = os.path.abspath(args.binary)
    print(f"seed: {args.seed}", flush=True)
    if not os.access(args.binary, os.X_OK):
        raise SystemExit(f"no server binary at {args.binary} (swift build, or --binary)")
    if args.planted_faults:
        sys.exit(planted_faults(args))
    report = run_mode(args, args.mode)
    print(report.table(f"{args.mode}, seed {args.seed}"), flush=True)
    sys.exit(1 if report.total() else 0)


def planted_faults(args):
    faults = ["drop-implied-reads", "forget-cursor", "wake-every-poll", "ignore-shape-fields", "narrow-page-window"]
    if args.queries:
        # A write that moves an element out of a query's filter delivers no
        # remove (PlantedFault.queryMissesRemove): missed, and the copy differs.
        faults.append("query-misses-remove")
    missed = 0
    for fault in faults:
        a = argparse.Namespace(**vars(args))
        # Waking every poll shows only in the long-polls that must stay
        # quiet (about one operation in 200): enough of them that an early
        # answer is certain, not likely.
        # The shape faults show within a few hundred operations (pages are
        # read and their elements changed at every turn).
        a.ops = min(args.ops, {"wake-every-poll": 4000, "ignore-shape-fields": 700, "narrow-page-window": 700,
                               "query-misses-remove": 1000}.get(fault, 1200))
        a.observers = min(args.observers, 30)
        a.restarts = max(1, min(args.restarts, 2))
        a.longpolls = 80 if fault == "wake-every-poll" else 30
        a.streams = 10
        a.max_print = 3
        # The faults of plain reads are sought with the operations they were
        # tuned for (query reads would take a share of them); the query's
        # fault with query reads.
        a.queries = args.queries and fault.startswith("query-")
        mode = "sequential"
        if fault == "forget-cursor" and admin_url(args.postgres_url):
            mode = "cluster"
        print(f"--- planted fault {fault} ({mode}) ---", flush=True)
        report = run_mode(a, mode, fault=fault)
        caught = report.total()
        kinds = ", ".join(f"{k} {v}" for k, v in report.counts.items() if v)
        print(f"planted fault {fault}: {'caught' if caught else 'NOT CAUGHT'} ({caught} failures{': ' + kinds if kinds else ''})", flush=True)
        if not caught:
            missed += 1
    print(f"planted faults: {len(faults) - missed} of {len(faults)} caught", flush=True)
    return 1 if missed else 0
