"""Query reads (SPEC §3d, /work/notes/queries-contract.md): filtered and
sorted reads of the top-level collections, the shape each makes, and the
insert/remove/set changes that keep a reader's copy equal to a fresh read.

The model is stateless over the log, like the rest of it: the log keeps
every version of every element (`Log.versions`), so what a query read of
any seq shows, and what each transaction does to a query shape (the
element's membership before the transaction and after it: matching every
condition and inside the window), can be computed for any range a poll
asks, replays included.

A shape's window is a range of sort keys, fixed when it is read:
K = (null?, value, creation index) for a sorted read (the creation index
stands for the position: both grow with creation), K = (creation index,)
without `sort`. Ascending from just past the `after` element (open when
the read had no `after`) to the last element shown (open when no Link
came); descending the mirror image. What a write does to a shape's copy
is judged per element, from the whole write (the server keeps, with each
change, the element's queryable values before the write and after it):
  an element created or deleted: its insert or its remove, judged on its
    own (inserted into the window: insert; removed from it: remove);
  an element whose fields the write sets, its values before its first set
  against its values after the write:
    in before, out after  -> one remove (old: the element as it was before
                             the write, fields shown) at its last set's seq
    out before, in after  -> one insert (new: the element after the write,
                             fields shown) at its last set's seq
    in both               -> each set of a shown field, at its seq
    out both              -> nothing,
with the canonical query in `query`. So a job completing (progress and
isComplete set in one write) is one remove for `isComplete=eq.false` and
one insert for `isComplete=eq.true`; the copy, with them applied, equals a
fresh read after every transaction, which is what a poll sees. A poll with
`limit` may answer a cursor inside a write of which the reader heard
nothing yet (its insert or remove comes at the write's last change): the
copy then stands before the write (`settled`).

The canonical query: the conditions by field name (each field's in the
order given), each `field=op.value` with its value written canonically
(a text as is; a number as the server's JSON writer writes it, so `1e1` is
`10`, `100.0` is `100`, `100.50` is `100.5`; an integer without leading
zeros; true/false; `in.(…)` items quoted only when empty, with a space at
either end, or holding one of `,()"\\`, with `\\` before `"` and `\\`); then
`sort=[-]field`, or `order=desc` for a descending read without sort.
Changes are matched by what their query means (values of their type:
`in.("a",b)` is `in.(a,b)`, `1e1` is `10`); a text other than the
canonical one is counted once per pair as `query-text`. A remove is
matched by its element's id and the fields it shows; its `old` other than
the element as it was before the write is counted once per seq and query
as `query-old`."""

import bisect
import collections
import json
import urllib.parse

from .model import INF, jdump, short

# Queryable fields of each collection, in the model's declared order, with their type.
QUERYABLE = {
    "/truck/orders": (("donutId", "text"), ("quantity", "integer")),
    "/truck/donuts": (("dough", "text"), ("glaze", "text?"), ("topping", "text?")),
    "/posts": (("height", "number"),),
    "/jobs": (("isComplete", "boolean"),),
    "/games": (("isOver", "boolean"),),
}
NAMES = {"/truck/orders": "orders", "/truck/donuts": "donuts", "/posts": "posts", "/jobs": "jobs", "/games": "games"}
SHOWN = {"/truck/orders": ("donutId", "quantity"), "/truck/donuts": ("name", "dough", "glaze", "topping"),
         "/posts": ("imageURL", "height"), "/jobs": ("progress", "isComplete"), "/games": ("cards", "isOver")}
OPS = ("eq", "neq", "lt", "lte", "gt", "gte")


def select(obj, fields):
    """The element with the fields shown: a copy, never the log's version itself."""
    if obj is None:
        return None
    if fields is None:
        return json.loads(jdump(obj))
    out = {"id": obj["id"]} if "id" in obj else {}
    for f in fields:
        if f in obj:
            out[f] = json.loads(jdump(obj[f]))
    return out


TYPES = {f: t.rstrip("?") for fs in QUERYABLE.values() for f, t in fs}


