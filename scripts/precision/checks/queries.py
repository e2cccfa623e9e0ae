"""Query reads (SPEC §3d): filtered and sorted reads, their Links, the
copies their readers keep, and malformed queries."""

import copy

from ..model import jdump, short
from ..queries import NAMES, QUERYABLE, QueryRead, Spec, check_link, parse_query_link, pools_from, select

# Malformed queries: each must be 400 problem+json (naming the field where
# there is one) and track nothing.
BAD_QUERIES = [
    ("/truck/orders?foo=eq.1", "foo"),                      # no such field
    ("/truck/orders?name=eq.Glazed", "name"),               # no such field on orders
    ("/truck/donuts?name=eq.Glazed", "name"),               # a field, not queryable
    ("/posts?imageURL=eq.x", "imageURL"),
    ("/jobs?progress=eq.1", "progress"),
    ("/games?cards=eq.x", "cards"),
    ("/truck/orders?quantity=like.3", "quantity"),          # unknown operator
    ("/truck/orders?quantity=3", "quantity"),
    ("/truck/orders?quantity=not.eq.3", "quantity"),
    ("/truck/orders?quantity=is.nil", "quantity"),
    ("/truck/orders?quantity=eq.abc", "quantity"),          # wrong type
    ("/truck/orders?quantity=gt.1.5", "quantity"),
    ("/truck/orders?quantity=eq.", "quantity"),
    ("/truck/orders?quantity=gte.2&quantity=lte.x", "quantity"),
    ("/posts?height=lt.tall", "height"),
    ("/jobs?isComplete=eq.yes", "isComplete"),
    ("/games?isOver=eq.1", "isOver"),
    ("/truck/orders?quantity=in.(1,2", "quantity"),         # malformed in list
    ("/truck/orders?quantity=in.1,2", "quantity"),
    ("/truck/orders?quantity=in.(1,x)", "quantity"),
    ("/truck/donuts?dough=in.(%22plain)", "dough"),
    ("/truck/orders?sort=flavour", "flavour"),              # sort on no field, or not queryable
    ("/truck/donuts?sort=-name", "name"),
    ("/truck/orders?sort=--quantity", None),
    ("/truck/orders?sort=", None),
    ("/truck/orders?sort=quantity&sort=donutId", None),     # a repeated sort
    ("/posts?sort=height&sort=height", None),
    ("/jobs?isComplete=eq.true&sort=-isComplete&sort=isComplete", None),
    ("/truck/orders?sort=quantity&order=desc", None),       # order with sort
    ("/posts?sort=-height&order=asc", None),
    ("/truck/orders?sort=quantity&after=zzz", None),        # a bad after token
    ("/posts?sort=height&after=%21%21", None),
    ("/jobs?isComplete=eq.true&after=x", None),
]


