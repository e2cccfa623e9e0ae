"""Observers: made, inspected (`GET /observers/{id}`), made to forget, deleted."""

import collections
import time

from ..model import DONUT_FIELDS, INF, Observer, advance_implied, elem_prefix, short
from ..queries import norm_query


class ObserverChecks:
    """Observers' lives, and what `GET /observers/{id}` shows of them: the
    reads, shapes and cursor the model holds."""

    def create_observer(self, k=None):
        status, h, body = self.req("POST", "/observers", body={"ttlSeconds": 86400} if self.rng.random() < 0.9 else {"ttlSeconds": 86399}, k=k)
        if status != 201 or not isinstance(body, dict):
            self.report.fail("wrong-status", f"POST /observers answered {status} {short(body)}")
            return None
        if body.get("cursor") != self.log.newest or body.get("reads") != []:
            self.report.fail("wrong-cursor", f"POST /observers answered {short(body)}; the newest seq is {self.log.newest}")
        o = Observer(body["id"], body.get("cursor", self.log.newest), time.monotonic())
        o.ins_ptr = len(self.log.inserts)
        self.all_ids += 1
        return o

    def obs_reads_desc(self, obs, paths=None, limit=8, entry=None):
        if paths is None:
            items = sorted(obs.reads.items())[:limit]
        else:
            items = [(p, obs.reads.get(p)) for p in paths]
        more = "" if paths is not None or len(obs.reads) <= limit else f" (+{len(obs.reads) - limit} more)"
        colls = {p[0] for p in entry.places} if entry is not None else set(obs.shapes_by_coll)
        shapes = [f"{sh.describe()}@{sh.frm}" for c in sorted(colls) for sh in obs.shapes_by_coll.get(c, ())][:limit]
        where = ""
        if entry is not None and entry.places:
            where = " (lands at " + ", ".join(f"{c}#{n}{'/' + f if f else ''} made@{m}" for c, n, f, m in entry.places) + ")"
        return "{" + ", ".join(f"{p}@{f}" for p, f in items) + "}" + more + (f" and shapes {shapes}" if shapes else "") + where

    def do_inspect(self, obs, k=None, allowed_cursors=None):
        status, h, body = self.req("GET", f"/observers/{obs.id}", k=k)
        obs.note(f"GET /observers/{obs.id}: cursor {body.get('cursor') if isinstance(body, dict) else status}")
        if status != 200 or not isinstance(body, dict):
            self.report.fail("wrong-status", f"GET /observers/{obs.id} answered {status} {short(body)}")
            return None
        advance_implied(obs, self.log)
        self.check_listing(obs, body)
        cur = body.get("cursor")
        if allowed_cursors is not None:
            if cur not in allowed_cursors:
                self.report.fail("wrong-cursor", f"observer {obs.id}: after kill -9 its cursor is {cur}, allowed {sorted(allowed_cursors)[-6:]}; "
                                                 f"before: {list(obs.trail)[:-1]}")
            if isinstance(cur, int) and cur != obs.implicit:
                obs.answered(cur)
        elif obs.implicit is not None and cur != obs.implicit:
            self.report.fail("wrong-cursor", f"observer {obs.id}: GET /observers/{obs.id} shows cursor {cur}; "
                                             f"the cursor last answered to it is {obs.implicit}; before: {list(obs.trail)[:-1]}")
            if isinstance(cur, int):
                obs.answered(cur)
        elif obs.implicit is None and isinstance(cur, int):
            obs.answered(cur)
        return body

    FIELD_NAMES = {"/truck/donuts": DONUT_FIELDS, "/truck/orders": ("donutId", "quantity"),
                   "/posts": ("imageURL", "height"), "/jobs": ("progress", "isComplete")}

    def check_listing(self, obs, body):
        """`GET /observers/{id}`: `reads` lists every property key read, each
        shape's collection and what it covers now (only paths inside a
        shape's collection may be listed besides the keys); `shapes` lists
        each shape with its fields and window in positions."""
        got = body.get("reads") or []
        gs = set(got)
        want = set(obs.reads)
        colls = {sh.coll for sh in obs.shapes.values()}
        # a query shape's collection, and what it covers, may be listed (the contract does not say)
        allowed = colls | {q.coll for q in obs.qshapes.values()}
        missing = sorted((want | colls) - gs)
        extra = sorted(p for p in gs - want - allowed if not any(p.startswith(c + "/") for c in allowed))
        # What the shapes of top-level collections cover now: each shown
        # field of each element in the window (every field of one made after
        # the read), while the listing is under its bound.
        covered = []
        if sum(len(self.reads.elems(c)) for c in colls if c in self.FIELD_NAMES) * 4 < 5000:
            log = self.log
            for sh in obs.shapes.values():
                names = self.FIELD_NAMES.get(sh.coll)
                if names is None:
                    continue
                for i in self.reads.elems(sh.coll):
                    n = log.idx.get((sh.coll, i))
                    if n is None or not (sh.lo <= n <= sh.hi):
                        continue
                    made = log.made[(sh.coll, i)]
                    for f in names:
                        if sh.fields is None or f in sh.fields or (sh.newer and made > sh.frm):
                            covered.append(f"{sh.coll}/{i}/{f}")
            missing += sorted(set(covered) - gs)
        if missing or extra or got != sorted(got):
            self.report.fail("wrong-reads", f"observer {obs.id}: GET /observers/{obs.id} lists {len(got)} reads; "
                                            f"missing {missing[:6]}{' (+%d)' % (len(missing) - 6) if len(missing) > 6 else ''}, "
                                            f"extra {extra[:6]}" + (" (not sorted)" if got != sorted(got) else "")
                                            + f"; shapes {[sh.describe() for sh in obs.shapes.values()][:6]}; before: {list(obs.trail)}")
            # adopt the server's keys, so one fault is counted once
            reads = {p: f for p, f in obs.reads.items() if p in gs}
            for p in extra:
                reads[p] = self.log.newest
            obs.reads = {}
            obs.elem_from = {}
            for p, f in reads.items():
                obs.track(p, f)
            for sh in obs.shapes.values():
                e = elem_prefix(sh.coll)
                if e is not None:
                    obs.elem_from[e] = min(obs.elem_from.get(e, INF), sh.frm)
        gsh = collections.Counter()
        gq = collections.Counter()
        for x in body.get("shapes") or []:
            if isinstance(x, dict):
                f = x.get("fields")
                if x.get("query") is not None:
                    # a query shape: its window's bounds are tokens (or positions), not compared
                    gq[(x.get("collection"), None if f is None else tuple(sorted(f)), norm_query(x.get("query")))] += 1
                    continue
                gsh[(x.get("collection"), None if f is None else tuple(f), x.get("from"), x.get("through"))] += 1
        wq = collections.Counter(q.listing()[:2] + (q.nq,) for q in obs.qshapes.values())
        if gq != wq:
            self.report.fail("wrong-reads", f"observer {obs.id}: GET /observers/{obs.id} lists {sum(gq.values())} query shapes, the model "
                                            f"{sum(wq.values())}: missing {list((wq - gq).elements())[:4]}, "
                                            f"extra {list((gq - wq).elements())[:4]}; model: {[q.describe() for q in obs.qshapes.values()][:4]}; "
                                            f"before: {list(obs.trail)}")
        wsh = collections.Counter(sh.listing() for sh in obs.shapes.values())
        if gsh != wsh:
            self.report.fail("wrong-reads", f"observer {obs.id}: GET /observers/{obs.id} lists {sum(gsh.values())} shapes, the model "
                                            f"{sum(wsh.values())}: missing {list((wsh - gsh).elements())[:4]}, "
                                            f"extra {list((gsh - wsh).elements())[:4]}; before: {list(obs.trail)}")

    def do_forget(self, obs):
        obs.note("DELETE reads")
        status, _, body = self.req("DELETE", f"/observers/{obs.id}/reads")
        if status != 204:
            self.report.fail("wrong-status", f"DELETE /observers/{obs.id}/reads answered {status} {short(body)}")
            return
        advance_implied(obs, self.log)
        obs.forget()
        obs.ins_ptr = len(self.log.inserts)

    def do_delete(self, obs):
        parked = None
        if self.rng.random() < 0.3 and self.longpoll_budget > 0:
            self.longpoll_budget -= 1
            # catch up first, so that the parked poll has nothing to answer
            if self.catch_up(obs) is not None:
                parked = self.start_parked(obs, None, 10)
                time.sleep(0.15)
        t0 = time.monotonic()
        status, _, body = self.req("DELETE", f"/observers/{obs.id}")
        if status != 204:
            self.report.fail("wrong-status", f"DELETE /observers/{obs.id} answered {status} {short(body)}")
        self.observers.remove(obs)
        obs.deleted = True
        self.deleted.append(obs.id)
        if parked is not None:
            parked.join(12)
            if parked.status != 404 or parked.done_at - t0 > 1.0:
                self.report.fail("late-wake" if parked.status == 404 else "wrong-status",
                                 f"observer {obs.id}: a poll parked when it was deleted answered {parked.status} "
                                 f"after {parked.done_at - t0:.2f} s (expected 404 at once)")
        for method, url in (("GET", f"/observers/{obs.id}"), ("GET", f"/observers/{obs.id}/changes?timeout=0"),
                            ("DELETE", f"/observers/{obs.id}")):
            if self.rng.random() < 0.4:
                status, _, body = self.req(method, url)
                if status != 404:
                    self.report.fail("wrong-status", f"{method} {url} after the observer's deletion answered {status} {short(body)}")