def split_items(text):
    """The items of `a,"b,c",d` (None when malformed)."""
    items, cur, quoted, esc, was = [], "", False, False, False
    for ch in text:
        if quoted:
            if esc:
                cur += ch
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                quoted = False
            else:
                cur += ch
            continue
        if ch == ",":
            items.append(cur)
            cur, was = "", False
        elif ch == '"' and not cur and not was:
            quoted = was = True
        else:
            cur += ch
    items.append(cur)
    return None if quoted else items


def norm_query(text):
    """A query's text as what it means: each condition with its values of
    their type (so `in.("a",b)` is `in.(a,b)` and `1e1` is `10`), in the
    order of the text; the sort or the order. Two texts that mean the same
    query match, the text itself is compared apart (`query-text`)."""
    if not isinstance(text, str):
        return text
    out = []
    for part in text.split("&"):
        name, _, value = part.partition("=")
        typ = TYPES.get(name)
        if typ is None or value in ("is.null", "not.is.null"):
            out.append((name, value))
            continue
        op, _, rest = value.partition(".")
        try:
            if op == "in" and rest.startswith("(") and rest.endswith(")"):
                items = split_items(rest[1:-1])
                out.append((name, op, None if items is None else tuple(parse_value(typ, x) for x in items)))
            else:
                out.append((name, op, parse_value(typ, rest)))
        except ValueError:
            out.append((name, value))
    return tuple(out)


def parse_value(typ, text):
    if typ == "integer":
        return int(text)
    if typ == "number":
        return float(text)
    if typ == "boolean":
        return text == "true"
    return text


def in_items(items, rng=None, force_quote=False):
    """The text of `in.(…)`: items comma-separated, quoted where they must
    be (a comma, a quote, a parenthesis), mostly where they hold a space or
    a backslash or are empty, and sometimes where they need not."""
    out = []
    for it in items:
        must = any(ch in it for ch in ',"()')
        may = any(ch in it for ch in '\\ ') or it == ""
        if must or force_quote or (may and (rng is None or rng.random() < 0.7)) or (rng is not None and rng.random() < 0.03):
            out.append('"' + it.replace("\\", "\\\\").replace('"', '\\"') + '"')
        else:
            out.append(it)
    return "in.(" + ",".join(out) + ")"


def canon_value(typ, v):
    """A value as the server's canonical query writes it: a text as is, a
    number as its JSON writer does (`1e1` is `10`, `100.0` is `100`,
    `100.50` is `100.5`), an integer without leading zeros, true/false."""
    if typ == "boolean":
        return "true" if v else "false"
    if typ in ("integer", "number"):
        if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
            return str(int(v))
        return repr(v) if isinstance(v, float) else str(int(v))
    return v


def canon_item(typ, v):
    """An item of a canonical `in` list: a text quoted only where it must
    be (empty, a space at either end, or one of `,()"\\`), `\\` before `"`
    and `\\` inside the quotes."""
    text = canon_value(typ, v)
    if typ in ("text", "text?") and (text == "" or text[0] == " " or text[-1] == " " or any(ch in text for ch in ',()"\\')):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


class Cond:
    """One condition: the field, the operator, the value(s) parsed, its
    text as given (`op.value`, percent-decoded) and its canonical text (the
    server's `query` member says that)."""
    __slots__ = ("field", "typ", "op", "value", "text", "canon")

    def __init__(self, field, typ, op, value, text):
        self.field, self.typ, self.op, self.value, self.text = field, typ, op, value, text
        if op in ("is.null", "not.is.null"):
            self.canon = op
        elif op == "in":
            self.canon = "in.(" + ",".join(canon_item(typ, x) for x in value) + ")"
        else:
            self.canon = f"{op}.{canon_value(typ, value)}"

    def test(self, v):
        op = self.op
        if op == "is.null":
            return v is None
        if op == "not.is.null":
            return v is not None
        if v is None:
            return False
        if op == "in":
            return any(v == x for x in self.value)
        x = self.value
        if op == "eq":
            return v == x
        if op == "neq":
            return v != x
        if op == "lt":
            return v < x
        if op == "lte":
            return v <= x
        if op == "gt":
            return v > x
        return v >= x


