"""Long-polls: woken promptly by what they read, and only by that; displaced by a second poll."""

import time

from ..model import INF, REMOVABLE, advance_implied, shape_hit, short
from ..transport import Parked


class LongPollChecks:
    """A poll parked on a thread of its own around a write chosen to wake it
    or not: late and early wakes; displacement."""

    def start_parked(self, obs, since, timeout, k=None):
        if k is None:
            k = self.pick()
        q = [f"timeout={timeout}"]
        if since is not None:
            q.insert(0, f"since={since}")
        t = Parked(self.instances[k].port, f"/observers/{obs.id}/changes?" + "&".join(q), timeout)
        obs.note(f"parked GET {t.url} via {self.instances[k].name}")
        t.start()
        return t

    def would_wake(self, obs, plan):
        advance_implied(obs, self.log)
        log = self.log
        qcolls = {q.coll for q in obs.qshapes.values()}
        for path, op, elem in plan.touch:
            if path == "?":
                return None
            if any(path == c or path.startswith(c + "/") for c in qcolls):
                return None   # whether a write moves an element in or out of a query: left to the polls
            if path in obs.reads:
                return True
            if op == "remove" and elem in obs.elem_from:
                return True
            if op == "insert":
                # the new element lands after every one made so far
                places = [(path, len(log.order[path]), None, INF)] if path in REMOVABLE else []
            elif op == "remove":
                places = log.places_of(path, "remove", {"id": elem.rsplit("/", 1)[1]})
            else:
                places = log.places_of(path, "set")
            if shape_hit(obs, places, INF) is not None:
                return True
        return False

    def do_longpoll(self, obs):
        if self.longpoll_budget <= 0:
            return self.do_poll(obs)
        self.longpoll_budget -= 1
        # catch up first, so that nothing waits for the observer already
        if self.catch_up(obs) is None:
            return
        want_wake = self.rng.random() < 0.6
        plan = None
        for _ in range(40):
            p = self.writes.valid() if self.rng.random() < 0.9 else self.writes.refused()
            w = self.would_wake(obs, p) if p.touch or p.finish else False
            if w is None:
                continue
            if w == want_wake:
                # a quiet test is worth most with a write that commits
                # something (that the observer did not read)
                if not want_wake and not p.touch and self.rng.random() < 0.8:
                    continue
                plan = p
                break
        if plan is None:
            return
        # Plans were drawn from the model without changing it; only `plan` runs.
        T = 2.0 if want_wake else 1.0
        use_since = self.rng.random() < 0.3
        since = obs.implicit
        t = self.start_parked(obs, since if use_since else None, T)
        time.sleep(0.2)
        self.stats["longpoll-" + ("wake" if want_wake else "quiet")] += 1
        newest_before = self.log.newest
        self.do_write(plan)
        t_w = time.monotonic()
        t.join(T + 15)
        if t.status != 200:
            self.report.fail("wrong-status", f"observer {obs.id}: long-poll {t.url} answered {t.status} {t.error or short(t.answer)}")
            return
        desc = f"long-poll GET {t.url} around {plan.describe()}"
        got = t.answer.get("changes") or []
        if want_wake:
            if not got:
                self.report.fail("late-wake", f"observer {obs.id} reads {self.obs_reads_desc(obs, [x[0] for x in plan.touch if x[0] in obs.reads])}: "
                                              f"{desc} answered empty after {t.done_at - t.started_at:.2f} s; the write changed what it read")
            elif t.done_at - t_w > 1.0:
                self.report.fail("late-wake", f"observer {obs.id}: {desc} answered {t.done_at - t_w:.2f} s after the write was acknowledged")
        else:
            if t.done_at - t.started_at < T - 0.15:
                self.report.fail("early-wake", f"observer {obs.id} reads {self.obs_reads_desc(obs)}: {desc} answered "
                                               f"{short(t.answer)} after {t.done_at - t.started_at:.2f} s of its {T} s timeout; "
                                               f"the write changed nothing it read")
        cursor = self.check_answer(obs, desc, since, 100, False, t.answer, newest_before if got else self.log.newest, not use_since)
        if cursor is not None:
            obs.answered(cursor)

    def do_displace(self, obs):
        if self.longpoll_budget <= 0:
            return self.do_poll(obs)
        self.longpoll_budget -= 1
        if self.catch_up(obs) is None:
            return
        first = self.start_parked(obs, None if self.rng.random() < 0.5 else obs.implicit, 5)
        time.sleep(0.2)
        self.stats["displace"] += 1
        t0 = time.monotonic()
        second = self.start_parked(obs, obs.implicit, 0.5)
        first.join(10)
        second.join(10)
        if first.status != 200 or first.answer.get("changes") != [] or first.answer.get("cursor") != obs.implicit:
            self.report.fail("wrong-status", f"observer {obs.id}: a parked poll displaced by a second one answered {first.status} "
                                             f"{short(first.answer)}; expected empty with cursor {obs.implicit}")
        elif first.done_at - t0 > 1.0:
            self.report.fail("late-wake", f"observer {obs.id}: a parked poll displaced by a second one answered {first.done_at - t0:.2f} s later")
        if second.status != 200:
            self.report.fail("wrong-status", f"observer {obs.id}: the displacing poll answered {second.status} {short(second.answer)}")
            return
        cursor = self.check_answer(obs, f"displacing GET {second.url}", obs.implicit, 100, False, second.answer, self.log.newest, False)
        if cursor is not None:
            obs.answered(cursor)
