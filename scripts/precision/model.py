"""The model: the state every seed system should hold, the change log
learned from the all-seeing observer, and each observer's reads and shapes;
from them, which changes a poll must deliver."""

import bisect
import collections
import json
import threading
import time

INF = float("inf")

# Collections whose elements can be removed: a remove reaches readers of
# any property of the element (path prefix collection/id/).
REMOVABLE = ("/truck/donuts", "/truck/orders", "/posts", "/jobs", "/games")
DONUT_FIELDS = ("name", "dough", "glaze", "topping")
DOT_FIELDS = ("isTapAnimated", "isRandomAnimated")
CARD_FIELDS = ("content", "isFaceUp", "isMatched")


def jdump(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def short(value, limit=300):
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "…"


def elem_prefix(path):
    """The element a property path belongs to, for removable collections."""
    for c in REMOVABLE:
        if path.startswith(c + "/"):
            rest = path[len(c) + 1:]
            return c + "/" + rest.split("/", 1)[0]
    return None


class State:
    """The state of every seed system, as the server should hold it."""

    def __init__(self):
        self.truck_name = None
        self.donuts = {}      # id -> {name, dough, glaze, topping}
        self.orders = {}      # id -> {donutId, quantity}
        self.user = None
        self.rows = []        # list of lists of dot ids
        self.dots = {}        # id -> {isTapAnimated, isRandomAnimated}
        self.posts = {}       # id -> {imageURL, height}
        self.jobs = {}        # id -> {current, total}
        self.games = {}       # id -> {"cards": [{id, content, isFaceUp, isMatched}], "isOver"}

    # representations, as the server answers them
    def donut(self, i):
        d = self.donuts[i]
        return {"id": i, "name": d["name"], "dough": d["dough"], "glaze": d["glaze"], "topping": d["topping"]}

    def order(self, i):
        o = self.orders[i]
        return {"id": i, "donutId": o["donutId"], "quantity": o["quantity"]}

    def dot(self, i):
        d = self.dots[i]
        return {"id": i, "isTapAnimated": d["isTapAnimated"], "isRandomAnimated": d["isRandomAnimated"]}

    def post(self, i):
        p = self.posts[i]
        return {"id": i, "imageURL": p["imageURL"], "height": p["height"]}

    def job(self, i):
        j = self.jobs[i]
        return {"id": i, "progress": {"current": j["current"], "total": j["total"]},
                "isComplete": j["current"] == j["total"]}

    def game(self, i):
        g = self.games[i]
        return {"id": i, "cards": [dict(c) for c in g["cards"]], "isOver": g["isOver"]}

    def truck(self):
        return {"name": self.truck_name, "donuts": [self.donut(i) for i in self.donuts],
                "orders": [self.order(i) for i in self.orders], "orderCount": len(self.orders)}

    def grid(self):
        return {"rows": [[self.dot(i) for i in row] for row in self.rows]}

    def dot_position(self, dot_id):
        for r, row in enumerate(self.rows):
            if dot_id in row:
                return r, row.index(dot_id)
        return None

    def load(self, truck, account, grid, posts, jobs, games):
        self.truck_name = truck["name"]
        self.donuts = {d["id"]: {k: d[k] for k in DONUT_FIELDS} for d in truck["donuts"]}
        self.orders = {o["id"]: {"donutId": o["donutId"], "quantity": o["quantity"]} for o in truck["orders"]}
        self.user = account["userName"]
        self.rows = [[d["id"] for d in row] for row in grid["rows"]]
        self.dots = {d["id"]: {k: d[k] for k in DOT_FIELDS} for row in grid["rows"] for d in row}
        self.posts = {p["id"]: {"imageURL": p["imageURL"], "height": p["height"]} for p in posts["posts"]}
        self.jobs = {j["id"]: {"current": j["progress"]["current"], "total": j["progress"]["total"]} for j in jobs["jobs"]}
        self.games = {g["id"]: {"cards": [dict(c) for c in g["cards"]], "isOver": g["isOver"]} for g in games["games"]}


def implied_paths(collection, new):
    """Paths an insert makes read for the observers that receive it."""
    if collection == "/truck/donuts":
        return [f"/truck/donuts/{new['id']}/{f}" for f in DONUT_FIELDS]
    if collection == "/truck/orders":
        return [f"/truck/orders/{new['id']}/donutId", f"/truck/orders/{new['id']}/quantity"]
    if collection == "/grid/rows":
        dots = new["dots"] if "dots" in new else [new["dot"]]
        return [f"/grid/dots/{d['id']}/{f}" for d in dots for f in DOT_FIELDS]
    if collection == "/posts":
        return [f"/posts/{new['id']}/imageURL", f"/posts/{new['id']}/height"]
    if collection == "/jobs":
        return [f"/jobs/{new['id']}/progress", f"/jobs/{new['id']}/isComplete"]
    if collection == "/games":
        g = new["id"]
        out = [f"/games/{g}/cards"]
        for c in new["cards"]:
            out += [f"/games/{g}/cards/{c['id']}/{f}" for f in CARD_FIELDS]
        out.append(f"/games/{g}/isOver")
        return out
    return []


class Entry:
    __slots__ = ("seq", "path", "op", "old", "new", "txn", "elem", "implied", "coll", "places")

    def __init__(self, seq, path, op, old, new, txn):
        self.seq, self.path, self.op, self.old, self.new, self.txn = seq, path, op, old, new, txn
        self.elem = None
        self.implied = None
        self.coll = None
        self.places = ()   # where it lands for shapes: (collection, creation index, field or None, element's insert seq)
        if op == "insert":
            self.coll = path
            self.implied = implied_paths(path, new)
        elif op == "remove":
            self.coll = path
            if path in REMOVABLE and isinstance(old, dict) and "id" in old:
                self.elem = f"{path}/{old['id']}"

    def json(self):
        d = {"seq": self.seq, "path": self.path, "op": self.op}
        if self.op in ("set", "remove"):
            d["old"] = self.old
        if self.op in ("set", "insert"):
            d["new"] = self.new
        return d

    def same(self, c):
        return (c.get("path") == self.path and c.get("op") == self.op
                and jdump(c.get("old")) == jdump(self.old if self.op in ("set", "remove") else None)
                and jdump(c.get("new")) == jdump(self.new if self.op in ("set", "insert") else None))


class Log:
    """Every committed change, in seq order, with its transaction."""

    def __init__(self):
        self.entries = []
        self.seqs = []
        self.by_seq = {}
        self.txn_end = {}       # txn id -> last seq
        self.txn_entries = collections.defaultdict(list)
        self.by_path = collections.defaultdict(list)   # path -> [entry] (collection path for insert/remove)
        self.removes_by_elem = collections.defaultdict(list)
        self.inserts = []       # entries with op insert, in order
        self.next_txn = 0
        self.newest = 0
        # Creation order, all a shape's window needs: every element of every
        # paged collection (cards of a game too) by the order it was made in;
        # a deleted element keeps its place. Positions are the server's.
        self.order = collections.defaultdict(list)   # collection -> [id]
        self.idx = {}                                 # (collection, id) -> creation index
        self.made = {}                                # (collection, id) -> insert seq (0: seed)
        self.by_coll = collections.defaultdict(list)  # collection -> [entry with a place in it]
        # Every version of every element of the top-level collections, as the
        # server answers it (None once removed): what a query read of any
        # seq sees (precision/queries.py).
        self.versions = {}                            # (collection, id) -> ([seq], [representation or None])
        self.flipflops = []                           # (query, insert, remove) said in one transaction (queries.py)

    def register(self, coll, i, seq):
        if (coll, i) not in self.idx:
            self.idx[(coll, i)] = len(self.order[coll])
            self.order[coll].append(i)
            self.made[(coll, i)] = seq

    def seed(self, st):
        """The elements there before the run, in creation order (again after
        a resync: the versions then are the state re-read)."""
        reps = {"/truck/donuts": st.donut, "/truck/orders": st.order, "/posts": st.post, "/jobs": st.job, "/games": st.game}
        for coll, d in (("/truck/donuts", st.donuts), ("/truck/orders", st.orders), ("/posts", st.posts),
                        ("/jobs", st.jobs), ("/games", st.games)):
            for i in d:
                self.register(coll, i, 0)
                self.set_version(coll, i, self.newest, reps[coll](i))
            for i in self.order[coll]:
                if i not in d and self.version(coll, i) is not None:
                    self.set_version(coll, i, self.newest, None)
        for g, game in st.games.items():
            for c in game["cards"]:
                self.register(f"/games/{g}/cards", c["id"], 0)

    def set_version(self, coll, i, seq, rep):
        v = self.versions.get((coll, i))
        if v is None:
            v = self.versions[(coll, i)] = ([], [])
        if v[0] and v[0][-1] == seq:
            v[1][-1] = rep
        else:
            v[0].append(seq)
            v[1].append(rep)

    def version(self, coll, i, seq=None):
        """The element as it was at `seq` (the newest without), None where it was not."""
        v = self.versions.get((coll, i))
        if v is None:
            return None
        if seq is None:
            return v[1][-1]
        k = bisect.bisect_right(v[0], seq)
        return v[1][k - 1] if k else None

    def apply_version(self, e):
        """The element's new version after a change (insert, remove, or set
        of one of its properties, a card of a game included)."""
        if e.op == "insert":
            if e.path in REMOVABLE and isinstance(e.new, dict) and "id" in e.new:
                self.set_version(e.path, e.new["id"], e.seq, json.loads(jdump(e.new)))
            return
        if e.op == "remove":
            if e.path in REMOVABLE and isinstance(e.old, dict) and "id" in e.old:
                self.set_version(e.path, e.old["id"], e.seq, None)
            return
        ep = elem_prefix(e.path)
        if ep is None:
            return
        coll, i = ep.rsplit("/", 1)
        cur = self.version(coll, i)
        if cur is None:
            return
        rep = json.loads(jdump(cur))
        rest = e.path[len(ep) + 1:].split("/")
        if len(rest) == 1:
            rep[rest[0]] = e.new
        elif len(rest) == 3 and rest[0] == "cards":
            for c in rep.get("cards") or ():
                if c.get("id") == rest[1]:
                    c[rest[2]] = e.new
        self.set_version(coll, i, e.seq, rep)

    def place(self, coll, i, field):
        k = (coll, i)
        n = self.idx.get(k)
        return None if n is None else (coll, n, field, self.made[k])

    def places_of(self, path, op, old=None, new=None, seq=0):
        """Where a change lands for shapes (registering an inserted element)."""
        if op == "insert":
            if path in REMOVABLE and isinstance(new, dict) and "id" in new:
                self.register(path, new["id"], seq)
                if path == "/games":
                    for c in new.get("cards") or ():
                        self.register(f"/games/{new['id']}/cards", c.get("id"), seq)
                return [self.place(path, new["id"], None)]
            return []
        if op == "remove":
            if path in REMOVABLE and isinstance(old, dict) and "id" in old:
                p = self.place(path, old["id"], None)
                return [p] if p else []
            return []
        parts = path.strip("/").split("/")
        out = []
        if parts[0] == "truck" and len(parts) == 4 and parts[1] in ("donuts", "orders"):
            out.append(self.place("/truck/" + parts[1], parts[2], parts[3]))
        elif parts[0] in ("posts", "jobs") and len(parts) == 3:
            out.append(self.place("/" + parts[0], parts[1], parts[2]))
        elif parts[0] == "games" and len(parts) == 3:
            out.append(self.place("/games", parts[1], parts[2]))
        elif parts[0] == "games" and len(parts) == 5 and parts[2] == "cards":
            # a card's change is a change of its game's field `cards` too
            out.append(self.place(f"/games/{parts[1]}/cards", parts[3], parts[4]))
            out.append(self.place("/games", parts[1], "cards"))
        return [x for x in out if x is not None]

    def new_txn(self):
        self.next_txn += 1
        return self.next_txn

    def append(self, e):
        if e.seq in self.by_seq:
            return
        if self.seqs and e.seq <= self.seqs[-1]:
            raise ValueError(f"log out of order: {e.seq} after {self.seqs[-1]}")
        e.places = self.places_of(e.path, e.op, e.old, e.new, e.seq)
        self.apply_version(e)
        for c in {p[0] for p in e.places}:
            self.by_coll[c].append(e)
        self.entries.append(e)
        self.seqs.append(e.seq)
        self.by_seq[e.seq] = e
        self.txn_end[e.txn] = max(self.txn_end.get(e.txn, 0), e.seq)
        self.txn_entries[e.txn].append(e)
        self.by_path[e.path].append(e)
        if e.op == "insert":
            self.inserts.append(e)
        if e.elem:
            self.removes_by_elem[e.elem].append(e)
        self.newest = max(self.newest, e.seq)

    def index_after(self, seq):
        return bisect.bisect_right(self.seqs, seq)


class Observer:
    def __init__(self, oid, cursor, created_at):
        self.id = oid
        self.reads = {}           # path -> from seq
        self.elem_from = {}       # element prefix -> min from seq of its properties
        self.shapes = {}          # shape key -> MShape (collection reads: whole, pages, a game's cards)
        self.shapes_by_coll = collections.defaultdict(list)
        self.qshapes = {}         # query shape key -> QShape (precision/queries.py): filtered or sorted reads
        self.implicit = cursor    # None when unknown (after a stream)
        self.creation = cursor
        self.ins_ptr = 0          # index into log.inserts processed for implied reads
        self.history = [(created_at, cursor)]   # (time answered, cursor), for kill -9 allowance
        self.cursors = [cursor]   # cursors seen, for replays
        self.last_event_id = None
        self.deleted = False
        self.lock = threading.Lock()
        self.trail = collections.deque(maxlen=6)   # the observer's last requests, for failure reports

    def note(self, text):
        self.trail.append(text)

    def track(self, path, frm):
        old = self.reads.get(path)
        if old is None or frm < old:
            self.reads[path] = frm
            e = elem_prefix(path)
            if e is not None:
                cur = self.elem_from.get(e)
                if cur is None or frm < cur:
                    self.elem_from[e] = frm

    def track_shape(self, sh):
        old = self.shapes.get(sh.key)
        if old is not None and old.frm <= sh.frm:
            return   # a shape read again keeps its seq
        self.shapes[sh.key] = sh
        lst = self.shapes_by_coll[sh.coll]
        if old is not None:
            lst.remove(old)
        lst.append(sh)
        e = elem_prefix(sh.coll)
        if e is not None:
            # a collection inside an element (a game's cards): the element's
            # remove reaches its readers, as for a property of it
            cur = self.elem_from.get(e)
            if cur is None or sh.frm < cur:
                self.elem_from[e] = sh.frm

    def track_qshape(self, qs):
        """A query read: kept once per key (the older seq), its copy the newest read's."""
        old = self.qshapes.get(qs.key)
        if old is None:
            self.qshapes[qs.key] = qs
            return qs
        old.copy, old.copy_cur = qs.copy, qs.copy_cur
        if qs.frm < old.frm:
            old.frm = qs.frm
        return old

    def forget(self):
        self.reads.clear()
        self.elem_from.clear()
        self.shapes.clear()
        self.shapes_by_coll.clear()
        self.qshapes.clear()

    def prune_history(self):
        """Keeps the cursors answered in the last 5 s and the last one before
        them: what a kill -9 may leave (the server saves once a second). By
        time, not count: a stream's events may be many in one second."""
        if len(self.history) < 64:
            return
        self.history.sort()
        cut = time.monotonic() - 5
        older = [e for e in self.history if e[0] <= cut]
        self.history = older[-1:] + [e for e in self.history if e[0] > cut]

    def answered(self, cursor):
        self.trail.append(f"answered cursor {cursor}")
        self.implicit = cursor
        self.history.append((time.monotonic(), cursor))
        self.prune_history()
        self.cursors.append(cursor)
        if len(self.cursors) > 16:
            self.cursors = self.cursors[-12:]


def advance_implied(obs, log, upto=INF):
    """Applies inserts in the log (up to seq `upto`) to the observer's reads."""
    ins = log.inserts
    while obs.ins_ptr < len(ins) and ins[obs.ins_ptr].seq <= upto:
        e = ins[obs.ins_ptr]
        frm = obs.reads.get(e.coll)
        if frm is not None and frm < e.seq:
            for p in e.implied:
                obs.track(p, e.seq)
        obs.ins_ptr += 1


class MShape:
    """A shape in the model: the collection, the fields shown (None: all),
    the window as creation indexes lo..hi (both included; -1 and INF where
    open), the seq it counts from, whether every field of an element made
    after the read counts as read (`newer`), and the window in the
    server's positions (None where open) for `GET /observers/{id}`."""
    __slots__ = ("coll", "fields", "lo", "hi", "frm", "newer", "pos_from", "pos_through", "key")

    def __init__(self, coll, fields, lo, hi, frm, newer=True, pos_from=None, pos_through=None, newest=None):
        self.coll = coll
        self.fields = None if fields is None else frozenset(fields)
        self.lo, self.hi, self.frm, self.newer = lo, hi, frm, newer
        self.pos_from, self.pos_through = pos_from, pos_through
        # the server keeps one read per (collection, fields, window in
        # positions, newest element then): two windows that hold the same
        # elements (from after a cursor, and from a Link's element) may be
        # two reads, since positions are not consecutive
        self.key = (coll, None if fields is None else tuple(sorted(set(fields))), lo, hi, pos_from, pos_through,
                    None if fields is None else (newest if newer else "max"))

    def listing(self):
        return (self.coll, None if self.fields is None else tuple(sorted(self.fields)), self.pos_from, self.pos_through)

    def hears(self, place, s):
        coll, i, field, made = place
        return (self.frm < s and self.lo <= i <= self.hi
                and (field is None or self.fields is None or field in self.fields or (self.newer and made > self.frm)))

    def describe(self):
        f = "all" if self.fields is None else ",".join(sorted(self.fields))
        hi = "∞" if self.hi == INF else self.hi
        return f"{self.coll}?shape[{self.lo}..{hi}] fields {f} (positions {self.pos_from}..{self.pos_through})"


def shape_hit(obs, places, s):
    for place in places:
        for sh in obs.shapes_by_coll.get(place[0], ()):
            if sh.hears(place, s):
                return sh
    return None


def receives(obs, e):
    s = e.seq
    f = obs.reads.get(e.path)
    if f is not None and f < s:
        return True
    if e.op == "remove" and e.elem is not None:
        f = obs.elem_from.get(e.elem)
        if f is not None and f < s:
            return True
    if e.places and obs.shapes_by_coll:
        return shape_hit(obs, e.places, s) is not None
    return False


def delivered(obs, log, since, cursor):
    """The log entries in (since, cursor] the observer receives, in seq order."""
    lo = log.index_after(since)
    hi = log.index_after(cursor)
    span = hi - lo
    if span <= 0:
        return []
    if span <= 8 * (len(obs.reads) + len(obs.elem_from) + len(obs.shapes)) + 64:
        return [e for e in log.entries[lo:hi] if receives(obs, e)]
    out = {}
    for coll, shs in obs.shapes_by_coll.items():
        lst = log.by_coll.get(coll)
        if not lst or not shs:
            continue
        start = max(since, min(sh.frm for sh in shs))
        i = bisect.bisect_right(lst, start, key=lambda x: x.seq)
        for x in lst[i:]:
            if x.seq > cursor:
                break
            if shape_hit(obs, x.places, x.seq) is not None:
                out[x.seq] = x
    for path, frm in obs.reads.items():
        lst = log.by_path.get(path)
        if not lst:
            continue
        start = max(since, frm)
        keys = [x.seq for x in lst] if len(lst) < 32 else None
        if keys is None:
            i = bisect.bisect_right(lst, start, key=lambda x: x.seq)
        else:
            i = bisect.bisect_right(keys, start)
        for x in lst[i:]:
            if x.seq > cursor:
                break
            out[x.seq] = x
    for elem, frm in obs.elem_from.items():
        for x in log.removes_by_elem.get(elem, ()):
            if max(since, frm) < x.seq <= cursor:
                out[x.seq] = x
    return [out[s] for s in sorted(out)]


def coalesce(entries):
    """What coalesce=true folds these changes into (as JSON change objects)."""
    folded = []   # (seq, change)
    sets = {}     # path -> [first old, last new, last seq]
    order = []
    for e in entries:
        if e.op == "set":
            if e.path in sets:
                sets[e.path][1] = e.new
                sets[e.path][2] = e.seq
            else:
                sets[e.path] = [e.old, e.new, e.seq]
        else:
            folded.append((e.seq, e.json()))
    for path, (old, new, seq) in sets.items():
        if jdump(old) != jdump(new):
            folded.append((seq, {"seq": seq, "path": path, "op": "set", "old": old, "new": new}))
    folded.sort(key=lambda x: x[0])
    return [c for _, c in folded]