class Spec:
    """What a query read asks: collection, conditions, sort (field, desc) or
    None, `order=desc` (unsorted only), limit, fields, and the `after`
    bound: (parameter text, K of the element it names) or None."""

    def __init__(self, coll, conds, sort, desc, limit, fields, after=None):
        self.coll, self.conds, self.sort, self.desc, self.limit, self.fields, self.after = \
            coll, conds, sort, desc, limit, fields, after
        if sort is not None:
            self.desc = sort[1]
        # by field name (stable: one field's conditions in the order given)
        cs = sorted(conds, key=lambda c: c.field)
        q = [f"{c.field}={c.canon}" for c in cs]
        if sort is not None:
            q.append("sort=" + ("-" if sort[1] else "") + sort[0])
        elif desc:
            # not in the contract's example; the server says it, and a
            # descending read's shape is another shape (GET /observers/{id})
            q.append("order=desc")
        self.qs = "&".join(q)   # the canonical query

    def is_query(self):
        return bool(self.conds) or self.sort is not None

    def key(self, rep, idx):
        if self.sort is None:
            return (idx,)
        v = rep.get(self.sort[0])
        return (1, 0, idx) if v is None else (0, v, idx)

    def match(self, rep):
        return all(c.test(rep.get(c.field)) for c in self.conds)

    def params(self, rng, encode=True):
        """The query string's parameters, in a random order, each encoded."""
        ps = []
        for c in self.conds:
            ps.append((c.field, c.text))
        n = len(ps)
        if self.sort is not None:
            ps.append(("sort", ("-" if self.sort[1] else "") + self.sort[0]))
        elif self.desc:
            ps.append(("order", "desc"))
        elif rng.random() < 0.1:
            ps.append(("order", "asc"))
        if self.limit is not None:
            ps.append(("limit", str(self.limit)))
        if self.after is not None:
            ps.append(("after", self.after[0]))
        if self.fields is not None:
            ps.append(("fields", ",".join(self.fields)))
        items = []
        for j, (k, v) in enumerate(ps):
            # a condition's value percent-encoded wholly, or but for its punctuation
            safe = "" if (j < n and encode and rng.random() < 0.3) else "(),.-:"
            items.append((j, k, k + "=" + urllib.parse.quote(v, safe=safe)))
        rng.shuffle(items)
        # one field's conditions keep their order: the canonical query says them as given
        for f in {k for j, k, _ in items if j < n}:
            at = [x for x, (j, k, _) in enumerate(items) if j < n and k == f]
            mine = sorted((items[x] for x in at), key=lambda it: it[0])
            for x, it in zip(at, mine):
                items[x] = it
        return [t for _, _, t in items]

    def url(self, rng):
        return self.coll + "?" + "&".join(self.params(rng))

    def describe(self):
        return (f"{self.coll}?{self.qs}"
                f"{'&limit=' + str(self.limit) if self.limit else ''}{'&after=' + self.after[0] if self.after else ''}"
                f"{'&fields=' + ','.join(self.fields) if self.fields is not None else ''}")


def settled(log, seq):
    """The seq a reader's copy stands at when a poll answered `seq`: `seq`
    itself, or, when `seq` lies inside a transaction, the seq before that
    transaction. A poll with `limit` stops before the first change of the
    next transaction the observer hears, and a query's reader may hear
    nothing of a write before its last change (the element coming or going
    there): the cursor then lies inside the write, of which the reader has
    heard nothing yet, and the copy is what a read before it showed."""
    le = log.by_seq.get(seq) if seq is not None else None
    if le is not None and log.txn_end.get(le.txn, seq) > seq:
        return min(x.seq for x in log.txn_entries[le.txn]) - 1
    return seq


def elements_at(log, coll, seq=None):
    """(creation index, id, representation) of every element at `seq` (now without)."""
    out = []
    for idx, i in enumerate(log.order[coll]):
        rep = log.version(coll, i, seq)
        if rep is not None:
            out.append((idx, i, rep))
    return out


