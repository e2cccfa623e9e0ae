"""The operations of a run: plans of writes (valid, no-op and refused) and
reads (whole resources, pages, fields), each with what the model predicts."""

import collections
import json
import re
import urllib.parse

from .model import CARD_FIELDS, DONUT_FIELDS, DOT_FIELDS, INF, MShape, jdump, short



class Plan:
    def __init__(self, name, method, path, body=None, raw=None, headers=None, status=(200,), touch=(), finish=None):
        self.name = name
        self.method = method
        self.path = path
        self.body = body
        self.raw = raw
        self.headers = headers or {}
        self.status = status if isinstance(status, tuple) else (status,)
        self.touch = list(touch)   # (path, op, elem)
        self.finish = finish       # (status, body) -> list of transactions, each a list of (path, op, old, new)

    def describe(self):
        b = self.raw.decode("utf-8", "replace") if self.raw is not None else (json.dumps(self.body) if self.body is not None else "")
        h = "".join(f" -H '{k}: {v}'" for k, v in self.headers.items())
        return f"{self.method} {self.path}{h}{(' ' + short(b, 200)) if b else ''}"


NAMES = ["Glazed", "Maple Bar", "Cruller", "Bear Claw", "Old Fashioned", "Boston Cream", "Jelly"]
DOUGHS = ["plain", "chocolate", "cake", "yeast"]
GLAZES = [None, "sugar", "honey", "maple", "chocolate"]
TOPPINGS = [None, "sprinkles", "oats", "nuts"]
TRUCK_NAMES = ["Food Truck", "Donut Truck", "Night Truck", "Truck №1"]
USERS = ["ada", "grace", "linus", "Ω-user"]