class QueryChecks:
    """Query reads as the model predicts them (body, Observation-Cursor,
    Link, followed), the shape each makes its observer read with the copy
    its reader keeps (precision/queries.py), malformed queries, and the
    copies against fresh reads at the end and after restarts."""

    def do_query_read(self, obs):
        rng = self.rng
        coll = rng.choice(list(QUERYABLE))
        spec = self.qgen.spec(coll, pools_from(self.log, coll))
        if spec.sort is None and self.pool.get(coll) and rng.random() < 0.25:
            # after= a position a Link gave (a read without sort)
            pos = rng.choice(list(self.pool[coll]))
            spec.after = (str(pos), (self.log.idx[(coll, self.pool[coll][pos])],))
        elif spec.sort is not None and self.tokens.get((coll,) + spec.sort) and rng.random() < 0.25:
            # after= a token a Link of the same sort gave, maybe long ago (its
            # element since changed or gone): it carries the key it was made with
            spec.after = rng.choice(self.tokens[(coll,) + spec.sort])
        nxt = self.query_one(obs, spec, spec.url(rng))
        hops = 0
        while nxt is not None and hops < 4 and rng.random() < 0.6:
            hops += 1
            spec, qr, target, token = nxt
            ns = copy.copy(spec)
            ns.after = (token, qr.last_key)
            self.stats["query-followed"] += 1
            nxt = self.query_one(obs if rng.random() < 0.9 else None, ns, target)

    def query_one(self, obs, spec, url):
        """One query read; returns (spec, read, Link target, after) when a Link came."""
        qr = QueryRead(self.log, spec)
        headers = {}
        full = url
        if obs is not None:
            if self.rng.random() < 0.7:
                headers["Observer"] = obs.id
            else:
                full = url + ("&" if "?" in url else "?") + "observer=" + obs.id
        self.stats["query-read"] += 1
        status, h, got = self.req("GET", full, headers=headers)
        desc = f"GET {full}" + "".join(f" -H '{k}: {v}'" for k, v in headers.items())
        if obs is not None:
            obs.note(desc)
        if status != 200:
            self.report.fail("wrong-status", f"{desc} ({spec.describe()}) answered {status} {short(got)}; expected 200")
            return None
        cur = h.get("observation-cursor")
        if cur is None or not cur.isdigit() or int(cur) != self.log.newest:
            self.report.fail("wrong-cursor", f"{desc}: Observation-Cursor {cur}, but the newest acknowledged seq is {self.log.newest}")
            return None
        cur = int(cur)
        if jdump(got) != jdump(qr.body):
            self.report.fail("wrong-state", f"{desc} ({spec.describe()}) answered {short(got, 500)}; the model says {short(qr.body, 500)}")
            return None
        link = parse_query_link(h.get("link"))
        problem = check_link(spec, qr, link)
        if problem:
            self.report.fail("wrong-state", f"{desc} ({spec.describe()}): {problem}")
        if obs is not None:
            sh = obs.track_qshape(qr.shape(cur))
            self.stats["query-shape"] += 1
            if cur > 0:
                obs.cursors.append(cur)
            obs.note(f"query shape {sh.describe()}")
        if link is None or problem:
            return None
        token = dict(link[1]).get("after")
        if spec.sort is None:
            self.learn_position(desc, spec.coll, qr.shown[-1], int(token))
        else:
            lst = self.tokens.setdefault((spec.coll,) + spec.sort, [])
            lst.append((token, qr.last_key))
            if len(lst) > 50:
                del lst[:10]
        return spec, qr, link[2], token

    def do_bad_query(self, obs):
        url, field = self.rng.choice(BAD_QUERIES)
        # a repeated sort is 400 like any other malformed query, and tracks nothing
        headers = {"Observer": obs.id} if obs is not None and self.rng.random() < 0.8 else {}
        status, h, body = self.req("GET", url, headers=headers)
        self.stats["query-bad"] += 1
        desc = f"GET {url}" + (f" -H 'Observer: {obs.id}'" if headers else "")
        if status != 400:
            self.report.fail("wrong-status", f"{desc} answered {status} {short(body)}; expected 400")
            return
        if "application/problem+json" not in h.get("content-type", ""):
            self.report.fail("wrong-status", f"{desc} answered 400 without problem+json: {short(body)}")
        elif field is not None and field not in jdump(body):
            self.report.fail("wrong-status", f"{desc} answered 400 {short(body)}, which does not name the field {field!r}")

    def check_copies(self, context, sample=40):
        """Brings the copies of some observers' query shapes to the newest
        seq (polls, each checked) and compares each with a fresh read of its
        query from the server, restricted to the window, and with the model."""
        with_q = [o for o in self.observers if o.qshapes]
        if not with_q:
            return
        chosen = self.rng.sample(with_q, min(len(with_q), sample))
        for obs in chosen:
            self.catch_up(obs)
            for sh in list(obs.qshapes.values()):
                if sh.copy_cur != self.log.newest:
                    continue
                spec = Spec(sh.coll, sh.spec.conds, sh.spec.sort, sh.spec.desc, None, sh.spec.fields)
                url = spec.url(self.rng)
                status, h, got = self.req("GET", url)
                self.stats["query-fresh"] += 1
                if status != 200 or not isinstance(got, dict) or not isinstance(got.get(NAMES[sh.coll]), list):
                    self.report.fail("wrong-status", f"{context}: fresh read GET {url} answered {status} {short(got)}")
                    continue
                fresh = {}
                for e in got[NAMES[sh.coll]]:
                    i = e.get("id") if isinstance(e, dict) else None
                    idx = self.log.idx.get((sh.coll, i))
                    rep = self.log.version(sh.coll, i) if idx is not None else None
                    if rep is None or sh.inside(sh.spec.key(rep, idx)):
                        fresh[i] = e
                want = sh.window_at(self.log, self.log.newest)
                if jdump(fresh) != jdump(want):
                    self.report.fail("wrong-state", f"{context}: fresh read GET {url}, restricted to the window of {sh.describe()}, "
                                                    f"shows {short(list(fresh.values()), 400)}; the model says {short(list(want.values()), 400)}")
                if jdump(sh.copy) != jdump(fresh):
                    self.report.fail("query-copy", f"observer {obs.id}: {context}: the copy of {sh.describe()} at seq {sh.copy_cur} "
                                                   f"is {short(list(sh.copy.values()), 400)}; a fresh read GET {url} restricted to its window "
                                                   f"shows {short(list(fresh.values()), 400)}")
                    sh.copy = want