class QueryRead:
    """A query read as the model predicts it at `seq`: the elements shown,
    whether more follow (a Link), the body; once answered, its shape."""

    def __init__(self, log, spec, seq=None):
        self.spec = spec
        cands = []
        for idx, i, rep in elements_at(log, spec.coll, seq):
            if spec.match(rep):
                cands.append((spec.key(rep, idx), i, rep))
        cands.sort(key=lambda x: x[0], reverse=spec.desc)
        if spec.after is not None:
            a = spec.after[1]
            cands = [c for c in cands if (c[0] < a if spec.desc else c[0] > a)]
        shown = cands[:spec.limit] if spec.limit else cands
        self.more = len(cands) > len(shown)
        self.shown = [i for _, i, _ in shown]
        self.last_key = shown[-1][0] if shown else None
        self.elems = [select(rep, spec.fields) for _, _, rep in shown]
        self.body = {NAMES[spec.coll]: self.elems}

    def shape(self, frm):
        s = self.spec
        after = (s.after[1], False) if s.after is not None else None
        last = (self.last_key, True) if self.more else None
        lo, hi = (last, after) if s.desc else (after, last)
        qs = QShape(s, lo, hi, frm)
        qs.copy = {e["id"]: json.loads(jdump(e)) for e in self.elems}
        qs.copy_cur = frm
        return qs


def old_key(op, old):
    """What a query change is matched by of its `old`: all of it for a set;
    for a remove the element's id and the fields it shows (two shapes of
    one query showing other fields are each said the remove)."""
    if op == "remove" and isinstance(old, dict):
        return {"id": old.get("id"), "fields": sorted(old)}
    return old


class QC:
    """A change a query shape's reader receives: its allowed seqs, its
    transaction, the change object, and the shapes that expect it."""
    __slots__ = ("seq", "allowed", "txn", "d", "key", "loose", "shapes", "optional")

    def __init__(self, allowed, txn, path, op, old, new, query, shape_key):
        self.allowed = tuple(allowed)
        self.seq = self.allowed[0]
        self.txn = txn
        d = {"seq": self.seq, "path": path, "op": op}
        if op in ("set", "remove"):
            d["old"] = old
        if op in ("set", "insert"):
            d["new"] = new
        d["query"] = query
        self.d = d
        nq = norm_query(query)
        # a remove is known by its element's id: its `old` is compared apart (query-old)
        self.key = ("q", self.seq, nq, op, path, jdump(old_key(op, old)), jdump(new))
        self.loose = ("q", self.seq, nq, op, path)
        self.shapes = {shape_key}
        self.optional = False

    def json(self):
        return self.d


