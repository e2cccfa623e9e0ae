"""Polls of the change feed, compared with what the log says each observer receives."""

from ..model import advance_implied, coalesce, delivered, jdump, receives, short


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
        for a, b in zip(seqs, seqs[1:]):
            if not (isinstance(a, int) and isinstance(b, int) and b > a):
                self.report.fail("out-of-order" if (isinstance(a, int) and isinstance(b, int) and b < a) else "repeated",
                                 f"observer {obs.id}: {desc} answered seqs {seqs[:40]} not strictly increasing")
                break
        if seqs and isinstance(seqs[-1], int) and cursor < seqs[-1]:
            self.report.fail("wrong-cursor", f"observer {obs.id}: {desc} answered cursor {cursor} below its last change {seqs[-1]}")
        if cursor > self.log.newest:
            self.report.fail("wrong-cursor", f"observer {obs.id}: {desc} answered cursor {cursor} past the newest seq {self.log.newest}")
            return cursor
        advance_implied(obs, self.log, cursor)
        raw = delivered(obs, self.log, since, cursor)
        expected = coalesce(raw) if co else [e.json() for e in raw]
        self.stats["delivered"] += len(expected)
        exp_by = {}
        for e in expected:
            exp_by[(e["seq"], e["path"]) if co else e["seq"]] = e
        matched = set()
        seen = set()
        for c in changes:
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
                self.report.fail("spurious", f"observer {obs.id} reads {self.obs_reads_desc(obs, [le.path] + ([le.elem] if le.elem else []), entry=le)}: "
                                             f"{desc} answered {short(c)} ({why})")
        for key, e in exp_by.items():
            if key not in matched:
                self.report.fail("missed", f"observer {obs.id} reads {self.obs_reads_desc(obs, [e['path']], entry=self.log.by_seq.get(e['seq']))}: {desc} "
                                           f"(since {since}, answered cursor {cursor}) lacks {short(e)}; before: {list(obs.trail)}")
        if raw and changes:
            last = self.log.by_seq.get(seqs[-1]) if isinstance(seqs[-1], int) else None
            if last is not None and self.log.txn_end.get(last.txn, 0) > cursor:
                self.report.fail("split-transaction", f"observer {obs.id}: {desc} ended at cursor {cursor} inside the transaction "
                                                      f"that runs to seq {self.log.txn_end[last.txn]}")
        if len(raw) < limit and cursor < newest_before:
            self.report.fail("wrong-cursor", f"observer {obs.id}: {desc} answered {len(raw)} change(s) (< limit {limit}) "
                                             f"but cursor {cursor} before the newest seq {newest_before}")
        return cursor

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
