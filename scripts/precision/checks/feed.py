"""Polls of the change feed, compared with what the log says each observer receives."""

from ..model import advance_implied, coalesce, delivered, jdump, receives, short
from ..queries import apply_change, coalesce_query, got_key, norm_query, query_expected, query_receives, settled


class FeedChecks:
    """Polls of every kind (implicit, explicit, replays, limit, coalesce,
    Prefer: wait), each answer compared with the model: missed, spurious,
    repeated, wrong-value, out-of-order, split transactions, the cursor."""

    def check_answer(self, obs, desc, since, limit, co, ans, newest_before, implicit):
        """Compares one poll answer with the model; returns the answer's cursor."""
        changes = ans.get("changes")
        cursor = ans.get("cursor")
        if not isinstance(changes, list) or not isinstance(cursor, int):
            self.report.fail("wrong-status", f"{desc}: malformed answer {short(ans)}")
            return None
        seqs = [c.get("seq") for c in changes]
        for k, (a, b) in enumerate(zip(seqs, seqs[1:])):
            ok = isinstance(a, int) and isinstance(b, int) and b > a
            # a query change may share its seq with a plain change or another query's
            if isinstance(a, int) and a == b and ("query" in changes[k] or "query" in changes[k + 1]):
                ok = True
            if not ok:
                self.report.fail("out-of-order" if (isinstance(a, int) and isinstance(b, int) and b < a) else "repeated",
                                 f"observer {obs.id}: {desc} answered seqs {seqs[:40]} not strictly increasing")
                break
        ints = [x for x in seqs if isinstance(x, int)]
        if ints and cursor < max(ints):
            self.report.fail("wrong-cursor", f"observer {obs.id}: {desc} answered cursor {cursor} below its last change {max(ints)}")
        if cursor > self.log.newest:
            self.report.fail("wrong-cursor", f"observer {obs.id}: {desc} answered cursor {cursor} past the newest seq {self.log.newest}")
            return cursor
        advance_implied(obs, self.log, cursor)
        raw = delivered(obs, self.log, since, cursor)
        expected = coalesce(raw) if co else [e.json() for e in raw]
        qw = query_expected(obs, self.log, since, cursor)
        counted = len(raw) + len(qw)   # `limit` counts changes before they are folded
        if co:
            qw = coalesce_query(qw)
        self.stats["delivered"] += len(expected) + len(qw)
        if qw:
            self.stats["query-delivered"] += len(qw)
        exp_by = {}
        for e in expected:
            exp_by[(e["seq"], e["path"]) if co else e["seq"]] = e
        q_by = {w.key: w for w in qw}
        q_loose = {}
        for w in qw:
            q_loose.setdefault(w.loose, []).append(w)
        routes = {}      # id(change) -> the QC it matched: which shapes' copies it goes to
        matched = set()
        seen = set()
        for c in changes:
            if isinstance(c, dict) and "query" in c:
                self.match_query(obs, desc, since, c, q_by, q_loose, matched, seen, routes)
                continue
            s = c.get("seq")
            key = (s, c.get("path")) if co else s
            if key in seen:
                self.report.fail("repeated", f"observer {obs.id}: {desc} answered {short(c)} twice")
                continue
            seen.add(key)
            e = exp_by.get(key)
            if e is not None:
                matched.add(key)
                if jdump({k: c.get(k) for k in ("path", "op", "old", "new")}) != jdump({k: e.get(k) for k in ("path", "op", "old", "new")}):
                    self.report.fail("wrong-value", f"observer {obs.id}: {desc} answered {short(c)}; the log has {short(e)}")
                continue
            le = self.log.by_seq.get(s)
            if le is not None and isinstance(s, int) and s <= since and receives(obs, le):
                self.report.fail("repeated", f"observer {obs.id} reads {self.obs_reads_desc(obs, [le.path])}: {desc} "
                                             f"(since {since}{', implicit' if implicit else ''}) answered again {short(c)}, which is at or before {since}; "
                                             f"before: {list(obs.trail)}")
            elif le is None:
                self.report.fail("spurious", f"observer {obs.id}: {desc} answered {short(c)}, a seq no write committed")
            else:
                why = "forgotten or never read" if not receives(obs, le) else "outside (since, cursor]"
                if obs.qshapes:
                    why += "; without a query member it is a plain read's; query shapes " + str([q.describe() for q in obs.qshapes.values()][:4])
                self.report.fail("spurious", f"observer {obs.id} reads {self.obs_reads_desc(obs, [le.path] + ([le.elem] if le.elem else []), entry=le)}: "
                                             f"{desc} answered {short(c)} ({why})")
        for key, e in exp_by.items():
            if key not in matched:
                self.report.fail("missed", f"observer {obs.id} reads {self.obs_reads_desc(obs, [e['path']], entry=self.log.by_seq.get(e['seq']))}: {desc} "
                                           f"(since {since}, answered cursor {cursor}) lacks {short(e)}; before: {list(obs.trail)}")
        for w in qw:
            if w.key not in matched and not w.optional:
                shs = [obs.qshapes[k].describe() for k in w.shapes if k in obs.qshapes]
                self.report.fail("missed", f"observer {obs.id} (query {shs[:3]}): {desc} (since {since}, answered cursor {cursor}) "
                                           f"lacks {short(w.d)} (seq one of {list(w.allowed)}); before: {list(obs.trail)}")
        if (raw or qw) and ints:
            last = self.log.by_seq.get(max(ints))
            if last is not None and self.log.txn_end.get(last.txn, 0) > cursor:
                self.report.fail("split-transaction", f"observer {obs.id}: {desc} ended at cursor {cursor} inside the transaction "
                                                      f"that runs to seq {self.log.txn_end[last.txn]}")
        if counted < limit and cursor < newest_before:
            self.report.fail("wrong-cursor", f"observer {obs.id}: {desc} answered {counted} change(s) (< limit {limit}) "
                                             f"but cursor {cursor} before the newest seq {newest_before}")
        if obs.qshapes:
            self.check_noop(obs, desc, changes)
            self.apply_copies(obs, desc, since, cursor, changes, routes, co)
        return cursor

    def check_noop(self, obs, desc, changes):
        """The contract: nothing that leaves the copy unchanged. An insert
        of an element and its remove said to one query in one transaction
        leave it as it was (and the insert shows the element as no read
        could: half-way through a write): query-noop. An element that moves
        from one page of a query to another at one seq must be said removed
        before it is inserted, else a client keeping one copy per query
        loses it: query-order. Counted once per observer, transaction,
        query and element, however often replayed."""
        ins = {}
        seen = self.__dict__.setdefault("noops", set())
        for c in changes:
            if not isinstance(c, dict) or "query" not in c or c.get("op") not in ("insert", "remove"):
                continue
            le = self.log.by_seq.get(c.get("seq"))
            v = c.get("new") if c["op"] == "insert" else c.get("old")
            if le is None or not isinstance(v, dict):
                continue
            k = (obs.id, le.txn, norm_query(c["query"]), v.get("id"))
            if c["op"] == "insert":
                ins[k] = c
            elif k in ins and k not in seen:
                seen.add(k)
                if ins[k].get("seq") == c.get("seq"):
                    # two windows of one query (pages): the element leaves one and enters the other
                    self.report.fail("query-order", f"observer {obs.id}: {desc} answered {short(ins[k], 300)} before {short(c, 300)}, "
                                                    f"at one seq for one query: a copy of the query (its pages together) that applies "
                                                    f"them in order loses the element; the remove must come first")
                    continue
                self.report.fail("query-noop", f"observer {obs.id}: {desc} answered, in one transaction, {short(ins[k], 300)} and then "
                                               f"{short(c, 300)}: together they leave the copy unchanged; the transaction: "
                                               f"{[short(x.json(), 160) for x in self.log.txn_entries[le.txn]][:4]}")

    def match_query(self, obs, desc, since, c, q_by, q_loose, matched, seen, routes):
        """One delivered change with a `query` member, against the query
        changes the model expects (any of the allowed seqs)."""
        s = c.get("seq")
        le = self.log.by_seq.get(s) if isinstance(s, int) else None
        if le is None:
            self.report.fail("spurious", f"observer {obs.id}: {desc} answered {short(c)}, a seq no write committed")
            return
        key = got_key(self.log, c)
        if key in seen:
            self.report.fail("repeated", f"observer {obs.id}: {desc} answered {short(c)} twice")
            return
        seen.add(key)
        w = q_by.get(key)
        if w is not None:
            matched.add(key)
            routes[id(c)] = w
            self.check_query_text(desc, c, w)
            self.check_query_old(obs, desc, c, w)
            if s not in w.allowed:
                self.report.fail("wrong-value", f"observer {obs.id}: {desc} answered {short(c)} at seq {s}; the model has it at "
                                                f"{'one of ' if len(w.allowed) > 1 else ''}{list(w.allowed)}")
            return
        near = [x for x in q_loose.get(key[:5], ()) if x.key not in matched]
        if near:
            matched.add(near[0].key)
            routes[id(c)] = near[0]
            self.report.fail("wrong-value", f"observer {obs.id}: {desc} answered {short(c)}; the model has {short(near[0].d)}")
            return
        shs = [q.describe() for q in obs.qshapes.values() if q.coll == (le.coll or "") or c.get("path", "").startswith(q.coll + "/")]
        if s <= since and query_receives(obs, self.log, c):
            self.report.fail("repeated", f"observer {obs.id}: {desc} (since {since}) answered again {short(c)}, at or before {since}; "
                                         f"before: {list(obs.trail)}")
        else:
            before = self.log.txn_entries[le.txn]
            self.report.fail("spurious", f"observer {obs.id} (query shapes {shs[:4]}): {desc} (since {since}) answered {short(c)}; "
                                         f"the transaction: {[short(x.json(), 160) for x in before][:4]}; before: {list(obs.trail)}")

    def check_query_text(self, desc, c, w):
        """The query's text must be the canonical one (counted once per pair)."""
        got, want = c.get("query"), w.d["query"]
        if got != want:
            seen = self.__dict__.setdefault("query_texts", set())
            if (want, got) not in seen:
                seen.add((want, got))
                self.report.fail("query-text", f"{desc} answered {short(c)}: its query is {got!r}; the canonical text "
                                               f"(conditions by field name, values written canonically) is {want!r}")

    def check_query_old(self, obs, desc, c, w):
        """A remove's `old` must be the element as it was before the write
        (its fields shown), the element the reader's copy held (counted
        once per seq and query)."""
        if c.get("op") != "remove" or jdump(c.get("old")) == jdump(w.d.get("old")):
            return
        seen = self.__dict__.setdefault("query_olds", set())
        k = (c.get("seq"), w.d["query"])
        if k in seen:
            return
        seen.add(k)
        le = self.log.by_seq.get(c.get("seq"))
        txn = [short(x.json(), 160) for x in self.log.txn_entries[le.txn]][:6] if le is not None else []
        self.report.fail("query-old", f"observer {obs.id}: {desc} answered {short(c, 600)}; the element as it was before the write "
                                      f"is {short(w.d.get('old'), 600)}; the write: {txn}")

    def apply_copies(self, obs, desc, since, cursor, changes, routes, co=False):
        """Each query shape's copy, with the changes delivered to it applied,
        must equal a fresh read of its query over its window at `cursor`."""
        for sh in list(obs.qshapes.values()):
            if sh.copy_cur is None or sh.copy_cur >= cursor:
                continue
            if since > sh.copy_cur or (co and since != sh.copy_cur):
                # a poll past where the copy stands (or a coalesced one from
                # before it, whose folded sets cannot be split): read afresh
                sh.copy = sh.window_at(self.log, cursor)
                sh.copy_cur = cursor
                self.stats["query-copy-reread"] += 1
                continue
            n = 0
            applied = []
            before = dict(sh.copy)
            for c in changes:
                if not isinstance(c, dict) or "query" not in c or norm_query(c["query"]) != sh.nq \
                        or not isinstance(c.get("seq"), int) or c["seq"] <= sh.copy_cur:
                    continue
                w = routes.get(id(c))
                if w is None or sh.key in w.shapes:
                    apply_change(sh, c)
                    n += 1
                    applied.append(c)
            cur0 = sh.copy_cur
            sh.copy_cur = cursor
            want = sh.window_at(self.log, cursor)
            self.stats["query-copy-checked"] += 1
            if jdump(sh.copy) != jdump(want):
                gone = sorted(set(want) - set(sh.copy))
                extra = sorted(set(sh.copy) - set(want))
                diff = [i for i in want if i in sh.copy and jdump(want[i]) != jdump(sh.copy[i])]
                self.report.fail("query-copy", f"observer {obs.id}: {sh.describe()}: after {desc} ({n} change(s) applied) the copy "
                                               f"lacks {gone[:4]}, has {extra[:4]} too, differs in "
                                               f"{[(short(sh.copy[i], 120), short(want[i], 120)) for i in diff[:3]]}; "
                                               f"a fresh read at {settled(self.log, cursor)} shows {short(list(want.values()), 400)}; the copy was "
                                               f"{short(list(before.values()), 300)} at {cur0}; applied {short(applied, 400)}")
                sh.copy = want

    def poll(self, obs, since=None, limit=None, co=False, timeout=0, k=None, prefer=False, check=True):
        q = []
        if since is not None:
            q.append(f"since={since}")
        if prefer:
            headers = {"Prefer": f"wait={timeout}"}
        else:
            headers = {}
            q.append(f"timeout={timeout}")
        if limit is not None:
            q.append(f"limit={limit}")
        if co:
            q.append("coalesce=true")
        url = f"/observers/{obs.id}/changes" + ("?" + "&".join(q) if q else "")
        eff_since = since if since is not None else obs.implicit
        newest_before = self.log.newest
        self.stats["poll"] += 1
        status, h, ans = self.req("GET", url, headers=headers, k=k, timeout=timeout + 10)
        desc = f"GET {url}" + (f" -H 'Prefer: wait={timeout}'" if prefer else "")
        if check:
            obs.note(f"{desc} via {self.instances[k].name if k is not None else '?'}")
        if status != 200:
            self.report.fail("wrong-status", f"observer {obs.id}: {desc} answered {status} {short(ans)}")
            return None
        if prefer and h.get("preference-applied") != f"wait={timeout}":
            self.report.fail("wrong-status", f"{desc}: Preference-Applied is {h.get('preference-applied')!r}")
        cursor = self.check_answer(obs, desc, eff_since, limit or 100, co, ans, newest_before, since is None) if check else ans.get("cursor")
        if cursor is not None:
            obs.answered(cursor)
        return ans

    def catch_up(self, obs):
        """Polls the observer (explicit `since`, limit 1000) until its cursor
        is the newest seq, so that a long-poll parked next has nothing to
        answer at once. One page is not enough: an observer that reads much
        and has not polled for a while has more than 1000 changes waiting,
        and the page then ends before the newest seq (as it should)."""
        since = obs.implicit if obs.implicit is not None else obs.cursors[-1]
        newest = self.log.newest
        while True:
            ans = self.poll(obs, since, 1000)
            if ans is None:
                return None
            cursor = ans.get("cursor")
            if not isinstance(cursor, int) or cursor >= newest or cursor <= since:
                return ans
            since = cursor

    def do_poll(self, obs):
        r = self.rng.random()
        limit = self.rng.choice([None, None, 1, 2, 3, 5, 1000]) if self.rng.random() < 0.35 else None
        co = self.rng.random() < 0.15
        if r < 0.5 and obs.implicit is not None:
            self.poll(obs, None, limit, co, prefer=self.rng.random() < 0.1)
        elif r < 0.75:
            since = obs.implicit if obs.implicit is not None else obs.cursors[-1]
            self.poll(obs, since, limit, co)
        else:
            choices = list(obs.cursors) + [0, obs.creation, self.rng.randint(0, self.log.newest)]
            self.stats["replay"] += 1
            self.poll(obs, self.rng.choice(choices), limit, co)

    def do_bad_poll(self, obs):
        base = f"/observers/{obs.id}/changes"
        q = self.rng.choice([f"since={self.log.newest + self.rng.randint(1, 1000)}", "since=-1", "since=abc", "timeout=90",
                             "timeout=-1", "limit=0", "limit=1001", "coalesce=1"])
        status, _, body = self.req("GET", f"{base}?{q}&timeout=0" if "timeout" not in q else f"{base}?{q}")
        if status != 400:
            self.report.fail("wrong-status", f"GET {base}?{q} answered {status} {short(body)}; expected 400")
            if status == 200 and isinstance(body, dict):
                obs.implicit = None