class QShape:
    """A query shape in the model: the read's spec (collection, conditions,
    sort, fields), the window (lo, hi: (K, inclusive) or None where open),
    the seq it counts from, and the reader's copy (id -> element as shown)
    with the seq the copy stands at."""

    def __init__(self, spec, lo, hi, frm):
        self.spec = spec
        self.coll = spec.coll
        self.fields = None if spec.fields is None else frozenset(spec.fields)
        self.qs = spec.qs
        self.nq = norm_query(spec.qs)
        self.lo, self.hi, self.frm = lo, hi, frm
        self.key = (spec.coll, None if spec.fields is None else tuple(sorted(set(spec.fields))), spec.qs, lo, hi)
        self.memo = {}
        self.copy = None
        self.copy_cur = None

    def listing(self):
        return (self.coll, None if self.fields is None else tuple(sorted(self.fields)), self.qs)

    def inside(self, k):
        lo, hi = self.lo, self.hi
        if lo is not None and not (k > lo[0] or (lo[1] and k == lo[0])):
            return False
        if hi is not None and not (k < hi[0] or (hi[1] and k == hi[0])):
            return False
        return True

    def holds(self, rep, idx):
        return rep is not None and self.spec.match(rep) and self.inside(self.spec.key(rep, idx))

    def window_at(self, log, seq):
        """What a fresh read of the query, restricted to the window, shows at
        `seq` (before the transaction `seq` lies inside: see `settled`)."""
        seq = settled(log, seq)
        return {i: select(rep, self.spec.fields) for idx, i, rep in elements_at(log, self.coll, seq) if self.holds(rep, idx)}

    def changes(self, log, txn):
        """The changes transaction `txn` makes this shape's reader receive:
        what the whole write does to each element it touches. An element
        created or deleted is judged by its insert or remove on its own
        (it comes in or leaves at that seq). For an element the write sets
        fields of, its values before its first set (before the write, or
        just after its insert in the same write) against its values after
        the write: in both, each set of a shown field is said; coming in,
        one insert of the element after the write, at the seq of its last
        set; leaving, one remove of the element as it was, at that seq;
        neither, nothing. A state half-way through a write is never said."""
        got = self.memo.get(txn)
        if got is not None:
            return got
        out = []
        sets = collections.OrderedDict()     # creation index -> the element's sets in the write, in order
        for x in log.txn_entries[txn]:
            if x.seq <= self.frm:
                continue
            for p in x.places:
                if p[0] != self.coll:
                    continue
                idx = p[1]
                i = log.order[self.coll][idx]
                if x.op == "set":
                    sets.setdefault(idx, []).append(x)
                elif x.op in ("insert", "remove") and x.path == self.coll:
                    before = log.version(self.coll, i, x.seq - 1)
                    after = log.version(self.coll, i, x.seq)
                    b, a = self.holds(before, idx), self.holds(after, idx)
                    if b and not a:
                        out.append(QC([x.seq], txn, self.coll, "remove", select(before, self.spec.fields), None, self.qs, self.key))
                    elif a and not b:
                        out.append(QC([x.seq], txn, self.coll, "insert", None, select(after, self.spec.fields), self.qs, self.key))
                break
        end = log.txn_end[txn]
        for idx, xs in sets.items():
            i = log.order[self.coll][idx]
            after = log.version(self.coll, i, end)
            if after is None:
                continue     # deleted by the same write: its remove says it
            before = log.version(self.coll, i, xs[0].seq - 1)
            b, a = self.holds(before, idx), self.holds(after, idx)
            last = xs[-1]
            if b and a:
                for x in xs:
                    field = x.path[len(self.coll) + len(i) + 2:].split("/", 1)[0]
                    if self.fields is None or field in self.fields:
                        out.append(QC([x.seq], txn, x.path, "set", x.old, x.new, self.qs, self.key))
            elif a:
                out.append(QC([last.seq], txn, self.coll, "insert", None, select(after, self.spec.fields), self.qs, self.key))
            elif b:
                out.append(QC([last.seq], txn, self.coll, "remove", select(before, self.spec.fields), None, self.qs, self.key))
        out.sort(key=lambda c: c.seq)
        # An insert then a remove of one element in one transaction leaves
        # the copy as it was (the contract: "no change that leaves the copy
        # unchanged"): noted (Log.flipflops) for the report.
        ins = {c.d["new"].get("id"): c for c in out if c.d["op"] == "insert"}
        for c in out:
            if c.d["op"] == "remove" and c.d["old"].get("id") in ins and ins[c.d["old"]["id"]].seq < c.seq:
                log.flipflops.append((self.spec.describe(), ins[c.d["old"]["id"]].d, c.d))
        self.memo[txn] = out
        return out

    def describe(self):
        def b(x):
            return "open" if x is None else f"{'[' if x[1] else '('}{x[0]}"
        return f"query {self.spec.describe()} window {b(self.lo)}..{b(self.hi)} from seq {self.frm}"


def query_expected(obs, log, since, cursor):
    """The query changes the observer receives in (since, cursor], once each
    (two shapes that expect the same change get it once), in seq order. A
    change whose allowed seqs straddle `since` is optional."""
    out = {}
    if not obs.qshapes:
        return []
    for sh in list(obs.qshapes.values()):
        lst = log.by_coll.get(sh.coll)
        if not lst:
            continue
        start = max(since, sh.frm)
        k = bisect.bisect_right(lst, start, key=lambda x: x.seq)
        txns = []
        for x in lst[k:]:
            if x.seq > cursor:
                break
            if not txns or txns[-1] != x.txn:
                txns.append(x.txn)
        # a transaction that straddles `since`
        if k > 0 and lst[k - 1].txn not in txns and log.txn_end.get(lst[k - 1].txn, 0) > start:
            txns.insert(0, lst[k - 1].txn)
        for t in txns:
            for c in sh.changes(log, t):
                allowed = [s for s in c.allowed if since < s <= cursor]
                if not allowed:
                    continue
                have = out.get(c.key)
                if have is None:
                    n = QC(allowed, c.txn, c.d["path"], c.d["op"], c.d.get("old"), c.d.get("new"), c.d["query"], sh.key)
                    n.optional = len(allowed) < len(c.allowed)
                    out[c.key] = n
                else:
                    have.shapes.add(sh.key)
    return sorted(out.values(), key=lambda c: c.seq)


