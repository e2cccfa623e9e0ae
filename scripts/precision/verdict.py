"""The verdict of a concurrent run: the log the all-seeing observer was
told, against every acknowledged write and every recorded poll."""

import collections

from .queries import QueryRead, check_link
from .model import DONUT_FIELDS, DOT_FIELDS, INF, Entry, Log, MShape, Observer, State, advance_implied, jdump, short

# Paths every writer sets: each value written is unique, so the log tells whose write it was.
SHARED_UNIQUE = ("/truck/name", "/account/userName")


class ConcurrentVerdict:
    """Once every thread is done: who committed each change, every
    acknowledged change in the log as predicted, the log replayed through
    the model, every poll checked against the log. A mixin of
    ConcurrentChecker, whose records it reads."""

    def verify(self):
        with self.lock:
            raw = list(self.raw)
            records = list(self.records)
        # 1. who committed each change
        claims = {}
        ordinal_want = collections.defaultdict(list)
        for rec_i, (wid, desc, txns) in enumerate(records):
            if txns is None:
                continue
            for ti, t in enumerate(txns):
                for ci, (path, op, old, new) in enumerate(t):
                    if path == "/truck/orderCount":
                        continue
                    if op in ("insert", "remove"):
                        v = new if op == "insert" else old
                        ident = v.get("id") if "id" in v else (v.get("dot") or {}).get("id") or jdump(v.get("dots"))
                        claims[(path, op, ident)] = (rec_i, ti, ci)
                    elif path in SHARED_UNIQUE:
                        claims[(path, jdump(new))] = (rec_i, ti, ci)
                    else:
                        ordinal_want[path].append((rec_i, ti, ci))
        ordinal_seen = collections.Counter()
        found = {}   # (rec, ti, ci) -> raw change
        owner = []   # per raw change: (rec, ti) or None
        for k, ch in enumerate(raw):
            path, op = ch.get("path"), ch.get("op")
            key = None
            if path == "/truck/orderCount":
                prev = owner[-1] if owner else None
                if prev is not None and raw[k - 1].get("path") == "/truck/orders" and raw[k - 1].get("seq") == ch.get("seq") - 1:
                    owner.append(prev)
                    found[(prev[0], prev[1], 1)] = ch
                else:
                    owner.append(None)
                    self.report.fail("spurious", f"log: {short(ch)} does not follow an order's insert or remove in one transaction")
                continue
            if op in ("insert", "remove"):
                v = ch.get("new") if op == "insert" else ch.get("old")
                ident = v.get("id") if "id" in v else (v.get("dot") or {}).get("id") or jdump(v.get("dots"))
                key = claims.get((path, op, ident))
            elif path in SHARED_UNIQUE:
                key = claims.get((path, jdump(ch.get("new"))))
            else:
                n = ordinal_seen[path]
                ordinal_seen[path] += 1
                lst = ordinal_want.get(path, [])
                key = lst[n] if n < len(lst) else None
            if key is None:
                owner.append(None)
                self.report.fail("spurious", f"log: {short(ch)} was committed by no acknowledged write")
                continue
            found[key] = ch
            owner.append((key[0], key[1]))
        # 2. every acknowledged change in the log, right, each transaction consecutive
        for rec_i, (wid, desc, txns) in enumerate(records):
            if txns is None:
                continue
            for ti, t in enumerate(txns):
                seqs = []
                for ci, (path, op, old, new) in enumerate(t):
                    ch = found.get((rec_i, ti, ci))
                    if ch is None:
                        self.report.fail("lost-write", f"writer {wid}: {desc} was acknowledged but the log lacks its change {op} {path} -> {short(new, 120)}")
                        continue
                    seqs.append(ch["seq"])
                    if ch.get("path") != path or ch.get("op") != op \
                            or (new is not None and jdump(ch.get("new") if op != "remove" else None) != jdump(new)) \
                            or (old is not None and jdump(ch.get("old")) != jdump(old)):
                        self.report.fail("wrong-value", f"writer {wid}: {desc} committed {short(ch)}; predicted {op} {path} {short(old, 100)} -> {short(new, 100)}")
                if seqs != list(range(seqs[0], seqs[0] + len(seqs))) if seqs else False:
                    self.report.fail("split-transaction", f"writer {wid}: {desc}: the changes of one transaction have seqs {seqs}")
        # 3. the log replayed through the model: every old value is the value before
        st = State()
        st.load(*self.initial)
        self.st = st
        self.reads.st = st
        log = Log()
        log.seed(st)
        txn_of = {}
        for k, ch in enumerate(raw):
            key = owner[k]
            if key is None:
                tid = log.new_txn()
            else:
                if key not in txn_of:
                    txn_of[key] = log.new_txn()
                tid = txn_of[key]
            self.replay_one(st, ch)
            log.append(Entry(ch["seq"], ch.get("path"), ch.get("op"), ch.get("old"), ch.get("new"), tid))
        self.log = log
        self.check_state("at the end of the concurrent run")
        # 4. every poll of every observer
        polls = 0
        pages = 0
        for o, ev in self.reader_obs:
            m = Observer(o.id, ev[0][1], 0)
            for e in ev[1:]:
                if e[0] == "read":
                    for p in e[2]:
                        m.track(p, e[1])
                    for coll, fields in e[4]:
                        m.track_shape(MShape(coll, fields, -1, INF, e[1], newest=e[1]))
                        self.stats["shape"] += 1
                elif e[0] == "page":
                    _, cur, coll, fields, after, desc, limit, ids, last, url = e
                    pages += 1
                    sh = self.page_shape(log, cur, coll, fields, after, desc, limit, ids, last, url)
                    if sh is not None:
                        m.track_shape(sh)
                        self.stats["shape"] += 1
                elif e[0] == "qread":
                    qr = self.query_shape(log, e)
                    if qr is not None:
                        m.track_qshape(qr.shape(e[1]))
                        self.stats["query-shape"] += 1
                elif e[0] == "forget":
                    advance_implied(m, log, m.cursors[-1])
                    m.forget()
                elif e[0] == "poll":
                    _, url, since, limit, co, ans, seen, implicit = e
                    polls += 1
                    self.check_answer(m, f"GET {url}", since, limit, co, ans, seen, implicit)
                    m.answered(ans["cursor"])
        print(f"concurrent: {len(raw)} changes from {len(records)} acknowledged writes; {polls} polls and {pages} pages by "
              f"{len(self.reader_obs)} observers checked against the log", flush=True)
        self.stats["poll"] = polls
        self.stats["page"] = pages
        print(f"figures: {self.ops_done} operations, {len(self.reader_obs)} observers, {polls} polls checked, "
              f"{self.stats['delivered']} changes delivered, {pages} pages read, {self.stats['shape']} shapes tracked", flush=True)
        print(f"queries: {self.stats['query-read']} query reads, {self.stats['query-shape']} query shapes, "
              f"{self.stats['query-delivered']} query changes delivered, {self.stats['query-copy-checked']} copies checked", flush=True)

    def query_shape(self, log, e):
        """A query read of the run as the log says it was at its cursor: the
        body and the Link checked; its window from the elements' keys then
        (the after bound from the previous page's last element, at that
        page's cursor)."""
        _, cur, spec, elems, link, url, prev = e
        if prev is not None:
            pcur, pid = prev
            idx = log.idx.get((spec.coll, pid))
            rep = log.version(spec.coll, pid, pcur) if idx is not None else None
            if rep is None:
                self.report.fail("wrong-state", f"GET {url}: the page before ended with {spec.coll}/{pid}, which the log does not hold at {pcur}")
                return None
            spec.after = (spec.after[0], spec.key(rep, idx))
        qr = QueryRead(log, spec, cur)
        if jdump(elems) != jdump(qr.elems):
            self.report.fail("wrong-state", f"GET {url} ({spec.describe()}) at cursor {cur} answered {short(elems, 400)}; "
                                            f"the log says {short(qr.elems, 400)}")
            return None
        problem = check_link(spec, qr, link)
        if problem:
            self.report.fail("wrong-state", f"GET {url} ({spec.describe()}) at cursor {cur}: {problem}")
        return qr

    def page_shape(self, log, cur, coll, fields, after, desc, limit, ids, last, url):
        """The shape a page read in the run makes, its window from the
        creation order the log gives; checks that the page's elements are in
        that order past its cursor's element, and that a page with a Link is
        full."""
        def idx(i):
            n = log.idx.get((coll, i))
            if n is None:
                self.report.fail("wrong-state", f"GET {url} showed {coll}/{i}, which no insert in the log made")
            return n
        ns = [idx(i) for i in ids]
        if None in ns:
            return None
        a = idx(after) if after is not None else None
        if after is not None and a is None:
            return None
        ok = all((y < x) if desc else (y > x) for x, y in zip(ns, ns[1:]))
        if a is not None:
            ok = ok and all((n < a) if desc else (n > a) for n in ns)
        if not ok or len(ids) > limit or (last is not None and len(ids) != limit):
            self.report.fail("wrong-state", f"GET {url} (after #{a}) showed elements made #{ns}: not the page in creation order")
        if not desc:
            lo = a + 1 if a is not None else -1
            hi = ns[-1] if last is not None else INF
        else:
            hi = a - 1 if a is not None else INF
            lo = ns[-1] if last is not None else -1
        return MShape(coll, fields, lo, hi, cur, newest=cur)

    def replay_one(self, st, ch):
        path, op, old, new = ch.get("path"), ch.get("op"), ch.get("old"), ch.get("new")
        parts = path.strip("/").split("/")

        def bad(cur):
            self.report.fail("wrong-value", f"log: {short(ch)}: the value before was {short(cur)}")
        try:
            if op == "set":
                if path == "/truck/name":
                    cur, st.truck_name = st.truck_name, new
                elif path == "/account/userName":
                    cur, st.user = st.user, new
                elif path == "/truck/orderCount":
                    # it follows the insert or remove of its transaction
                    if new != len(st.orders) or not isinstance(old, int) or abs(new - old) != 1:
                        bad(f"{len(st.orders)} orders")
                    return
                elif parts[0] == "truck" and parts[1] == "donuts":
                    d = st.donuts[parts[2]]
                    cur, d[parts[3]] = d[parts[3]], new
                elif parts[0] == "grid":
                    d = st.dots[parts[2]]
                    cur, d[parts[3]] = d[parts[3]], new
                elif parts[0] == "jobs":
                    j = st.jobs[parts[1]]
                    if parts[2] == "progress":
                        cur = {"current": j["current"], "total": j["total"]}
                        j["current"] = new["current"]
                    else:
                        # it follows the progress change that completes the job
                        if not (old is False and new is True and j["current"] == j["total"]):
                            bad(j)
                        return
                elif parts[0] == "games":
                    g = st.games[parts[1]]
                    if parts[2] == "isOver":
                        cur, g["isOver"] = g["isOver"], new
                    else:
                        card = next(c for c in g["cards"] if c["id"] == parts[3])
                        cur, card[parts[4]] = card[parts[4]], new
                else:
                    return
                if jdump(cur) != jdump(old):
                    bad(cur)
            elif op == "insert":
                if path == "/truck/donuts":
                    st.donuts[new["id"]] = {k: new[k] for k in DONUT_FIELDS}
                elif path == "/truck/orders":
                    st.orders[new["id"]] = {"donutId": new["donutId"], "quantity": new["quantity"]}
                elif path == "/posts":
                    st.posts[new["id"]] = {"imageURL": new["imageURL"], "height": new["height"]}
                elif path == "/jobs":
                    st.jobs[new["id"]] = {"current": new["progress"]["current"], "total": new["progress"]["total"]}
                elif path == "/games":
                    st.games[new["id"]] = {"cards": [dict(c) for c in new["cards"]], "isOver": new["isOver"]}
                elif path == "/grid/rows":
                    if "dots" in new:
                        if new["row"] != len(st.rows):
                            bad(f"{len(st.rows)} rows")
                        st.rows.append([d["id"] for d in new["dots"]])
                        for d in new["dots"]:
                            st.dots[d["id"]] = {k: d[k] for k in DOT_FIELDS}
                    else:
                        row = st.rows[new["row"]]
                        if new["col"] != len(row):
                            bad(f"row {new['row']} of {len(row)} dots")
                        row.append(new["dot"]["id"])
                        st.dots[new["dot"]["id"]] = {k: new["dot"][k] for k in DOT_FIELDS}
            elif op == "remove":
                i = old["id"]
                table = {"/truck/donuts": (st.donuts, st.donut), "/truck/orders": (st.orders, st.order), "/posts": (st.posts, st.post),
                         "/jobs": (st.jobs, st.job), "/games": (st.games, st.game)}[path]
                cur = table[1](i)
                del table[0][i]
                if jdump(cur) != jdump(old):
                    bad(cur)
        except (KeyError, IndexError, StopIteration, TypeError) as e:
            self.report.fail("wrong-value", f"log: {short(ch)} names what the model does not hold ({type(e).__name__}: {e})")
