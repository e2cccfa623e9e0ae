"""Concurrent mode: writers own their objects; the log is the oracle."""

import collections
import copy
import json
import random
import threading
import time
import urllib.parse

from harness import Client, ConnectionLost
from .checker import Checker
from .model import Observer, State, jdump, short
from .operations import COLLS, Plan, Writes, parse_links
from .queries import NAMES, QUERYABLE, QueryGen, parse_query_link, pools_from
from .transport import stop_server
from .verdict import ConcurrentVerdict


class ConcurrentWrites(Writes):
    """A writer's plans: only its own objects, unique values on shared paths."""

    def __init__(self, checker, rng, state, wid):
        self.c = checker
        self.rng = rng
        self.st = state
        self.wid = wid
        self.n = 0

    def check_body(self, plan, got, want):
        if isinstance(want, dict) and "id" in want:
            Writes.check_body(self, plan, got, want)

    def etag_of(self, url):
        try:
            status, h, _ = self.client.request("GET", url)
        except ConnectionLost:
            return None
        return h.get("etag") if status == 200 else None

    def unique(self, base):
        self.n += 1
        return f"{base} w{self.wid}-{self.n}"

    def truck_rename(self):
        name = self.unique("Truck")
        return Plan("truck-rename", "PATCH", "/truck", {"name": name},
                    finish=lambda s, b: [[("/truck/name", "set", None, name)]])

    def login(self):
        u = self.unique("user")
        return Plan("login", "POST", "/account/login", {"userName": u},
                    finish=lambda s, b: [[("/account/userName", "set", None, u)]])

    def order_create(self):
        p = Writes.order_create(self)
        if p.name != "order-create":
            return p
        orig = p.finish
        p.finish = lambda s, b: [[t[0], ("/truck/orderCount", "set", None, None)] for t in orig(s, b)]
        return p

    def order_delete(self):
        p = Writes.order_delete(self)
        if p.name != "order-delete":
            return p
        orig = p.finish
        p.finish = lambda s, b: [[t[0], ("/truck/orderCount", "set", None, None)] for t in orig(s, b)]
        return p

    def row_append(self):
        st = self.st
        n = self.rng.randint(1, 3)

        def finish(status, resp):
            ids = [d.get("id") for d in resp.get("dots") or []]
            for d in ids:
                st.dots[d] = {"isTapAnimated": False, "isRandomAnimated": False}
            if len(ids) != n:
                self.c.report.fail("wrong-state", f"POST /grid/rows {{dots: {n}}} made {len(ids)} dots")
            r = resp.get("row")
            while len(st.rows) <= r:
                st.rows.append([])
            st.rows[r] = list(ids)
            return [[("/grid/rows", "insert", None, {"row": r, "dots": [st.dot(d) for d in ids]})]]
        return Plan("row-append", "POST", "/grid/rows", {"dots": n}, status=201, finish=finish)

    def dot_append(self):
        st = self.st
        rows = [r for r in range(len(st.rows)) if st.rows[r] is not None]
        r = self.rng.choice(rows) if rows else 0

        def finish(status, resp):
            dot = resp.get("dot") or {}
            i = dot.get("id")
            st.dots[i] = {"isTapAnimated": False, "isRandomAnimated": False}
            if resp.get("row") != r:
                self.c.report.fail("wrong-state", f"POST /grid/rows/{r}/dots answered {short(resp)}")
            return [[("/grid/rows", "insert", None, {"row": r, "col": resp.get("col"), "dot": st.dot(i)})]]
        return Plan("dot-append", "POST", f"/grid/rows/{r}/dots", self.rng.choice([None, {}]), finish=finish)

    def valid(self):
        st = self.st
        table = [
            (self.truck_rename, 1), (self.login, 1),
            (self.donut_create, 2 if len(st.donuts) < 4 else 0.2), (self.donut_patch, 4), (self.donut_delete, 0.5 if len(st.donuts) < 4 else 2),
            (self.order_create, 2 if len(st.orders) < 5 else 0.3), (self.order_delete, 1 if len(st.orders) < 5 else 3),
            (self.dot_patch, 4 if st.dots else 0), (self.dot_tap, 2 if st.dots else 0),
            (self.row_append, 0.3 if len(st.dots) < 12 else 0), (self.dot_append, 0.3 if len(st.dots) < 12 else 0),
            (self.post_create, 1.5 if len(st.posts) < 4 else 0.2), (self.post_delete, 0.5 if len(st.posts) < 4 else 2),
            (self.job_create, 1 if len(st.jobs) < 3 else 0.1), (self.job_progress, 3), (self.job_delete, 0.3 if len(st.jobs) < 3 else 1.5),
            (self.game_create, 0.7 if len(st.games) < 2 else 0.05), (self.game_choose, 4), (self.game_delete, 0.2 if len(st.games) < 2 else 1),
        ]
        fns, weights = zip(*table)
        return self.rng.choices(fns, weights)[0]()

    def refused(self):
        # Rows appended by other writers are not in this writer's state: a
        # row past the grid's limit is the unknown row here.
        p = Writes.refused(self)
        while p.name == "dot-append-no-row":
            p = Writes.refused(self)
        if self.rng.random() < 0.05:
            p = Plan("dot-append-no-row", "POST", f"/grid/rows/{100000 + self.rng.randrange(1000)}/dots", status=404, finish=lambda s, b: [])
        return p