def query_receives(obs, log, c):
    """Whether a query change (a dict) is one the observer receives at some
    time (for telling a repeated change from a spurious one)."""
    le = log.by_seq.get(c.get("seq"))
    if le is None:
        return False
    key = got_key(log, c)
    for sh in obs.qshapes.values():
        for w in sh.changes(log, le.txn):
            if w.key == key and c.get("seq") in w.allowed:
                return True
    return False


def coalesce_query(wants):
    """coalesce=true on query changes: a shape's sets of one path folded
    (first old, last new, at the last seq; left out when back where they
    started) between two inserts or removes of their element, inserts and
    removes as they are."""
    out = []
    sets = collections.OrderedDict()
    # an element that leaves the query and comes back: its sets are not
    # folded across its insert or remove (the insert brings it as it is then)
    entered = collections.Counter()     # (query, element path) -> inserts and removes so far
    colls = collections.defaultdict(set)
    for w in wants:
        if w.d["op"] == "set":
            q, path = w.d["query"], w.d["path"]
            n = 0
            for c in colls[q]:
                if path.startswith(c + "/"):
                    n = entered[(q, c + "/" + path[len(c) + 1:].split("/")[0])]
            k = (path, q, n)
            if k in sets:
                sets[k][1] = w
            else:
                sets[k] = [w, w]
        else:
            el = w.d.get("new") if w.d["op"] == "insert" else w.d.get("old")
            if isinstance(el, dict) and "id" in el:
                colls[w.d["query"]].add(w.d["path"])
                entered[(w.d["query"], w.d["path"] + "/" + str(el["id"]))] += 1
            out.append(w)
    for (path, q, _), (first, last) in sets.items():
        if jdump(first.d["old"]) == jdump(last.d["new"]):
            continue
        n = QC(last.allowed, last.txn, path, "set", first.d["old"], last.d["new"], q, next(iter(last.shapes)))
        n.shapes = set(first.shapes) | set(last.shapes)
        out.append(n)
    out.sort(key=lambda c: c.seq)
    return out


def apply_change(sh, c):
    """Applies a delivered change to the shape's copy, as a client would."""
    copy = sh.copy
    op = c.get("op")
    if op == "insert" and isinstance(c.get("new"), dict):
        copy[c["new"].get("id")] = json.loads(jdump(c["new"]))
    elif op == "remove" and isinstance(c.get("old"), dict):
        copy.pop(c["old"].get("id"), None)
    elif op == "set" and isinstance(c.get("path"), str):
        rest = c["path"][len(sh.coll) + 1:].split("/")
        el = copy.get(rest[0])
        if el is None:
            return
        if len(rest) == 2:
            el[rest[1]] = c.get("new")
        elif len(rest) == 4 and rest[1] == "cards":
            for card in el.get("cards") or ():
                if card.get("id") == rest[2]:
                    card[rest[3]] = c.get("new")


