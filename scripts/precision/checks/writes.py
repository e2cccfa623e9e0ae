"""Writes, and the change log they make."""

import time

from ..model import Entry, jdump, short
from harness import ConnectionLost


class WriteChecks:
    """Sends writes and learns what each committed from the all-seeing
    observer: exactly the changes the model predicts, each transaction at
    consecutive seqs, appended to the log; on a difference, the model adopts
    the server's state so that one fault is counted once."""

    def learn(self, txns, context):
        """Reads from the all-seeing observer what the last write committed and
        checks it against the model's prediction; appends it to the log."""
        want = [c for t in txns for c in t]
        got = []
        since = self.log.newest
        # One instance has committed before it answers; another instance may
        # learn of the commit a moment later, so in cluster mode a short
        # long-poll waits for the rest.
        deadline = time.monotonic() + (1.5 if len(self.instances) > 1 else 0)
        timeout = 0
        while True:
            status, _, ans = self.req("GET", f"/observers/{self.seer.id}/changes?since={since}&timeout={timeout}&limit=1000")
            if status != 200:
                self.report.fail("wrong-status", f"all-seeing observer's poll since={since} answered {status} {short(ans)}")
                break
            got += ans["changes"]
            since = max(since, ans["cursor"])
            if len(got) >= len(want) or time.monotonic() >= deadline:
                break
            timeout = 0.5
        ok = len(got) == len(want) and all(
            g.get("path") == w[0] and g.get("op") == w[1] and jdump(g.get("old")) == jdump(w[2]) and jdump(g.get("new")) == jdump(w[3])
            for g, w in zip(got, want))
        seqs = [g.get("seq") for g in got]
        if ok:
            k = 0
            for t in txns:
                tid = self.log.new_txn()
                first = None
                for (path, op, old, new) in t:
                    s = got[k]["seq"]
                    if first is not None and s != prev + 1:
                        self.report.fail("split-transaction", f"{context}: the changes of one transaction have seqs {[g['seq'] for g in got]}, not consecutive")
                    first = s if first is None else first
                    prev = s
                    self.log.append(Entry(s, path, op, old, new, tid))
                    k += 1
            return
        # Something differs: the log is checked against a second source, the
        # newest seq the server reports, to tell a lost write from a change the
        # all-seeing observer was not told.
        status, _, hz = self.req("GET", "/healthz")
        newest = hz.get("seq", -1) if status == 200 and isinstance(hz, dict) else -1
        before = self.log.newest
        committed = newest - before
        wl = [f"{w[1]} {w[0]} {short(w[2], 80)} -> {short(w[3], 80)}" for w in want]
        gl = [f"#{g.get('seq')} {g.get('op')} {g.get('path')} {short(g.get('old'), 80)} -> {short(g.get('new'), 80)}" for g in got]
        if committed == len(want):
            missing = [w for w in want if not any(g.get("path") == w[0] and g.get("op") == w[1] and jdump(g.get("new")) == jdump(w[3]) for g in got)]
            cat = "missed" if len(got) < len(want) else "wrong-value"
            self.report.fail(cat, f"all-seeing observer {self.seer.id} (reads every resource): after {context} the server committed "
                                  f"{committed} change(s) as predicted but the observer was told {gl}; predicted {wl}",
                             n=max(1, len(missing)) if cat == "missed" else 1)
            k = 0
            for t in txns:
                tid = self.log.new_txn()
                for (path, op, old, new) in t:
                    k += 1
                    self.log.append(Entry(before + k, path, op, old, new, tid))
        else:
            cat = "lost-write" if committed < len(want) else "spurious"
            self.report.fail(cat, f"after {context} the server's newest seq moved {before} -> {newest} ({committed} change(s)); "
                                  f"predicted {len(want)}: {wl}; the all-seeing observer was told {gl}")
            tid = self.log.new_txn()
            for g in got:
                if isinstance(g.get("seq"), int) and g["seq"] > self.log.newest:
                    self.log.append(Entry(g["seq"], g.get("path"), g.get("op"), g.get("old"), g.get("new"), tid))
            self.resync(f"after {context}")

    def resync(self, why):
        """Adopts the server's state after a failure, so one fault is counted once."""
        bodies = {}
        for url in ("/truck", "/account", "/grid", "/posts", "/jobs", "/games"):
            status, _, b = self.req("GET", url)
            if status != 200:
                return
            bodies[url] = b
        self.st.load(bodies["/truck"], bodies["/account"], bodies["/grid"], bodies["/posts"], bodies["/jobs"], bodies["/games"])
        self.log.seed(self.st)
        print(f"note: model state re-read from the server {why}", flush=True)

    def do_write(self, plan):
        self.stats["write:" + plan.name] += 1
        try:
            status, h, body = self.req(plan.method, plan.path, body=plan.body, raw=plan.raw, headers=plan.headers)
        except ConnectionLost:
            return None
        txns = []
        if status not in plan.status:
            self.report.fail("wrong-status", f"{plan.describe()} answered {status} {short(body)}; expected {plan.status}")
            if 200 <= status < 300 or any(200 <= s < 300 for s in plan.status):
                self.learn([], plan.describe())
                self.resync(f"after {plan.describe()}")
                return status
        elif 200 <= status < 300:
            txns = plan.finish(status, body)
        else:
            if not (isinstance(body, dict) and body.get("status") == status and "application/problem+json" in h.get("content-type", "")):
                self.report.fail("wrong-status", f"{plan.describe()} answered {status} without a problem+json body: {short(body)}")
        self.learn(txns, plan.describe())
        return status