def paths_from(url, body):
    """What a GET answer makes its observer read: (property paths, shapes
    as (collection, fields)); a collection, whole, is one shape."""
    base = url.split("?")[0]
    q = dict(urllib.parse.parse_qsl(url.split("?", 1)[1])) if "?" in url else {}
    fields = q["fields"].split(",") if "fields" in q else None
    out, shapes = [], []

    def fields_of(prefix, obj, skip=("id",)):
        return [f"{prefix}/{k}" for k in obj if k not in skip]

    if base == "/truck":
        for k in body:
            if k in ("donuts", "orders"):
                shapes.append((f"/truck/{k}", None))
            else:
                out.append(f"/truck/{k}")
    elif base in COLLS:
        shapes.append((base, fields))
    elif base.startswith("/games/"):
        if "cards" in body:
            shapes.append((f"{base}/cards", None))
        if "isOver" in body:
            out.append(f"{base}/isOver")
    elif base == "/grid":
        out.append("/grid/rows")
        for row in body["rows"]:
            for d in row:
                out += fields_of(f"/grid/dots/{d['id']}", d)
    elif base.startswith("/grid/dots/"):
        out += fields_of(base, body)
    elif base == "/truck/orderCount":
        out.append("/truck/orderCount")
    elif base == "/account":
        out.append("/account/userName")
    else:   # /truck/donuts/{id}, /posts/{id}, /jobs/{id}
        out += fields_of(base, body)
    return out, shapes