class QueryGen:
    """Random query reads against what the model (or a reader thread) knows."""

    DOUGHS = ["plain", "chocolate", "cake", "yeast", "choc,chip", 'say "hi"', "Plain", "zz", " plain", "cake ", "a\\b", "(x)", "two words"]
    GLAZES = ["sugar", "honey", "maple", "chocolate", "strawberry", "a"]
    TOPPINGS = ["sprinkles", "oats", "nuts", "zz"]

    def __init__(self, rng):
        self.rng = rng

    def value_text(self, coll, field, typ, pool):
        """A value of the field's type as text: one the elements hold (from
        `pool`), else one of the write pools, else an odd one."""
        rng = self.rng
        if typ == "integer":
            v = rng.choice(pool) if pool and rng.random() < 0.6 else rng.randint(0, 1001)
            # now and then with leading zeros: the canonical query says `03` as `3`
            text = ("0" * rng.randint(1, 2) + str(v)) if v >= 0 and rng.random() < 0.05 else str(v)
            return text, int(v)
        if typ == "number":
            v = rng.choice(pool) if pool and rng.random() < 0.6 else rng.choice([rng.randint(40, 410), rng.randint(40, 410) + 0.5])
            r = rng.random()
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            # now and then a number not as JSON writes it: the canonical
            # query says it as the server's JSON writer does
            if r < 0.03 and isinstance(v, int):
                text = f"{v}.0"
            elif r < 0.06 and isinstance(v, int) and v % 10 == 0:
                text = f"{v // 10}e1"
            elif r < 0.09 and isinstance(v, float):
                text = f"{v}0"
            elif r < 0.11:
                text = f"{v / 100}e2" if rng.random() < 0.5 else f"{json.dumps(v)}E0"
            else:
                text = json.dumps(v)
            return text, float(text)
        if typ == "boolean":
            v = rng.random() < 0.5
            return ("true" if v else "false"), v
        extra = {"dough": self.DOUGHS, "glaze": self.GLAZES, "topping": self.TOPPINGS}.get(field, [])
        choices = [x for x in pool if x is not None]
        r = rng.random()
        if choices and r < 0.6:
            v = rng.choice(choices)
        elif extra and r < 0.9:
            v = rng.choice(extra)
        else:
            v = rng.choice(["", "0", "~", "00000000-0000-7000-8000-000000000000", "ffffffff"])
        return v, v

    def cond(self, coll, field, typ, pool):
        rng = self.rng
        if typ == "boolean":
            ops = ["eq", "eq", "neq", "in", "is.null", "not.is.null"]
        elif typ.endswith("?"):
            ops = ["eq", "eq", "neq", "lt", "lte", "gt", "gte", "in", "in", "is.null", "not.is.null"]
        else:
            ops = ["eq", "eq", "neq", "lt", "lte", "gt", "gte", "in", "in", "is.null" if rng.random() < 0.2 else "eq",
                   "not.is.null" if rng.random() < 0.3 else "neq"]
        op = rng.choice(ops)
        t = typ.rstrip("?")
        if op in ("is.null", "not.is.null"):
            return Cond(field, t, op, None, op)
        if op == "in":
            n = rng.randint(1, 4)
            items = [self.value_text(coll, field, t, pool) for _ in range(n)]
            return Cond(field, t, op, [v for _, v in items], in_items([x for x, _ in items], rng if t == "text" else None))
        text, v = self.value_text(coll, field, t, pool)
        return Cond(field, t, op, v, f"{op}.{text}")

    def spec(self, coll, pools):
        """A random query of `coll`: 1-3 conditions (a field repeated for a
        range sometimes), or only a sort; a sort in either direction or none;
        a limit or none; fields= or none. `pools` maps a field to values the
        elements hold."""
        rng = self.rng
        fields = QUERYABLE[coll]
        conds = []
        n = rng.choices([0, 1, 2, 3], [0.15, 0.45, 0.3, 0.1])[0]
        for _ in range(n):
            f, typ = rng.choice(fields)
            conds.append(self.cond(coll, f, typ, pools.get(f, [])))
        if conds and rng.random() < 0.2:
            # a range: the same field twice
            f, typ = rng.choice([x for x in fields if x[1] in ("integer", "number", "text", "text?")] or fields)
            pool = pools.get(f, [])
            for op in (rng.choice(["gt", "gte"]), rng.choice(["lt", "lte"])):
                text, v = self.value_text(coll, f, typ.rstrip("?"), pool)
                conds.append(Cond(f, typ.rstrip("?"), op, v, f"{op}.{text}"))
        sort = None
        if not conds or rng.random() < 0.6:
            f, _ = rng.choice(fields)
            sort = (f, rng.random() < 0.5)
        limit = rng.randint(1, 4) if rng.random() < 0.6 else None
        desc = sort is None and rng.random() < 0.4
        shown = SHOWN[coll]
        fsel = None
        if rng.random() < 0.45:
            fsel = [x for x in shown if rng.random() < 0.5] or [rng.choice(shown)]
            if rng.random() < 0.3:
                fsel = ["id"] + fsel
        return Spec(coll, conds, sort, desc, limit, fsel)