class Writes:
    """Plans of valid, no-op and refused writes against the model's state."""

    def __init__(self, checker):
        self.c = checker
        self.rng = checker.rng
        self.st = checker.st

    # -- helpers
    def etag_of(self, url):
        return self.c.current_etag(url)

    def any_id(self, d):
        return self.rng.choice(list(d)) if d else None

    def victim(self, d):
        """An element to delete: often the newest or the oldest (the edges of
        the first and last pages), else any."""
        if not d:
            return None
        r = self.rng.random()
        if r < 0.3:
            return next(reversed(d))
        if r < 0.5:
            return next(iter(d))
        return self.rng.choice(list(d))

    def missing_id(self):
        return "00000000-0000-7000-8000-%012x" % self.rng.randrange(1 << 40)

    def check_body(self, plan, got, want):
        if jdump(got) != jdump(want):
            self.c.report.fail("wrong-state", f"{plan.describe()} answered {short(got)}; the model says {short(want)}")

    # -- truck
    def truck_rename(self):
        st = self.st
        name = self.rng.choice(TRUCK_NAMES)
        old = st.truck_name
        touch = [("/truck/name", "set", None)] if name != old else []

        def finish(status, body):
            st.truck_name = name
            return [[("/truck/name", "set", old, name)]] if name != old else []
        headers = {}
        if self.rng.random() < 0.2:
            tag = self.etag_of("/truck")
            if tag:
                headers["If-Match"] = tag
        p = Plan("truck-rename", "PATCH", "/truck", {"name": name}, headers=headers, touch=touch, finish=finish)
        orig = p.finish

        def fin(status, body):
            t = orig(status, body)
            self.check_body(p, body, st.truck())
            return t
        p.finish = fin
        return p

    def donut_create(self):
        st = self.st
        body = {"name": self.rng.choice(NAMES)}
        for f, pool in (("dough", DOUGHS), ("glaze", GLAZES), ("topping", TOPPINGS)):
            if self.rng.random() < 0.5:
                body[f] = self.rng.choice(pool)

        def finish(status, resp):
            i = resp["id"]
            d = {"name": body["name"], "dough": body.get("dough", "plain"), "glaze": body.get("glaze"), "topping": body.get("topping")}
            st.donuts[i] = d
            self.check_body(p, resp, st.donut(i))
            return [[("/truck/donuts", "insert", None, st.donut(i))]]
        p = Plan("donut-create", "POST", "/truck/donuts", body, status=201, touch=[("/truck/donuts", "insert", None)], finish=finish)
        return p

    def donut_patch(self):
        st = self.st
        i = self.any_id(st.donuts)
        if i is None:
            return self.donut_create()
        body = {}
        for f, pool in (("name", NAMES), ("dough", DOUGHS), ("glaze", GLAZES), ("topping", TOPPINGS)):
            if self.rng.random() < 0.45:
                body[f] = self.rng.choice(pool)
        d = st.donuts[i]
        changes = [(f"/truck/donuts/{i}/{f}", "set", d[f], body[f]) for f in DONUT_FIELDS if f in body and body[f] != d[f]]
        headers = {}
        if self.rng.random() < 0.2:
            tag = self.etag_of(f"/truck/donuts/{i}")
            if tag:
                headers["If-Match"] = tag

        def finish(status, resp):
            for f in DONUT_FIELDS:
                if f in body:
                    d[f] = body[f]
            self.check_body(p, resp, st.donut(i))
            return [changes] if changes else []
        p = Plan("donut-patch", "PATCH", f"/truck/donuts/{i}", body, headers=headers,
                 touch=[(c[0], "set", None) for c in changes], finish=finish)
        return p

    def donut_delete(self):
        st = self.st
        i = self.victim(st.donuts)
        if i is None:
            return self.donut_create()
        old = st.donut(i)

        def finish(status, resp):
            del st.donuts[i]
            return [[("/truck/donuts", "remove", old, None)]]
        return Plan("donut-delete", "DELETE", f"/truck/donuts/{i}", status=204,
                    touch=[("/truck/donuts", "remove", f"/truck/donuts/{i}")], finish=finish)

    def order_create(self):
        st = self.st
        i = self.any_id(st.donuts)
        if i is None:
            return self.donut_create()
        q = self.rng.randint(1, 1000)
        n = len(st.orders)

        def finish(status, resp):
            oid = resp["id"]
            st.orders[oid] = {"donutId": i, "quantity": q}
            self.check_body(p, resp, st.order(oid))
            return [[("/truck/orders", "insert", None, st.order(oid)), ("/truck/orderCount", "set", n, n + 1)]]
        p = Plan("order-create", "POST", "/truck/orders", {"donutId": i, "quantity": q}, status=201,
                 touch=[("/truck/orders", "insert", None), ("/truck/orderCount", "set", None)], finish=finish)
        return p

    def order_delete(self):
        st = self.st
        i = self.victim(st.orders)
        if i is None:
            return self.order_create()
        old = st.order(i)
        n = len(st.orders)

        def finish(status, resp):
            del st.orders[i]
            return [[("/truck/orders", "remove", old, None), ("/truck/orderCount", "set", n, n - 1)]]
        return Plan("order-delete", "DELETE", f"/truck/orders/{i}", status=204,
                    touch=[("/truck/orders", "remove", f"/truck/orders/{i}"), ("/truck/orderCount", "set", None)], finish=finish)

    # -- account
    def login(self):
        st = self.st
        u = self.rng.choice(USERS)
        old = st.user

        def finish(status, resp):
            st.user = u
            self.check_body(p, resp, {"userName": u})
            return [[("/account/userName", "set", old, u)]] if old != u else []
        p = Plan("login", "POST", "/account/login", {"userName": u},
                 touch=[("/account/userName", "set", None)] if old != u else [], finish=finish)
        return p

    def logout(self):
        st = self.st
        old = st.user

        def finish(status, resp):
            st.user = None
            self.check_body(p, resp, {"userName": None})
            return [[("/account/userName", "set", old, None)]] if old is not None else []
        p = Plan("logout", "POST", "/account/logout", self.rng.choice([None, {}]),
                 touch=[("/account/userName", "set", None)] if old is not None else [], finish=finish)
        return p

    # -- grid
    def dot_patch(self):
        st = self.st
        i = self.any_id(st.dots)
        body = {}
        for f in DOT_FIELDS:
            if self.rng.random() < 0.6:
                body[f] = self.rng.random() < 0.5
        d = st.dots[i]
        changes = [(f"/grid/dots/{i}/{f}", "set", d[f], body[f]) for f in DOT_FIELDS if f in body and body[f] != d[f]]
        headers = {}
        if self.rng.random() < 0.2:
            tag = self.etag_of(f"/grid/dots/{i}")
            if tag:
                headers["If-Match"] = tag

        def finish(status, resp):
            for f in DOT_FIELDS:
                if f in body:
                    d[f] = body[f]
            self.check_body(p, resp, st.dot(i))
            return [changes] if changes else []
        p = Plan("dot-patch", "PATCH", f"/grid/dots/{i}", body, headers=headers,
                 touch=[(c[0], "set", None) for c in changes], finish=finish)
        return p

    def dot_tap(self):
        st = self.st
        i = self.any_id(st.dots)
        d = st.dots[i]
        path = f"/grid/dots/{i}/isTapAnimated"
        txns = []
        if not d["isTapAnimated"]:
            txns.append([(path, "set", False, True)])
        txns.append([(path, "set", True, False)])

        def finish(status, resp):
            d["isTapAnimated"] = False
            self.check_body(p, resp, st.dot(i))
            return txns
        p = Plan("dot-tap", "POST", f"/grid/dots/{i}/tap", self.rng.choice([None, {}]),
                 touch=[(path, "set", None)], finish=finish)
        return p

    def grid_random(self):
        st = self.st

        def finish(status, resp):
            r, c, dot = resp.get("row"), resp.get("col"), resp.get("dot") or {}
            if not (isinstance(r, int) and 0 <= r < len(st.rows) and isinstance(c, int) and 0 <= c < len(st.rows[r])) \
                    or st.rows[r][c] != dot.get("id"):
                self.c.report.fail("wrong-state", f"POST /grid/random answered {short(resp)}: no such dot at that place in the model")
                return []
            i = dot["id"]
            d = st.dots[i]
            old = d["isRandomAnimated"]
            d["isRandomAnimated"] = True
            self.check_body(p, resp, {"row": r, "col": c, "dot": st.dot(i)})
            return [[(f"/grid/dots/{i}/isRandomAnimated", "set", False, True)]] if not old else []
        p = Plan("grid-random", "POST", "/grid/random", self.rng.choice([None, {}]), touch=[("?", "set", None)], finish=finish)
        return p

    def row_append(self):
        st = self.st
        n = self.rng.randint(1, 3)

        def finish(status, resp):
            r = len(st.rows)
            dots = resp.get("dots") or []
            ids = [d.get("id") for d in dots]
            st.rows.append(ids)
            for d in ids:
                st.dots[d] = {"isTapAnimated": False, "isRandomAnimated": False}
            want = {"row": r, "dots": [st.dot(d) for d in ids]}
            self.check_body(p, resp, want)
            if len(ids) != n:
                self.c.report.fail("wrong-state", f"{p.describe()} made {len(ids)} dots")
            return [[("/grid/rows", "insert", None, want)]]
        p = Plan("row-append", "POST", "/grid/rows", {"dots": n}, status=201, touch=[("/grid/rows", "insert", None)], finish=finish)
        return p

    def dot_append(self):
        st = self.st
        r = self.rng.randrange(len(st.rows))
        if len(st.rows[r]) >= 100:
            return self.dot_patch()

        def finish(status, resp):
            dot = resp.get("dot") or {}
            i = dot.get("id")
            c = len(st.rows[r])
            st.rows[r].append(i)
            st.dots[i] = {"isTapAnimated": False, "isRandomAnimated": False}
            want = {"row": r, "col": c, "dot": st.dot(i)}
            self.check_body(p, resp, want)
            return [[("/grid/rows", "insert", None, want)]]
        p = Plan("dot-append", "POST", f"/grid/rows/{r}/dots", self.rng.choice([None, {}]),
                 touch=[("/grid/rows", "insert", None)], finish=finish)
        return p

    # -- posts
    def post_create(self):
        st = self.st
        h = self.rng.choice([self.rng.randint(50, 400), self.rng.randint(50, 400) + 0.5])
        url = f"https://images.example/{self.rng.randrange(10**6)}.jpg"

        def finish(status, resp):
            i = resp["id"]
            st.posts[i] = {"imageURL": url, "height": h}
            self.check_body(p, resp, st.post(i))
            return [[("/posts", "insert", None, st.post(i))]]
        p = Plan("post-create", "POST", "/posts", {"imageURL": url, "height": h}, status=201,
                 touch=[("/posts", "insert", None)], finish=finish)
        return p

    def post_delete(self):
        st = self.st
        i = self.victim(st.posts)
        if i is None:
            return self.post_create()
        old = st.post(i)
        headers = {}
        if self.rng.random() < 0.2:
            tag = self.etag_of(f"/posts/{i}")
            if tag:
                headers["If-Match"] = tag

        def finish(status, resp):
            del st.posts[i]
            return [[("/posts", "remove", old, None)]]
        return Plan("post-delete", "DELETE", f"/posts/{i}", status=204, headers=headers,
                    touch=[("/posts", "remove", f"/posts/{i}")], finish=finish)

    # -- jobs (progress reported by clients)
    def job_create(self):
        st = self.st
        total = self.rng.choice([1, 5, 10, 100, 1000])

        def finish(status, resp):
            i = resp["id"]
            st.jobs[i] = {"current": 0, "total": total}
            self.check_body(p, resp, st.job(i))
            return [[("/jobs", "insert", None, st.job(i))]]
        p = Plan("job-create", "POST", "/jobs", {"total": total}, status=201, touch=[("/jobs", "insert", None)], finish=finish)
        return p

    def job_progress(self):
        st = self.st
        i = self.any_id(st.jobs)
        if i is None:
            return self.job_create()
        j = st.jobs[i]
        cur, total = j["current"], j["total"]
        r = self.rng.random()
        if r < 0.15 and cur > 0:
            value = self.rng.randrange(cur)          # backwards: 422
            return Plan("job-backwards", "POST", f"/jobs/{i}/progress", {"current": value}, status=422, finish=lambda s, b: [])
        if r < 0.3:
            value = cur                               # no-op
        elif r < 0.4:
            value = total + self.rng.randint(1, 50)   # clamped
        else:
            value = min(total, cur + self.rng.randint(1, max(1, total // 3)))
        new = min(value, total)
        changes = []
        if new != cur:
            changes.append((f"/jobs/{i}/progress", "set", {"current": cur, "total": total}, {"current": new, "total": total}))
            if new == total:
                changes.append((f"/jobs/{i}/isComplete", "set", False, True))

        def finish(status, resp):
            j["current"] = new
            self.check_body(p, resp, st.job(i))
            return [changes] if changes else []
        p = Plan("job-progress", "POST", f"/jobs/{i}/progress", {"current": value},
                 touch=[(c[0], "set", None) for c in changes], finish=finish)
        return p

    def job_delete(self):
        st = self.st
        i = self.victim(st.jobs)
        if i is None:
            return self.job_create()
        old = st.job(i)

        def finish(status, resp):
            del st.jobs[i]
            return [[("/jobs", "remove", old, None)]]
        return Plan("job-delete", "DELETE", f"/jobs/{i}", status=204, touch=[("/jobs", "remove", f"/jobs/{i}")], finish=finish)

    # -- games
    def game_create(self):
        st = self.st
        pairs = self.rng.randint(1, 4)
        body = {"pairs": pairs}
        if self.rng.random() < 0.5:
            body["seed"] = self.rng.randrange(-(1 << 40), 1 << 40)

        def finish(status, resp):
            i = resp["id"]
            cards = resp.get("cards") or []
            contents = collections.Counter(c.get("content") for c in cards)
            if len(cards) != 2 * pairs or any(v != 2 for v in contents.values()) \
                    or any(c.get("isFaceUp") or c.get("isMatched") for c in cards) or resp.get("isOver"):
                self.c.report.fail("wrong-state", f"{p.describe()} dealt {short(resp)}")
            st.games[i] = {"cards": [{"id": c["id"], "content": c["content"], "isFaceUp": False, "isMatched": False} for c in cards],
                           "isOver": False}
            return [[("/games", "insert", None, st.game(i))]]
        p = Plan("game-create", "POST", "/games", body, status=201, touch=[("/games", "insert", None)], finish=finish)
        return p

    def game_choose(self):
        st = self.st
        g = self.any_id(st.games)
        if g is None:
            return self.game_create()
        game = st.games[g]
        k = self.rng.randrange(len(game["cards"]))
        cards = [dict(c) for c in game["cards"]]
        card = cards[k]
        if not (card["isFaceUp"] or card["isMatched"]):
            up = [c for c in cards if c["isFaceUp"] and not c["isMatched"]]
            if len(up) == 1:
                card["isFaceUp"] = True
                if up[0]["content"] == card["content"]:
                    up[0]["isMatched"] = True
                    card["isMatched"] = True
            else:
                for c in cards:
                    if not c["isMatched"]:
                        c["isFaceUp"] = False
                card["isFaceUp"] = True
        changes = []
        for old, new in zip(game["cards"], cards):
            for f in ("isFaceUp", "isMatched"):
                if old[f] != new[f]:
                    changes.append((f"/games/{g}/cards/{new['id']}/{f}", "set", old[f], new[f]))
        over = all(c["isMatched"] for c in cards)
        if over != game["isOver"]:
            changes.append((f"/games/{g}/isOver", "set", game["isOver"], over))

        def finish(status, resp):
            game["cards"] = cards
            game["isOver"] = over
            self.check_body(p, resp, st.game(g))
            return [changes] if changes else []
        p = Plan("game-choose", "POST", f"/games/{g}/cards/{cards[k]['id']}/choose", self.rng.choice([None, {}]),
                 touch=[(c[0], "set", None) for c in changes], finish=finish)
        return p

    def game_delete(self):
        st = self.st
        g = self.victim(st.games)
        if g is None:
            return self.game_create()
        old = st.game(g)

        def finish(status, resp):
            del st.games[g]
            return [[("/games", "remove", old, None)]]
        return Plan("game-delete", "DELETE", f"/games/{g}", status=204, touch=[("/games", "remove", f"/games/{g}")], finish=finish)

    # -- refused writes: each must change nothing
    def refused(self):
        st = self.st
        rng = self.rng
        none = lambda s, b: []
        donut = self.any_id(st.donuts) or "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
        dot = self.any_id(st.dots)
        choices = [
            lambda: Plan("bad-json", "POST", "/truck/donuts", raw=b'{"name": "Bear Claw"', status=400, finish=none),
            lambda: Plan("wrong-type", "POST", "/truck/donuts", {"name": 7}, status=400, finish=none),
            lambda: Plan("unknown-field", "POST", "/truck/donuts", {"name": "X", "colour": "brown"}, status=400, finish=none),
            lambda: Plan("not-object", "POST", "/truck/donuts", ["Bear Claw"], status=400, finish=none),
            lambda: Plan("no-name", "POST", "/truck/donuts", {"glaze": "sugar"}, status=422, finish=none),
            lambda: Plan("long-name", "POST", "/truck/donuts", {"name": "x" * 201}, status=422, finish=none),
            lambda: Plan("empty-patch-name", "PATCH", f"/truck/donuts/{donut}", {"name": ""}, status=(422, 404), finish=none),
            lambda: Plan("unknown-donut", "PATCH", f"/truck/donuts/{self.missing_id()}", {"name": "X"}, status=404, finish=none),
            lambda: Plan("delete-unknown-donut", "DELETE", f"/truck/donuts/{self.missing_id()}", status=404, finish=none),
            lambda: Plan("bad-if-match", "PATCH", f"/truck/donuts/{donut}", {"name": "Zzz"}, headers={"If-Match": '"0123456789abcdef"'}, status=(412, 404), finish=none),
            lambda: Plan("truck-bad-if-match", "PATCH", "/truck", {"name": "Zzz"}, headers={"If-Match": '"0123456789abcdef"'}, status=412, finish=none),
            lambda: Plan("truck-empty-name", "PATCH", "/truck", {"name": ""}, status=422, finish=none),
            lambda: Plan("order-unknown-donut", "POST", "/truck/orders", {"donutId": self.missing_id(), "quantity": 1}, status=422, finish=none),
            lambda: Plan("order-quantity", "POST", "/truck/orders", {"donutId": donut, "quantity": rng.choice([0, 1001, 5000])}, status=422, finish=none),
            lambda: Plan("order-fraction", "POST", "/truck/orders", {"donutId": donut, "quantity": 1.5}, status=400, finish=none),
            lambda: Plan("order-delete-unknown", "DELETE", f"/truck/orders/{self.missing_id()}", status=404, finish=none),
            lambda: Plan("login-empty", "POST", "/account/login", {}, status=422, finish=none),
            lambda: Plan("login-blank", "POST", "/account/login", {"userName": ""}, status=422, finish=none),
            lambda: Plan("logout-field", "POST", "/account/logout", {"x": 1}, status=400, finish=none),
            lambda: Plan("dot-wrong-type", "PATCH", f"/grid/dots/{dot}", {"isRandomAnimated": "yes"}, status=400, finish=none),
            lambda: Plan("dot-bad-if-match", "PATCH", f"/grid/dots/{dot}", {"isTapAnimated": True}, headers={"If-Match": '"0123456789abcdef"'}, status=412, finish=none),
            lambda: Plan("dot-unknown", "PATCH", f"/grid/dots/{self.missing_id()}", {"isTapAnimated": True}, status=404, finish=none),
            lambda: Plan("tap-field", "POST", f"/grid/dots/{dot}/tap", {"x": 1}, status=400, finish=none),
            lambda: Plan("rows-too-many", "POST", "/grid/rows", {"dots": rng.choice([0, 101])}, status=422, finish=none),
            lambda: Plan("rows-type", "POST", "/grid/rows", {"dots": "2"}, status=400, finish=none),
            lambda: Plan("dot-append-no-row", "POST", f"/grid/rows/{len(st.rows) + rng.randint(0, 5)}/dots", status=404, finish=none),
            lambda: Plan("post-ftp", "POST", "/posts", {"imageURL": "ftp://images.example/a.jpg", "height": 10}, status=422, finish=none),
            lambda: Plan("post-height", "POST", "/posts", {"imageURL": "https://images.example/a.jpg", "height": 0}, status=422, finish=none),
            lambda: Plan("post-height-type", "POST", "/posts", {"imageURL": "https://images.example/a.jpg", "height": "10"}, status=400, finish=none),
            lambda: Plan("post-delete-unknown", "DELETE", f"/posts/{self.missing_id()}", status=404, finish=none),
            lambda: Plan("job-total", "POST", "/jobs", {"total": 0}, status=422, finish=none),
            lambda: Plan("job-step-only", "POST", "/jobs", {"total": 1000, "step": 230}, status=422, finish=none),
            lambda: Plan("job-type", "POST", "/jobs", {"total": "1000"}, status=400, finish=none),
            lambda: Plan("job-progress-unknown", "POST", f"/jobs/{self.missing_id()}/progress", {"current": 1}, status=404, finish=none),
            lambda: Plan("game-pairs", "POST", "/games", {"pairs": 27}, status=422, finish=none),
            lambda: Plan("game-type", "POST", "/games", {"pairs": "4"}, status=400, finish=none),
            lambda: Plan("game-unknown-card", "POST", f"/games/{self.any_id(st.games) or self.missing_id()}/cards/no-such-card/choose", status=404, finish=none),
        ]
        return rng.choice(choices)()

    def valid(self):
        st = self.st
        rng = self.rng
        total_dots = len(st.dots)
        table = [
            (self.truck_rename, 4), (self.donut_create, 3 if len(st.donuts) < 25 else 0.5),
            (self.donut_patch, 6), (self.donut_delete, 1 if len(st.donuts) < 25 else 4),
            (self.order_create, 4 if len(st.orders) < 30 else 1), (self.order_delete, 2 if len(st.orders) < 30 else 5),
            (self.login, 3), (self.logout, 2),
            (self.dot_patch, 6), (self.dot_tap, 3), (self.grid_random, 2),
            (self.row_append, 0.6 if total_dots < 120 else 0), (self.dot_append, 0.8 if total_dots < 120 else 0),
            (self.post_create, 3 if len(st.posts) < 25 else 0.5), (self.post_delete, 1 if len(st.posts) < 25 else 4),
            (self.job_create, 1.5 if len(st.jobs) < 15 else 0.3), (self.job_progress, 4), (self.job_delete, 0.5 if len(st.jobs) < 15 else 3),
            (self.game_create, 1 if len(st.games) < 6 else 0.1), (self.game_choose, 6), (self.game_delete, 0.4 if len(st.games) < 6 else 2),
        ]
        fns, weights = zip(*table)
        return rng.choices(fns, weights)[0]()


# ---------------------------------------------------------------------------
# Reads: what each GET answers and which paths it tracks


def pick_fields(rng, names, always_id=True):
    """None (no fields=) or a non-empty selection, sometimes with id."""
    if rng.random() < 0.55:
        return None
    chosen = [n for n in names if rng.random() < 0.5]
    if not chosen:
        chosen = [rng.choice(names)]
    if always_id and rng.random() < 0.3:
        chosen = ["id"] + chosen
    return chosen


def select(obj, fields, keep_id=True):
    if fields is None:
        return obj
    out = {}
    if keep_id and "id" in obj:
        out["id"] = obj["id"]
    for f in fields:
        if f in obj:
            out[f] = obj[f]
    return out


class Reads:
    def __init__(self, checker):
        self.c = checker
        self.st = checker.st
        self.rng = checker.rng

    def url(self, base, fields, extra=None):
        q = []
        if extra:
            q += extra
        if fields is not None:
            q.append("fields=" + ",".join(fields))
        return base + ("?" + "&".join(q) if q else "")

    def choose(self):
        """(url, expected body, tracked property paths, collection reads (PageRead))."""
        st, rng = self.st, self.rng
        opts = [self.truck, self.truck_donuts, self.donut, self.truck_orders, self.order, self.order_count, self.account,
                self.grid, self.grid_row, self.dot, self.dot_at, self.posts, self.post, self.staggered,
                self.jobs, self.job, self.games, self.game, self.card]
        weights = [3, 3.5, 3, 3, 1, 2, 2, 1, 1.5, 3, 2, 2.5, 1, 1, 2, 2, 1.5, 2, 2]
        while True:
            r = rng.choices(opts, weights)[0]()
            if r is not None:
                return r if len(r) == 4 else r + ([],)

    def elems(self, coll):
        st = self.st
        if coll.startswith("/games/"):
            g = coll.split("/")[2]
            return {c["id"]: c for c in st.games[g]["cards"]} if g in st.games else {}
        return {"/truck/donuts": st.donuts, "/truck/orders": st.orders, "/posts": st.posts,
                "/jobs": st.jobs, "/games": st.games}[coll]

    def rep(self, coll, i):
        st = self.st
        if coll.startswith("/games/"):
            return dict(self.elems(coll)[i])
        return {"/truck/donuts": st.donut, "/truck/orders": st.order, "/posts": st.post,
                "/jobs": st.job, "/games": st.game}[coll](i)

    def pick_after(self, coll):
        """A cursor from the pool of those the Links gave: (position, creation index)."""
        pool = self.c.pool.get(coll)
        if self.rng.random() < 0.08 or not pool:
            return (0, -1) if self.rng.random() < 0.5 else None
        pos = self.rng.choice(list(pool))
        return pos, self.c.log.idx[(coll, pool[pos])]

    def page_params(self, coll, whole=0.3):
        """(limit, after, order) of a random page; all None for the whole collection."""
        rng = self.rng
        if rng.random() < whole:
            return None, None, None
        limit = rng.randint(1, 4) if rng.random() < 0.85 else None
        order = rng.choice([None, "asc", "desc", "desc"])
        after = self.pick_after(coll) if rng.random() < 0.55 else None
        if limit is None and after is None and order is None:
            order = "asc"
        return limit, after, order

    def page(self, coll, fields, params=(None, None, None), prefix=None, newer=True):
        limit, after, order = params
        return PageRead(self, coll, fields, limit, after, order, prefix, newer)

    def coll_read(self, coll):
        name, names = COLLS[coll]
        f = pick_fields(self.rng, list(names))
        pr = self.page(coll, f, self.page_params(coll))
        q = pr.query()
        if f is not None:
            q.append("fields=" + ",".join(f))
        self.rng.shuffle(q)
        url = coll + ("?" + "&".join(q) if q else "")
        return url, {name: [select(self.rep(coll, i), f) for i in pr.shown]}, [], [pr]

    def truck(self):
        st = self.st
        f = pick_fields(self.rng, ["name", "donuts", "orders", "orderCount"], always_id=False)
        sel = f or ["name", "donuts", "orders", "orderCount"]
        body, paths, pages, q = {}, [], [], []
        if "name" in sel:
            paths.append("/truck/name")
            body["name"] = st.truck_name
        if "orderCount" in sel:
            paths.append("/truck/orderCount")
            body["orderCount"] = len(st.orders)
        for name in ("donuts", "orders"):
            coll = "/truck/" + name
            params = self.page_params(coll, whole=0.5)
            pr = self.page(coll, None, params, prefix=name + ".")
            if name in sel:
                body[name] = [self.rep(coll, i) for i in pr.shown]
                pages.append(pr)
                q += pr.query()
            elif self.rng.random() < 0.2:
                q += pr.query()   # a page of a collection not shown: no read of it
        if f is not None:
            q.append("fields=" + ",".join(f))
        self.rng.shuffle(q)
        return "/truck" + ("?" + "&".join(q) if q else ""), body, paths, pages

    def truck_donuts(self):
        return self.coll_read("/truck/donuts")

    def donut(self):
        st = self.st
        if not st.donuts:
            return None
        i = self.rng.choice(list(st.donuts))
        f = pick_fields(self.rng, list(DONUT_FIELDS))
        sel = [x for x in (f or DONUT_FIELDS) if x != "id"]
        return self.url(f"/truck/donuts/{i}", f), select(st.donut(i), f), [f"/truck/donuts/{i}/{x}" for x in sel]

    def truck_orders(self):
        return self.coll_read("/truck/orders")

    def order(self):
        st = self.st
        if not st.orders:
            return None
        i = self.rng.choice(list(st.orders))
        f = pick_fields(self.rng, ["donutId", "quantity"])
        sel = [x for x in (f or ["donutId", "quantity"]) if x != "id"]
        return self.url(f"/truck/orders/{i}", f), select(st.order(i), f), [f"/truck/orders/{i}/{x}" for x in sel]

    def order_count(self):
        f = ["orderCount"] if self.rng.random() < 0.2 else None
        return self.url("/truck/orderCount", f), {"orderCount": len(self.st.orders)}, ["/truck/orderCount"]

    def account(self):
        f = ["userName"] if self.rng.random() < 0.2 else None
        return self.url("/account", f), {"userName": self.st.user}, ["/account/userName"]

    def grid(self):
        st = self.st
        f = pick_fields(self.rng, list(DOT_FIELDS))
        sel = [x for x in (f or DOT_FIELDS) if x != "id"]
        body = {"rows": [[select(st.dot(i), f) for i in row] for row in st.rows]}
        paths = ["/grid/rows"] + [f"/grid/dots/{i}/{x}" for row in st.rows for i in row for x in sel]
        return self.url("/grid", f), body, paths

    def grid_row(self):
        st = self.st
        r = self.rng.randrange(len(st.rows))
        f = pick_fields(self.rng, list(DOT_FIELDS))
        sel = [x for x in (f or DOT_FIELDS) if x != "id"]
        body = {"row": r, "dots": [select(st.dot(i), f) for i in st.rows[r]]}
        paths = ["/grid/rows"] + [f"/grid/dots/{i}/{x}" for i in st.rows[r] for x in sel]
        return self.url(f"/grid/rows/{r}", f), body, paths

    def dot(self):
        st = self.st
        i = self.rng.choice(list(st.dots))
        f = pick_fields(self.rng, list(DOT_FIELDS))
        sel = [x for x in (f or DOT_FIELDS) if x != "id"]
        return self.url(f"/grid/dots/{i}", f), select(st.dot(i), f), [f"/grid/dots/{i}/{x}" for x in sel]

    def dot_at(self):
        st = self.st
        r = self.rng.randrange(len(st.rows))
        c = self.rng.randrange(len(st.rows[r]))
        i = st.rows[r][c]
        f = pick_fields(self.rng, list(DOT_FIELDS))
        sel = [x for x in (f or DOT_FIELDS) if x != "id"]
        return self.url(f"/grid/rows/{r}/dots/{c}", f), select(st.dot(i), f), [f"/grid/dots/{i}/{x}" for x in sel]

    def posts(self):
        return self.coll_read("/posts")

    def post(self):
        st = self.st
        if not st.posts:
            return None
        i = self.rng.choice(list(st.posts))
        f = pick_fields(self.rng, ["imageURL", "height"])
        sel = [x for x in (f or ["imageURL", "height"]) if x != "id"]
        return self.url(f"/posts/{i}", f), select(st.post(i), f), [f"/posts/{i}/{x}" for x in sel]

    def staggered(self):
        st = self.st
        n = self.rng.randint(1, 5)
        layout = self.rng.choice([None, "roundRobin", "balanced"])
        f = pick_fields(self.rng, ["imageURL", "height"])
        sel = [x for x in (f or ["imageURL", "height"]) if x != "id"]
        cols = [[] for _ in range(n)]
        sums = [0.0] * n
        for k, i in enumerate(st.posts):
            if layout == "balanced":
                j = min(range(n), key=lambda x: (sums[x], x))
            else:
                j = k % n
            cols[j].append(select(st.post(i), f))
            sums[j] += st.posts[i]["height"]
        extra = [] if (n == 2 and self.rng.random() < 0.3) else [f"columns={n}"]
        if extra == [] and n != 2:
            extra = [f"columns={n}"]
        if layout:
            extra.append(f"layout={layout}")
        # the whole of /posts, one shape: as any, every field of a post made after it counts as read
        return self.url("/posts/staggered", f, extra), {"columns": cols}, [], [self.page("/posts", f)]

    def jobs(self):
        return self.coll_read("/jobs")

    def job(self):
        st = self.st
        if not st.jobs:
            return None
        i = self.rng.choice(list(st.jobs))
        f = pick_fields(self.rng, ["progress", "isComplete"])
        sel = [x for x in (f or ["progress", "isComplete"]) if x != "id"]
        return self.url(f"/jobs/{i}", f), select(st.job(i), f), [f"/jobs/{i}/{x}" for x in sel]

    def games(self):
        return self.coll_read("/games")

    def game(self):
        st = self.st
        if not st.games:
            return None
        g = self.rng.choice(list(st.games))
        f = pick_fields(self.rng, ["cards", "isOver"])
        sel = [x for x in (f or ["cards", "isOver"]) if x != "id"]
        paths = [f"/games/{g}/isOver"] if "isOver" in sel else []
        pages = [self.page(f"/games/{g}/cards", None)] if "cards" in sel else []
        return self.url(f"/games/{g}", f), select(st.game(g), f), paths, pages

    def card(self):
        st = self.st
        if not st.games:
            return None
        g = self.rng.choice(list(st.games))
        card = self.rng.choice(st.games[g]["cards"])
        f = pick_fields(self.rng, list(CARD_FIELDS))
        sel = [x for x in (f or CARD_FIELDS) if x != "id"]
        return (self.url(f"/games/{g}/cards/{card['id']}", f), select(dict(card), f),
                [f"/games/{g}/cards/{card['id']}/{x}" for x in sel])

    def everything(self):
        """The reads the all-seeing observer makes: every resource, whole."""
        st = self.st
        whole = lambda c: self.page(c, None)
        return [
            ("/truck", st.truck(), ["/truck/name", "/truck/orderCount"], [whole("/truck/donuts"), whole("/truck/orders")]),
            ("/account", {"userName": st.user}, ["/account/userName"], []),
            ("/grid", st.grid(), ["/grid/rows"] + [f"/grid/dots/{i}/{x}" for i in st.dots for x in DOT_FIELDS], []),
            ("/posts", {"posts": [st.post(i) for i in st.posts]}, [], [whole("/posts")]),
            ("/jobs", {"jobs": [st.job(i) for i in st.jobs]}, [], [whole("/jobs")]),
            ("/games", {"games": [st.game(i) for i in st.games]}, [], [whole("/games")]),
        ]


COLLS = {
    "/truck/donuts": ("donuts", DONUT_FIELDS),
    "/truck/orders": ("orders", ("donutId", "quantity")),
    "/posts": ("posts", ("imageURL", "height")),
    "/jobs": ("jobs", ("progress", "isComplete")),
    "/games": ("games", ("cards", "isOver")),
}
LINK = re.compile(r'<([^>]*)>\s*;\s*rel="next"(?:\s*;\s*title="([^"]*)")?')


def parse_links(value):
    """{title or None: (path, {param: value})} of a Link header's rel="next" values."""
    out = {}
    for target, title in LINK.findall(value or ""):
        u = urllib.parse.urlsplit(target)
        out[title or None] = (u.path, dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True)), target)
    return out


class PageRead:
    """A read of a collection as the model predicts it: the whole of it or a
    page (`limit`, `after` = (position, creation index), `order`), the
    elements it shows and whether more follow (a Link); once answered, the
    shape it makes its observer read."""

    def __init__(self, reads, coll, fields, limit=None, after=None, order=None, prefix=None, newer=True):
        self.coll, self.fields, self.limit, self.after, self.order = coll, fields, limit, after, order
        self.prefix = prefix       # "orders." for the truck's orders; None on the collection's own resource
        self.newer = newer
        self.paged = limit is not None or after is not None or order is not None
        self.desc = order == "desc"
        log = reads.c.log
        d = reads.elems(coll)
        for i in d:
            if (coll, i) not in log.idx:
                log.register(coll, i, 0)
        ids = list(d)
        self.newest = log.idx[(coll, ids[-1])] if ids else -1
        if self.desc:
            ids.reverse()
        if after is not None:
            a = after[1]
            ids = [i for i in ids if (log.idx[(coll, i)] < a if self.desc else log.idx[(coll, i)] > a)]
        self.shown = ids[:limit] if limit else ids
        self.more = len(ids) > len(self.shown)
        self.last_idx = log.idx[(coll, self.shown[-1])] if self.shown else None

    def query(self):
        p = self.prefix or ""
        q = []
        if self.limit is not None:
            q.append(f"{p}limit={self.limit}")
        if self.after is not None:
            q.append(f"{p}after={self.after[0]}")
        if self.order is not None:
            q.append(f"{p}order={self.order}")
        return q

    def shape(self, frm, link_pos):
        if not self.paged:
            lo, hi, pf, pt = -1, INF, None, None
        elif not self.desc:
            lo = self.after[1] + 1 if self.after else -1
            pf = self.after[0] + 1 if self.after else None
            hi, pt = (self.last_idx, link_pos) if self.more else (INF, None)
        else:
            hi = self.after[1] - 1 if self.after else INF
            pt = self.after[0] - 1 if self.after else None
            lo, pf = (self.last_idx, link_pos) if self.more else (-1, None)
        return MShape(self.coll, self.fields, lo, hi, frm, self.newer, pf, pt, self.newest)

    def describe(self):
        return f"{self.coll} {'page ' + ' '.join(self.query()) if self.paged else 'whole'}{' fields ' + ','.join(self.fields) if self.fields else ''}"