class ConcurrentChecker(ConcurrentVerdict, Checker):
    """Writer and reader threads on one server; every answer they recorded
    is checked once the run is over (precision/verdict.py)."""

    def __init__(self, args, report, instances):
        super().__init__(args, report, instances)
        self.lock = threading.Lock()
        self.raw = []                  # changes the all-seeing observer was told, in order
        self.raw_newest = 0
        self.records = []              # (writer, plan description, txns) of acknowledged writes
        self.pause = threading.Event()
        self.paused = 0
        self.cv = threading.Condition()
        self.stop = False
        self.restarting = False
        self.ops_done = 0
        self.writes_done = 0
        self.reader_ops = 0
        self.reader_obs = []           # (Observer, events)
        self.pages_read = 0

    # -- the all-seeing observer's poller
    def seer_loop(self):
        c = Client(self.instances[0].port, timeout=20)
        while not self.stop:
            if c.port != self.instances[0].port:
                c.close()
                c = Client(self.instances[0].port, timeout=20)
            try:
                status, _, ans = c.request("GET", f"/observers/{self.seer.id}/changes?since={self.raw_newest}&timeout=0.5&limit=1000")
            except ConnectionLost as e:
                if not self.restarting:
                    self.report.fail("crash", f"all-seeing observer's poll: {e}")
                time.sleep(0.1)
                continue
            if status != 200:
                if not self.restarting:
                    self.report.fail("wrong-status", f"all-seeing observer's poll answered {status} {short(ans)}")
                time.sleep(0.1)
                continue
            with self.lock:
                for ch in ans["changes"]:
                    if isinstance(ch.get("seq"), int) and ch["seq"] > self.raw_newest:
                        self.raw.append(ch)
                        self.raw_newest = ch["seq"]
                    else:
                        self.report.fail("out-of-order", f"all-seeing observer was told {short(ch)} after seq {self.raw_newest}")
                self.raw_newest = max(self.raw_newest, ans["cursor"])
        c.close()

    def catch_up(self):
        """Waits until the all-seeing observer has everything /healthz says is committed."""
        c = Client(self.instances[0].port)
        status, _, hz = c.request("GET", "/healthz")
        c.close()
        target = hz["seq"]
        deadline = time.monotonic() + 15
        while self.raw_newest < target and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.raw_newest < target:
            self.report.fail("missed", f"the all-seeing observer reached seq {self.raw_newest}, /healthz says {target}")
        return target

    # -- pausing for restarts
    def checkpoint(self):
        if self.pause.is_set():
            with self.cv:
                self.paused += 1
                self.cv.notify_all()
                while self.pause.is_set() and not self.stop:
                    self.cv.wait(0.1)
                self.paused -= 1

    def writer_loop(self, wid, state):
        rng = random.Random(self.args.seed * 1000 + wid)
        w = ConcurrentWrites(self, rng, state, wid)
        c = Client(self.instances[0].port)
        w.client = c
        while not self.stop:
            self.checkpoint()
            if self.stop:
                break
            with self.lock:
                if self.writes_done >= self.args.ops // 2:
                    break
                self.writes_done += 1
                self.ops_done += 1
            if c.port != self.instances[0].port:
                c.close()
                c = Client(self.instances[0].port)
                w.client = c
            plan = w.valid() if rng.random() < 0.9 else w.refused()
            try:
                status, h, body = c.request(plan.method, plan.path, body=plan.body, raw=plan.raw, headers=plan.headers)
            except ConnectionLost as e:
                self.report.fail("crash", f"writer {wid}: {plan.describe()}: {e}")
                continue
            if status not in plan.status:
                self.report.fail("wrong-status", f"writer {wid}: {plan.describe()} answered {status} {short(body)}; expected {plan.status}")
                if 200 <= status < 300:
                    with self.lock:
                        self.records.append((wid, plan.describe() + " (unexpected success)", None))
                continue
            if 200 <= status < 300:
                txns = plan.finish(status, body)
                with self.lock:
                    self.records.append((wid, plan.describe(), txns))
        c.close()

    def reader_loop(self, rid, count):
        rng = random.Random(self.args.seed * 7919 + rid)
        c = Client(self.instances[0].port)
        mine = []
        pool = collections.defaultdict(dict)   # collection -> {position: element id}, from the Links
        seen = 0   # newest cursor this thread has seen: a lower bound for "newest before"
        qshare = 0.12 if self.queries else 0
        qgen = QueryGen(rng)
        pools = {coll: pools_from(self.log, coll) for coll in QUERYABLE}   # the seed's values
        while not self.stop:
            self.checkpoint()
            if self.stop:
                break
            with self.lock:
                if self.reader_ops >= self.args.ops - self.args.ops // 2:
                    break
                self.reader_ops += 1
                self.ops_done += 1
            if c.port != self.instances[0].port:
                c.close()
                c = Client(self.instances[0].port)
            try:
                if len(mine) < count and (not mine or rng.random() < 0.2):
                    status, _, body = c.request("POST", "/observers", body={"ttlSeconds": 86400})
                    if status != 201:
                        self.report.fail("wrong-status", f"POST /observers answered {status} {short(body)}")
                        continue
                    o = Observer(body["id"], body["cursor"], time.monotonic())
                    ev = [("create", body["cursor"])]
                    with self.lock:
                        self.reader_obs.append((o, ev))
                    mine.append((o, ev))
                    continue
                o, ev = rng.choice(mine)
                r = rng.random() * (1 + qshare)
                if r < 0.4:
                    url = rng.choice(["/truck", "/truck?fields=name,orderCount", "/truck?fields=donuts", "/truck/donuts",
                                      "/truck/donuts?fields=name", "/truck/donuts?fields=id", "/truck/orders", "/truck/orderCount",
                                      "/account", "/grid", "/grid?fields=isTapAnimated", "/posts", "/posts?fields=id",
                                      "/jobs", "/jobs?fields=progress", "/games", "/games?fields=isOver"])
                    status, h, body = c.request("GET", url, headers={"Observer": o.id})
                    if status != 200:
                        self.report.fail("wrong-status", f"GET {url} -H 'Observer: {o.id}' answered {status} {short(body)}")
                        continue
                    cur = int(h.get("observation-cursor", -1))
                    if cur < seen:
                        self.report.fail("wrong-cursor", f"GET {url}: Observation-Cursor {cur} below {seen}, seen earlier by the same client")
                    seen = max(seen, cur)
                    paths, shapes = paths_from(url, body)
                    ev.append(("read", cur, paths, url, shapes))
                elif r < 0.55:
                    # a page: its window is known once the log gives the creation order
                    coll = rng.choice(list(COLLS))
                    name, names = COLLS[coll]
                    limit = rng.randint(1, 4)
                    desc = rng.random() < 0.5
                    fields = [x for x in names if rng.random() < 0.5] or None
                    after = rng.choice(list(pool[coll].items())) if pool[coll] and rng.random() < 0.6 else None
                    q = [f"limit={limit}"] + (["order=desc"] if desc else []) + ([f"after={after[0]}"] if after else []) \
                        + ([f"fields={','.join(fields)}"] if fields else [])
                    url = coll + "?" + "&".join(q)
                    status, h, body = c.request("GET", url, headers={"Observer": o.id})
                    if status != 200 or not isinstance(body, dict) or not isinstance(body.get(name), list):
                        self.report.fail("wrong-status", f"GET {url} -H 'Observer: {o.id}' answered {status} {short(body)}")
                        continue
                    cur = int(h.get("observation-cursor", -1))
                    seen = max(seen, cur)
                    ids = [e.get("id") for e in body[name]]
                    link = parse_links(h.get("link")).get(None)
                    last = None
                    if link is not None and ids and link[1].get("after", "").isdigit():
                        last = ids[-1]
                        pool[coll][int(link[1]["after"])] = last
                    elif link is not None:
                        self.report.fail("wrong-state", f"GET {url}: Link {link[2]!r} after {len(ids)} elements")
                    with self.lock:
                        self.pages_read += 1
                    ev.append(("page", cur, coll, fields, after[1] if after else None, desc, limit, ids, last, url))
                elif r < 0.55 + qshare:
                    self.reader_query(c, rng, qgen, pools, o, ev)
                elif r < 0.93 + qshare:
                    q = []
                    kind = rng.random()
                    if kind < 0.5:
                        since = None
                    elif kind < 0.8:
                        since = o.implicit
                    else:
                        since = rng.choice(o.cursors + [0])
                    if since is not None:
                        q.append(f"since={since}")
                    timeout = rng.choice([0, 0, 0, 0.3, 0.6])
                    q.append(f"timeout={timeout}")
                    limit = rng.choice([None, None, None, 1, 2, 5])
                    if limit:
                        q.append(f"limit={limit}")
                    co = rng.random() < 0.15
                    if co:
                        q.append("coalesce=true")
                    url = f"/observers/{o.id}/changes?" + "&".join(q)
                    t0 = time.monotonic()
                    status, h, ans = c.request("GET", url, timeout=timeout + 20)
                    took = time.monotonic() - t0
                    if status != 200:
                        self.report.fail("wrong-status", f"GET {url} answered {status} {short(ans)}")
                        continue
                    if timeout > 0 and not ans["changes"] and took < timeout - 0.1:
                        self.report.fail("early-wake", f"observer {o.id}: GET {url} answered {short(ans)} after {took:.2f} s of its {timeout} s")
                    eff = since if since is not None else o.implicit
                    ev.append(("poll", url, eff, limit or 100, co, ans, seen, since is None))
                    o.answered(ans["cursor"])
                    seen = max(seen, ans["cursor"])
                elif r < 0.97 + qshare:
                    status, _, body = c.request("GET", f"/observers/{o.id}")
                    if status != 200 or body.get("cursor") != o.implicit:
                        self.report.fail("wrong-cursor", f"observer {o.id}: GET /observers/{o.id} answered {status} cursor "
                                                         f"{body.get('cursor') if isinstance(body, dict) else body}; last answered {o.implicit}")
                        if isinstance(body, dict) and isinstance(body.get("cursor"), int):
                            o.answered(body["cursor"])
                else:
                    status, _, body = c.request("DELETE", f"/observers/{o.id}/reads")
                    if status != 204:
                        self.report.fail("wrong-status", f"DELETE /observers/{o.id}/reads answered {status}")
                        continue
                    ev.append(("forget",))
            except ConnectionLost as e:
                self.report.fail("crash", f"reader {rid}: {e}")
        c.close()

    def reader_query(self, c, rng, qgen, pools, o, ev):
        """A query read, its Link followed now and then: recorded with its
        cursor; its window and body are checked against the log once the
        run is over (precision/verdict.py)."""
        coll = rng.choice(list(QUERYABLE))
        spec = qgen.spec(coll, pools[coll])
        url = spec.url(rng)
        prev = None
        for hop in range(3):
            status, h, body = c.request("GET", url, headers={"Observer": o.id})
            name = NAMES[coll]
            if status != 200 or not isinstance(body, dict) or not isinstance(body.get(name), list):
                self.report.fail("wrong-status", f"GET {url} -H 'Observer: {o.id}' ({spec.describe()}) answered {status} {short(body)}")
                return
            cur = int(h.get("observation-cursor", -1))
            link = parse_query_link(h.get("link"))
            with self.lock:
                self.stats["query-read"] += 1
            ev.append(("qread", cur, spec, body[name], link, url, prev))
            if link is None or not body[name] or rng.random() < 0.4:
                return
            token = dict(link[1]).get("after")
            prev = (cur, body[name][-1].get("id"))
            spec = copy.copy(spec)
            spec.after = (token, None)
            url = link[2]

    # -- restarts with every thread paused
    def restart_paused(self, how, threads):
        self.pause.set()
        with self.cv:
            while self.paused < len(threads) and any(t.is_alive() for t in threads):
                self.cv.wait(0.1)
                alive = sum(1 for t in threads if t.is_alive())
                if self.paused >= alive:
                    break
        self.catch_up()
        self.restarting = True
        inst = self.instances[0]
        t_kill = time.monotonic()
        print(f"restart: by {'SIGTERM' if how == 'term' else 'kill -9'} after {self.ops_done} operations", flush=True)
        stop_server(inst, how, self.report)
        inst.start()
        self.restarting = False
        self.catch_up()
        c = Client(inst.port)
        with self.lock:
            obs_list = list(self.reader_obs)
        for o, ev in obs_list:
            status, _, body = c.request("GET", f"/observers/{o.id}")
            if status != 200:
                self.report.fail("wrong-status", f"after the restart GET /observers/{o.id} answered {status} {short(body)}")
                continue
            cur = body.get("cursor")
            if how == "term":
                ok = cur == o.implicit
                allowed = [o.implicit]
            else:
                allowed = {cc for (t, cc) in o.history if t > t_kill - 1.5}
                older = [cc for (t, cc) in o.history if t <= t_kill - 1.5]
                if older:
                    allowed.add(older[-1])
                ok = cur in allowed
            if not ok:
                self.report.fail("wrong-cursor", f"observer {o.id}: after the {'SIGTERM' if how == 'term' else 'kill -9'} restart "
                                                 f"its cursor is {cur}; allowed {sorted(allowed)[-5:]}")
            if isinstance(cur, int) and cur != o.implicit:
                o.answered(cur)
            ev.append(("reads", body.get("reads")))
        c.close()
        self.pause.clear()

    def run(self):
        a = self.args
        self.setup()
        self.raw_newest = self.log.newest
        self.initial = (json.loads(jdump(self.st.truck())), {"userName": self.st.user}, self.st.grid(),
                        {"posts": [self.st.post(i) for i in self.st.posts]}, {"jobs": [self.st.job(i) for i in self.st.jobs]},
                        {"games": [self.st.game(i) for i in self.st.games]})
        # Writers' own states: seed dots dealt round-robin, nothing else.
        states = []
        dots = [d for row in self.st.rows for d in row]
        for w in range(a.writers):
            s = State()
            s.truck_name = None
            s.rows = [list(r) for r in self.st.rows]
            s.dots = {d: dict(self.st.dots[d]) for k, d in enumerate(dots) if k % a.writers == w}
            states.append(s)
        seer = threading.Thread(target=self.seer_loop, daemon=True)
        seer.start()
        per_reader = max(1, a.observers // max(1, a.readers))
        threads = [threading.Thread(target=self.writer_loop, args=(w, states[w]), daemon=True) for w in range(a.writers)]
        threads += [threading.Thread(target=self.reader_loop, args=(r, per_reader), daemon=True) for r in range(a.readers)]
        for t in threads:
            t.start()
        points = [int(a.ops * (i + 1) / (a.restarts + 1)) for i in range(a.restarts)]
        done = 0
        last = time.monotonic()
        while any(t.is_alive() for t in threads):
            time.sleep(0.05)
            if done < len(points) and self.ops_done >= points[done]:
                self.restart_paused(["term", "kill"][done % 2], threads)
                done += 1
            if time.monotonic() - last > 15:
                last = time.monotonic()
                print(f"progress: {self.ops_done}/{a.ops} operations, seq {self.raw_newest}, failures {self.report.total()}", flush=True)
        for t in threads:
            t.join()
        self.catch_up()
        self.stop = True
        seer.join(5)
        self.verify()