def pools_from(log, coll, seq=None):
    """Values the elements hold, per queryable field."""
    out = collections.defaultdict(list)
    for _, _, rep in elements_at(log, coll, seq):
        for f, _ in QUERYABLE[coll]:
            out[f].append(rep.get(f))
    return out


def parse_query_link(value):
    """The rel="next" Link of a query read: (path, [(name, value)], target) or None."""
    import re
    m = re.search(r'<([^>]*)>\s*;\s*rel="next"', value or "")
    if not m:
        return None
    u = urllib.parse.urlsplit(m.group(1))
    return u.path, urllib.parse.parse_qsl(u.query, keep_blank_values=True), m.group(1)


def check_link(spec, read, link):
    """What is wrong with a query read's Link (None when it is right): it
    must come exactly when more follow, name the collection, the same
    conditions, sort, limit, order and fields, and an `after`."""
    if not read.more:
        return None if link is None else f"Link {link[2]!r}, but no more elements follow the {len(read.shown)} shown in the model"
    if link is None:
        return f"no Link rel=\"next\", but more elements follow the {len(read.shown)} shown in the model"
    path, params, target = link
    cnt = collections.Counter(norm_query(f"{k}={v}") for k, v in params if k not in ("after", "limit", "fields", "sort", "order"))
    want = collections.Counter(norm_query(f"{c.field}={c.text}") for c in spec.conds)
    d = dict(params)
    problems = []
    if path != spec.coll:
        problems.append("another collection")
    if cnt != want:
        problems.append(f"conditions {sorted(cnt.elements())} (asked {sorted(want.elements())})")
    if d.get("limit") != str(spec.limit):
        problems.append("another limit")
    if spec.sort is not None:
        if d.get("sort") != ("-" if spec.sort[1] else "") + spec.sort[0]:
            problems.append("another sort")
        if "order" in d:
            problems.append("an order with a sort")
    else:
        if "sort" in d:
            problems.append("a sort")
        if (d.get("order") == "desc") != bool(spec.desc) or d.get("order") not in (None, "asc", "desc"):
            problems.append("another order")
        if not d.get("after", "").isdigit():
            problems.append("an after that is no position")
    if not d.get("after"):
        problems.append("no after")
    if spec.fields is not None:
        if set((d.get("fields") or "").split(",")) != set(spec.fields):
            problems.append("other fields")
    elif "fields" in d:
        problems.append("fields")
    if sum(1 for k, _ in params if k in ("after", "limit", "fields", "sort", "order")) != \
            len({k for k, _ in params if k in ("after", "limit", "fields", "sort", "order")}):
        problems.append("a parameter twice")
    return None if not problems else f"Link {target!r}: {', '.join(problems)}"


class PW:
    """A plain change (an Entry, or a coalesced one) in the shape of QC."""
    __slots__ = ("seq", "allowed", "txn", "d", "key", "loose", "shapes", "optional")

    def __init__(self, d, txn, co=False):
        self.d = d
        self.seq = d["seq"]
        self.allowed = (self.seq,)
        self.txn = txn
        self.key = ("p", self.seq, d["path"]) if co else ("p", self.seq)
        self.loose = self.key
        self.shapes = ()
        self.optional = False

    def json(self):
        return self.d


def got_key(log, c, co=False):
    """The key a delivered change object matches a PW or QC by."""
    if "query" in c:
        le = log.by_seq.get(c.get("seq"))
        if le is None:
            return None
        return ("q", c.get("seq"), norm_query(c.get("query")), c.get("op"), c.get("path"), jdump(old_key(c.get("op"), c.get("old"))),
                jdump(c.get("new")))
    return ("p", c.get("seq"), c.get("path")) if co else ("p", c.get("seq"))


def same_list(log, got, wants):
    """Whether the changes of an event are exactly `wants` (an optional one
    may be absent; equal seqs in any order)."""
    wk = {w.key: w for w in wants}
    for c in got:
        w = wk.pop(got_key(log, c), None)
        if w is None or c.get("seq") not in w.allowed:
            return False
        if w.key[0] == "p" and jdump(c) != jdump(w.d):
            return False
    return all(w.optional for w in wk.values())
