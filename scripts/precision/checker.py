"""The checker for one client at a time (sequential and cluster modes)."""

import collections
import random
import time

from harness import Client, ConnectionLost
from .checks import FeedChecks, LongPollChecks, ObserverChecks, QueryChecks, ReadChecks, RestartChecks, StreamChecks, WriteChecks
from .model import Log, State, jdump, short
from .operations import Reads, Writes
from .queries import QueryGen
from .transport import Transport


class Checker(Transport, WriteChecks, ReadChecks, QueryChecks, FeedChecks, ObserverChecks, LongPollChecks, StreamChecks,
              RestartChecks):
    """A run: random operations from the seed, each checked by its part
    (precision/checks), restarts at even intervals, then the end checks."""

    def __init__(self, args, report, instances):
        self.args = args
        self.report = report
        self.rng = random.Random(args.seed)
        self.instances = instances
        self.clients = [Client(i.port) for i in instances]
        self.st = State()
        self.log = Log()
        self.observers = []          # live Observer objects
        self.deleted = []            # deleted observer ids
        self.all_ids = 0
        self.etags = {}              # url -> (etag, body json)
        self.pool = collections.defaultdict(dict)        # collection -> {position: element id}: cursors the Links gave
        self.positions = {}                              # (collection, id) -> position
        self.pos_sorted = collections.defaultdict(list)  # collection -> [(creation index, position)]
        self.writes = Writes(self)
        self.reads = Reads(self)
        self.qgen = QueryGen(self.rng)
        self.tokens = {}                                 # (collection, sort field, desc) -> [(after token, key)] the Links gave
        self.queries = getattr(args, "queries", True)
        self.seer = None
        self.stats = collections.Counter()
        self.longpoll_budget = args.longpolls
        self.stream_budget = args.streams

    # -- the run
    def setup(self):
        bodies = {}
        for url in ("/truck", "/account", "/grid", "/posts", "/jobs", "/games"):
            status, _, bodies[url] = self.req("GET", url)
            if status != 200:
                raise RuntimeError(f"GET {url} answered {status}")
        self.st.load(bodies["/truck"], bodies["/account"], bodies["/grid"], bodies["/posts"], bodies["/jobs"], bodies["/games"])
        self.log.seed(self.st)
        status, _, hz = self.req("GET", "/healthz")
        self.log.newest = hz["seq"]
        self.seer = self.create_observer()
        for url, body, paths, pages in self.reads.everything():
            status, h, got = self.req("GET", url, headers={"Observer": self.seer.id})
            if status != 200 or jdump(got) != jdump(body):
                raise RuntimeError(f"all-seeing read of {url} answered {status} {short(got)}")
            cur = int(h["observation-cursor"])
            for p in paths:
                self.seer.track(p, cur)
            for pr in pages:
                self.seer.track_shape(pr.shape(cur, None))

    def choose_observer(self):
        if not self.observers:
            return None
        if self.rng.random() < 0.6:
            return self.rng.choice(self.observers[-20:])
        return self.rng.choice(self.observers)

    def step(self):
        a = self.args
        ops = self.stats["ops"]
        target = min(a.observers, int(a.observers * (ops + 1) / max(1, 0.5 * a.ops)) + 1)
        if len(self.observers) + len(self.deleted) < target or not self.observers:
            o = self.create_observer()
            if o is not None:
                self.observers.append(o)
            return
        r = self.rng.random()
        obs = self.choose_observer()
        table = [
            (0.26, lambda: self.do_write(self.writes.valid())),
            (0.04, lambda: self.do_write(self.writes.refused())),
            (0.22, lambda: self.do_read(obs)),
            (0.03, lambda: self.do_read(None)),
            (0.005, self.do_read_unknown_observer),
            (0.005, self.do_bad_fields),
            (0.25, lambda: self.do_poll(obs)),
            (0.01, lambda: self.do_bad_poll(obs)),
            (0.05, lambda: self.do_inspect(obs)),
            (0.012, lambda: self.do_forget(obs)),
            (0.006, lambda: self.do_delete(obs)),
            (0.012, lambda: self.do_longpoll(obs)),
            (0.004, lambda: self.do_displace(obs)),
            (0.006, lambda: self.do_stream(obs)),
        ]
        if self.queries:
            table += [
                (0.09, lambda: self.do_query_read(obs if self.rng.random() < 0.9 else None)),
                (0.006, lambda: self.do_bad_query(obs)),
            ]
        acc = 0
        total = sum(w for w, _ in table)
        r *= total
        for w, fn in table:
            acc += w
            if r < acc:
                try:
                    fn()
                except ConnectionLost:
                    pass
                return

    def run(self):
        a = self.args
        self.setup()
        points = [int(a.ops * (i + 1) / (a.restarts + 1)) for i in range(a.restarts)]
        kinds = ["term", "kill"]
        restarts = 0
        last_print = time.monotonic()
        while self.stats["ops"] < a.ops:
            self.step()
            self.stats["ops"] += 1
            if restarts < len(points) and self.stats["ops"] >= points[restarts]:
                k = self.rng.randrange(len(self.instances))
                self.restart(k, kinds[restarts % 2])
                restarts += 1
            if time.monotonic() - last_print > 15:
                last_print = time.monotonic()
                print(f"progress: {self.stats['ops']}/{a.ops} operations, {len(self.observers)} observers, "
                      f"seq {self.log.newest}, failures {self.report.total()}", flush=True)
        self.finish()

    def finish(self):
        self.check_everything("at the end")
        self.check_copies("at the end")
        # Replays: the whole range from each observer's creation, for a sample.
        sample = self.rng.sample(self.observers, min(len(self.observers), 40))
        for obs in sample:
            since = obs.creation
            while True:
                ans = self.poll(obs, since, 1000)
                if not ans or ans["cursor"] >= self.log.newest or ans["cursor"] <= since:
                    break
                since = ans["cursor"]
        for inst in self.instances:
            if not inst.alive():
                self.report.fail("crash", f"{inst.name} is not running at the end; see {inst.log_path}")
        print("operations: " + ", ".join(f"{k} {v}" for k, v in sorted(self.stats.items()) if not k.startswith("write:")), flush=True)
        print(f"figures: {self.stats['ops']} operations, {self.all_ids} observers, {self.stats['poll']} polls checked, "
              f"{self.stats['delivered']} changes delivered, {self.stats['page']} pages read, {self.stats['shape']} shapes tracked", flush=True)
        if self.log.flipflops:
            q, a, b = self.log.flipflops[0]
            print(f"note: {len(self.log.flipflops)} times a query shape was said an insert and a remove of one element in one "
                  f"transaction (its copy unchanged), e.g. {q}: {short(a, 200)} then {short(b, 200)}", flush=True)
        print("writes: " + ", ".join(f"{k[6:]} {v}" for k, v in sorted(self.stats.items()) if k.startswith("write:")), flush=True)
