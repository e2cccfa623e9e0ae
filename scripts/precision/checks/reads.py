"""Reads of every resource, whole and in pages."""

import bisect

from ..model import jdump, short
from ..operations import COLLS, PageRead, parse_links, select


class ReadChecks:
    """Reads as the model predicts them: bodies, the Observation-Cursor,
    Links to next pages (followed), conditional reads; what each read makes
    its observer read."""

    def do_read(self, obs):
        url, body, paths, pages = self.reads.choose()
        nxt = self.read_one(obs, url, body, paths, pages)
        # Follow the Link: the next page, as the Link names it (its cursor
        # is the position of the element that ended the page).
        hops = 0
        while nxt is not None and hops < 4 and self.rng.random() < 0.55:
            hops += 1
            pr, target, link_pos = nxt
            params = parse_links(f"<{target}>; rel=\"next\"")[None][1]
            fields = params["fields"].split(",") if "fields" in params else None
            after = (link_pos, pr.last_idx)
            npr = PageRead(self.reads, pr.coll, fields, pr.limit, after, "desc" if pr.desc else None)
            name = COLLS[pr.coll][0]
            b = {name: [select(self.reads.rep(pr.coll, i), fields) for i in npr.shown]}
            self.stats["page-followed"] += 1
            nxt = self.read_one(obs if self.rng.random() < 0.9 else None, target, b, [], [npr])

    def check_links(self, desc, h, pages):
        """Checks the Link header against the pages the model predicts;
        learns the positions it gives. Returns {PageRead: (target, position)}."""
        links = parse_links(h.get("link"))
        out = {}
        titles = set()
        for pr in pages:
            title = pr.prefix[:-1] if pr.prefix else None
            titles.add(title)
            got = links.get(title)
            if not pr.more:
                if got is not None:
                    self.report.fail("wrong-state", f"{desc}: Link {got[2]!r} ({pr.describe()}), but no more elements follow the "
                                                    f"{len(pr.shown)} shown in the model")
                continue
            if got is None:
                self.report.fail("wrong-state", f"{desc}: no Link rel=\"next\"{' title=' + title if title else ''} "
                                                f"({pr.describe()}), but more elements follow the {len(pr.shown)} shown in the model")
                continue
            path, q, target = got
            a = q.get("after", "")
            want = {"limit": str(pr.limit)}
            if pr.desc:
                want["order"] = "desc"
            ok = path == pr.coll and a.isdigit() and all(q.get(k) == v for k, v in want.items()) \
                and set(q) <= {"limit", "order", "after", "fields"} and ("order" not in q or pr.desc)
            if pr.prefix is None and pr.fields is not None:
                ok = ok and set((q.get("fields") or "").split(",")) == set(pr.fields)
            elif "fields" in q:
                ok = False
            if not ok:
                self.report.fail("wrong-state", f"{desc}: Link {target!r}; expected the next page of {pr.describe()}")
                continue
            pos = int(a)
            self.learn_position(desc, pr.coll, pr.shown[-1], pos)
            out[pr] = (target, pos)
        for t in links:
            if t not in titles:
                self.report.fail("wrong-state", f"{desc}: Link {links[t][2]!r}, which names no page the read asked for")
        return out

    def learn_position(self, desc, coll, i, pos):
        """Adds a cursor to the pool; positions must grow with creation order."""
        k = (coll, i)
        known = self.positions.get(k)
        if known is not None:
            if known != pos:
                self.report.fail("wrong-state", f"{desc}: the Link gives position {pos} to {coll}/{i}, earlier {known}")
            return
        n = self.log.idx[k]
        lst = self.pos_sorted[coll]
        j = bisect.bisect_left(lst, (n, pos))
        if (j > 0 and lst[j - 1][1] >= pos) or (j < len(lst) and lst[j][1] <= pos):
            self.report.fail("wrong-state", f"{desc}: the Link gives position {pos} to {coll}/{i} (made #{n}), out of creation "
                                            f"order with {lst[max(0, j - 1):j + 1]}")
        lst.insert(j, (n, pos))
        self.positions[k] = pos
        self.pool[coll][pos] = i

    def read_one(self, obs, url, body, paths, pages):
        method = "GET"
        headers = {}
        full_url = url
        if obs is not None:
            if self.rng.random() < 0.7:
                headers["Observer"] = obs.id
            else:
                full_url = url + ("&" if "?" in url else "?") + "observer=" + obs.id
        r = self.rng.random()
        conditional = None
        if r < 0.07:
            method = "HEAD"
        elif r < 0.2 and url in self.etags:
            tag, seen = self.etags[url]
            headers["If-None-Match"] = tag
            conditional = seen == jdump(body)
        self.stats["read"] += 1
        if any(pr.paged for pr in pages):
            self.stats["page"] += 1
        status, h, got = self.req(method, full_url, headers=headers)
        desc = f"{method} {full_url}" + "".join(f" -H '{k}: {v}'" for k, v in headers.items())
        if obs is not None:
            obs.note(desc)
        want_status = 304 if conditional else 200
        if status != want_status:
            self.report.fail("wrong-status", f"{desc} answered {status} {short(got)}; expected {want_status}")
            return None
        cur = h.get("observation-cursor")
        if cur is None or not cur.isdigit() or int(cur) != self.log.newest:
            self.report.fail("wrong-cursor", f"{desc}: Observation-Cursor {cur}, but the newest acknowledged seq is {self.log.newest}")
            return None
        cur = int(cur)
        if method == "GET" and status == 200:
            if jdump(got) != jdump(body):
                self.report.fail("wrong-state", f"{desc} answered {short(got, 500)}; the model says {short(body, 500)}")
                self.resync("after a read differed")
                return None
            if h.get("etag"):
                self.etags[url] = (h["etag"], jdump(body))
        links = self.check_links(desc, h, pages) if method == "GET" else {}
        if obs is not None and method == "GET":
            for p in paths:
                obs.track(p, cur)
            for pr in pages:
                link = links.get(pr)
                obs.track_shape(pr.shape(cur, link[1] if link else None))
                self.stats["shape"] += 1
            if cur > 0:
                obs.cursors.append(cur)
        for pr in pages:
            if pr in links:
                return pr, links[pr][0], links[pr][1]
        return None

    def do_read_unknown_observer(self):
        url = self.reads.choose()[0]
        oid = self.rng.choice(self.deleted) if self.deleted and self.rng.random() < 0.5 else "00000000-0000-7000-8000-000000000000"
        status, _, body = self.req(self.rng.choice(["GET", "HEAD"]), url, headers={"Observer": oid})
        if status != 404:
            self.report.fail("wrong-status", f"GET {url} -H 'Observer: {oid}' (no such observer) answered {status} {short(body)}")

    def do_bad_fields(self):
        url = self.rng.choice(["/truck?fields=name,colour", "/truck/donuts?fields=flavour", "/grid?fields=color",
                               "/posts?fields=width", "/jobs?fields=name", "/games?fields=score", "/posts/staggered?columns=13",
                               "/posts/staggered?columns=0", "/posts/staggered?layout=masonry"])
        if self.rng.random() < 0.6:
            # pages: limit 1…1000, after a whole number ≥ 0, order asc or desc
            bad = self.rng.choice(["limit=0", "limit=1001", "limit=x", "limit=-3", "limit=", "after=-1", "after=x", "after=1.5",
                                   "order=up", "order=DESC", "order="])
            base = self.rng.choice(list(COLLS) + ["/truck"])
            if base == "/truck":
                bad = self.rng.choice(["orders.", "donuts."]) + bad
            url = base + "?" + bad + ("" if base == "/truck" or bad.startswith("limit") else self.rng.choice(["", "&limit=2", "&fields=id"]))
        status, _, body = self.req("GET", url)
        if status != 400:
            self.report.fail("wrong-status", f"GET {url} answered {status} {short(body)}; expected 400")
