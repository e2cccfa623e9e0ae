"""Event streams of the change feed."""

import json
import time

from ..model import advance_implied, delivered, jdump, receives, short
from ..queries import PW, got_key, query_expected, query_receives, same_list
from ..transport import StreamReader, sr_cursor


class StreamChecks:
    """A stream started with `since`, with Last-Event-ID or at the
    observer's cursor, around a few writes: one event per transaction that
    concerns the observer, each as a poll would answer it."""

    def do_stream(self, obs):
        if self.stream_budget <= 0:
            return self.do_poll(obs)
        self.stream_budget -= 1
        headers = {}
        r = self.rng.random()
        if r < 0.4 and obs.last_event_id is not None:
            start = obs.last_event_id
            headers["Last-Event-ID"] = str(start)
            path = f"/observers/{obs.id}/changes"
            how = f"Last-Event-ID {start}"
        elif r < 0.6 and obs.implicit is not None:
            start = obs.implicit
            path = f"/observers/{obs.id}/changes"
            how = f"the observer's cursor {start}"
        else:
            start = self.rng.choice(list(obs.cursors) + [0, obs.creation])
            path = f"/observers/{obs.id}/changes?since={start}"
            how = f"since={start}"
        k = self.pick()
        sr = StreamReader(self.instances[k].port, path, headers)
        sr.start()
        sr.opened.wait(5)
        self.stats["stream"] += 1
        if sr.status != 200 or "text/event-stream" not in (sr.content_type or ""):
            self.report.fail("stream", f"observer {obs.id}: stream GET {path} answered {sr.status} {sr.content_type} {sr.error}")
            sr.close()
            return
        for _ in range(self.rng.randint(1, 4)):
            self.do_write(self.writes.valid())
        advance_implied(obs, self.log)
        raw = [PW(e.json(), e.txn) for e in delivered(obs, self.log, start, self.log.newest)]
        raw += query_expected(obs, self.log, start, self.log.newest)
        raw.sort(key=lambda w: w.seq)
        groups = []
        for e in raw:
            if groups and groups[-1][0] == e.txn:
                groups[-1][1].append(e)
            else:
                groups.append((e.txn, [e]))
        t_wait = time.monotonic()
        deadline = t_wait + 3
        while time.monotonic() < deadline and len([e for e in sr.events if e["event"] != "gone"]) < len(groups):
            time.sleep(0.02)
        time.sleep(0.05)
        # what the stream did, for a failure report: did the server end it?
        ended_by_server = sr.ended
        waited = time.monotonic() - t_wait
        sr.close()
        desc = f"observer {obs.id} ({len(obs.reads)} reads): stream GET {path} ({how}) through {self.instances[k].name}"
        events = [e for e in sr.events if e["event"] != "gone"]
        if sr.events and sr.events[0]["retry"] is None:
            self.report.fail("stream", f"{desc}: the first event carries no retry:")
        parsed = []
        at = {}      # seq -> index of the event that holds it
        for i, ev in enumerate(events):
            try:
                data = json.loads(ev["data"])
                got = data["changes"]
            except (ValueError, KeyError, TypeError):
                self.report.fail("stream", f"{desc}: event {i} has data that is not a feed answer: {short(ev['data'])}")
                parsed.append(None)
                continue
            parsed.append(got)
            if isinstance(data.get("cursor"), int):
                # a stream answers the observer too: its cursors count for the kill -9 allowance
                obs.history.append((ev["at"], data["cursor"]))
                obs.prune_history()
            for c in got:
                if isinstance(c, dict):
                    at.setdefault(c.get("seq"), i)
            if ev["event"] != "changes":
                self.report.fail("stream", f"{desc}: event {i} is {ev['event']!r}, expected 'changes'")
            top = max((c.get("seq") for c in got if isinstance(c, dict) and isinstance(c.get("seq"), int)), default=None)
            if got and ev["id"] != str(top):
                self.report.fail("stream", f"{desc}: event {i} has id {ev['id']}, not the seq of its last change {top}")
        used = set()
        for tid, es in groups:
            want = [e.json() for e in es]
            i = next((at[x] for e in es for x in e.allowed if x in at), None)
            if i is None and all(e.optional for e in es):
                continue
            if i is None:
                last = events[-1] if events else None
                self.report.fail("missed", f"{desc}: no event holds the transaction {short(want, 300)} "
                                           f"({len(events)} events for {len(groups)} transactions in {waited:.2f} s, the last "
                                           f"id {last['id'] if last else None} at +{(last['at'] - t_wait) if last else 0:.2f} s; "
                                           f"{'ended by the server' if ended_by_server else 'still open'}; "
                                           f"server's cursor {sr_cursor(events)}; before: {list(obs.trail)})", n=len(es))
                continue
            used.add(i)
            if not same_list(self.log, parsed[i], es):
                gs = {c.get("seq") for c in parsed[i]}
                ws = {e.seq for e in es}
                cat = "wrong-value" if gs == ws else ("missed" if gs < ws else "stream")
                self.report.fail(cat, f"{desc}: event {i} holds {short(parsed[i], 300)}; expected one transaction {short(want, 300)}")
            else:
                # a query's remove is matched by its element's id; its old is compared apart
                wk = {e.key: e for e in es if e.key[0] == "q"}
                for c in parsed[i]:
                    if isinstance(c, dict) and "query" in c and got_key(self.log, c) in wk:
                        self.check_query_old(obs, desc, c, wk[got_key(self.log, c)])
        for i, got in enumerate(parsed):
            if i in used or got is None:
                continue
            les = [self.log.by_seq.get(c.get("seq")) if isinstance(c, dict) else None for c in got]
            if got and all(le is not None and le.seq <= start and (query_receives(obs, self.log, c) if "query" in c else receives(obs, le))
                           for c, le in zip(got, les)):
                self.report.fail("repeated", f"{desc}: event {i} repeats {short(got, 300)}, at or before its start {start}", n=len(got))
            else:
                self.report.fail("spurious", f"{desc}: event {i} holds {short(got, 300)}, which the observer should not receive there", n=max(1, len(got)))
        if events and events[-1]["id"] and events[-1]["id"].isdigit():
            obs.last_event_id = int(events[-1]["id"])
        elif not events and groups == []:
            obs.last_event_id = start
        obs.note(f"stream {path} {headers} got {len(events)} events")
        # The server learns that the client closed the stream only when a
        # write to it fails, and may count what it wrote meanwhile as
        # answered. A poll ends the stream (the observer's one consumer);
        # the cursor it then shows is adopted as the implicit cursor.
        obs.implicit = None
        time.sleep(0.3)
        self.poll(obs, obs.cursors[-1], 1000)
        time.sleep(0.1)
        obs.implicit = None
        self.do_inspect(obs)
