#!/usr/bin/env python3
"""Drives the live page (GET /) in two headless Chromium windows against a
real observable-server, and checks that observation reaches both:

  0. the truck's orders a page at a time: none, three, then thousands made
     while the pages watch (and a third page opened after them): the count
     and the newest five show, Older/Newer/Newest page through them, a new
     order and removals show on every page without a reload, and no page
     reads more of the truck than a page;
  1. a dot clicked in the first page scales up in the second within a second;
  2. an order and a sign-in made over HTTP show in both pages;
  3. Random makes the same dot glow in both, and the glow is then reset;
  4. a page without the write token observes but cannot write (401 shown,
     buttons disabled) until the token is typed in;
  5. signing in and out on one page shows on both;
  6. a job the server advances moves both pages' bars to its total, and a
     job whose progress is reported by hand follows the reports;
  7. two cards chosen over HTTP show face up on both pages, and cards
     chosen on the pages follow the game's rules on both;
  8. posts show in both pages in the layout each page chose, each tile its
     image at the post's height (images built in with the page), or, where
     the image cannot load (another server's, or missing), the box with the
     height and the file name;
  8a. the filtered views (query reads) stay equal to a fresh read while
     others write: a big order for the donut chosen enters its biggest
     orders, a job completing moves from running to finished, a taller post
     enters the ten tallest and the eleventh leaves, a removal refills;
  9. after SIGTERM both pages say they are disconnected, and after a restart
     on the same port and database they recover and follow a new order;
 10. changes made while the pages were away, and then pruned from the
     change log, reach both pages once the server is back.

The first page follows the change feed as a stream when the server offers
one (long-polls otherwise); the second is opened with #feed=poll and always
long-polls, so both ways are exercised.

The server runs with OBSERVABLE_TOKEN set (unless --no-token): the first page
gets the token as #token=… in its URL, the second starts without one.
Screenshots of both pages and the server's log go to artifacts/; a
screenshot of the first page and one of each of its parts are copied to
docs/images/. Exits 1 on any failure.

Usage: scripts/browser-test.py [--binary PATH] [--artifacts DIR] [--images DIR] [--no-token] [--orders N]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from harness import Server, free_port, serve_command

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "browser-test-write-token"
TAP_LIMIT = 1.0  # seconds from the click to the other page's animation
GLAZED = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
CHOCOLATE = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0002"
MAPLE = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0004"
DONUTS = [GLAZED, CHOCOLATE, "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0003", MAPLE]
QUERY_ORDERS, TALLEST = 5, 10  # the filtered views' limits (QUERY_ORDERS_SHOWN, TALLEST_SHOWN in web/app.js)
PAGE_SIZE = 5  # orders on a page of the truck's list (ORDERS_SHOWN in web/app.js)
POST_SCALE, POST_MAX_PX = 0.3, 240  # a post's tile: pixels per unit of height, and the tallest (web/app.js)

# What the page fetched from the truck, with each answer's body size.
TRUCK_READS = """
return performance.getEntriesByType("resource")
  .filter((e) => e.name.includes("/truck?") || e.name.includes("/truck/orders?")).map((e) => ({url: e.name, bytes: e.encodedBodySize}));
"""

# The parts of the page, each shot on its own: (section id, image name).
PARTS = [("grid-card", "page-grid.png"), ("truck-card", "page-truck.png"), ("truck-card", "page-truck-older.png"),
         ("account-card", "page-account.png"), ("jobs-card", "page-jobs.png"), ("game-card", "page-game.png"),
         ("posts-card", "page-posts.png"), ("queries-card", "page-queries.png")]


class Failure(Exception):
    pass


def make_server(binary, database, port, log_path, token, arguments=()):
    """observable-server on `port`, with the write token `token` (none if
    None) and no read token whatever this process's environment says."""
    env = dict(os.environ)
    env.pop("OBSERVABLE_TOKEN", None)
    env.pop("OBSERVABLE_READ_TOKEN", None)
    if token:
        env["OBSERVABLE_TOKEN"] = token
    # The scenarios write thousands of orders from 127.0.0.1 at once, and the
    # pages read from it: one trusted client, past the write rate and the rows.
    env.setdefault("OBSERVABLE_TRUSTED_ADDRESSES", "127.0.0.1")
    return Server(serve_command(binary, database, port, arguments), port, log_path=log_path, env=env)


def request(method, url, body=None, token=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def offers_stream(base):
    """Whether the server answers the change feed as an event stream: such a
    server sends its headers at once, one without streams parks a poll."""
    _, observer = request("POST", base + "/observers")
    req = urllib.request.Request(f"{base}/observers/{observer['id']}/changes", headers={"Accept": "text/event-stream"})
    try:
        with urllib.request.urlopen(req, timeout=3) as response:
            return response.headers.get("Content-Type", "").startswith("text/event-stream")
    except (OSError, urllib.error.URLError):
        return False
    finally:
        request("DELETE", f"{base}/observers/{observer['id']}")


def browser():
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1100,1400", "--hide-scrollbars", "--disable-gpu"):
        options.add_argument(argument)
    if os.path.exists("/usr/bin/chromium"):
        options.binary_location = "/usr/bin/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chromedriver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))


def wait_until(what, predicate, timeout, since=None, interval=0.02):
    """Polls `predicate` until it returns a truthy value; returns the value
    and the seconds since `since` (a time.monotonic(); default: now)."""
    start = time.monotonic() if since is None else since
    while True:
        value = predicate()
        if value:
            return value, time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise Failure(f"{what}: not within {timeout} s")
        time.sleep(interval)


def matching(predicate, value):
    return value if predicate(value) else None


# What the test reads from a page: the data- attributes the page keeps.
PAGE_STATE = """
const status = document.getElementById("status");
const all = (selector) => [...document.querySelectorAll(selector)];
const game = document.getElementById("game");
return {
  status: status.dataset.state, statusText: status.textContent,
  feed: document.body.dataset.feed || null,
  orderCount: document.getElementById("order-count").dataset.value ?? null,
  orders: all("#orders li .order-text").map((span) => span.textContent),
  orderIds: all("#orders li").map((li) => li.dataset.orderId),
  ordersGone: all('#orders li[data-gone="true"]').map((li) => li.dataset.orderId),
  ordersPage: document.getElementById("orders").dataset.page ?? null,
  ordersState: document.getElementById("orders-state").textContent,
  ordersReading: document.getElementById("orders-state").dataset.reading === "true",
  olderDisabled: document.getElementById("orders-older").disabled,
  newerDisabled: document.getElementById("orders-newer").disabled,
  newestText: document.getElementById("orders-newest").textContent,
  userName: document.getElementById("user-name").textContent,
  rows: all("#grid .row").map((row) => row.children.length),
  donuts: all("#donuts li").map((li) => li.textContent),
  glowing: all('.dot[data-glowing="true"]').map((d) => d.dataset.dotId),
  jobs: Object.fromEntries(all("#jobs .job").map((job) => [job.dataset.jobId, {
    current: Number(job.dataset.current), total: Number(job.dataset.total),
    complete: job.dataset.complete === "true", bar: job.querySelector("progress").value,
    reportShown: !job.querySelector(".report").hidden}])),
  game: game.dataset.gameId || null,
  cards: all("#game .playing-card").map((card) => ({id: card.dataset.cardId, faceUp: card.dataset.faceUp === "true",
    matched: card.dataset.matched === "true", shown: card.textContent})),
  matchedPairs: Number(document.getElementById("game-state").dataset.matchedPairs),
  layout: document.getElementById("posts").dataset.layout,
  columns: all("#posts .post-column").map((column) => [...column.children].map((post) => post.dataset.postId)),
  posts: Object.fromEntries(all("#posts .post").map((post) => {
    const image = post.querySelector("img");
    return [post.dataset.postId, {image: post.dataset.image ?? null, text: post.textContent,
      height: post.getBoundingClientRect().height, styledHeight: parseFloat(post.style.height),
      drawn: image ? image.complete && image.naturalWidth > 0 : false,
      imageHeight: image ? image.getBoundingClientRect().height : null,
      imageWidth: image ? image.getBoundingClientRect().width : null, width: post.getBoundingClientRect().width}];
  })),
  changesHeard: all("#changes li").map((li) => li.textContent),
  observer: document.body.dataset.observer || null,
  access: document.getElementById("access").dataset.access,
  message: document.getElementById("message").hidden ? null : document.getElementById("message").textContent,
  messageStatus: document.getElementById("message").dataset.status ?? null,
  randomDisabled: document.getElementById("random").disabled,
  orderDisabled: document.getElementById("add-order").disabled,
  queryDonut: document.getElementById("query-donut").value,
  queryOrders: all("#query-orders li").map((li) => li.dataset.orderId),
  queryOrdersText: all("#query-orders li").map((li) => li.textContent),
  queryOrdersState: document.getElementById("query-orders-state").textContent,
  running: all("#query-running li").map((li) => li.dataset.jobId),
  runningText: all("#query-running li").map((li) => li.textContent),
  finished: all("#query-finished li").map((li) => li.dataset.jobId),
  tallest: all("#query-tallest li").map((li) => li.dataset.postId),
  queries: Object.fromEntries(["query-orders", "query-running", "query-finished", "query-tallest"].map((id) =>
    [id, document.getElementById(id).dataset.query ?? null])),
};
"""

DOT_STATE = """
const d = document.querySelector(`[data-dot-id="${arguments[0]}"]`);
return d ? {state: d.dataset.state, taps: Number(d.dataset.taps), transform: getComputedStyle(d).transform} : null;
"""


class Check:
    def __init__(self, results):
        self.results = results

    def record(self, name, **timings):
        self.results.append({"check": name, **{k: round(v, 3) for k, v in timings.items()}})
        shown = ", ".join(f"{k} {v:.3f} s" for k, v in timings.items())
        print(f"ok   {name}: {shown}", flush=True)


class Run:
    """What the checks share: the server, the two pages, where images go."""

    def __init__(self, binary, database, server, first, second, token, artifacts, check):
        self.binary, self.database = binary, database
        self.server, self.first, self.second = server, first, second
        self.pages = [first, second]
        self.token, self.artifacts, self.check = token, artifacts, check
        self.count = 0  # orders the pages should count

    def state(self, page):
        return page.execute_script(PAGE_STATE)

    def post(self, path, body=None, expect=(200, 201)):
        status, answer = request("POST", self.server.base + path, body, self.token)
        if status not in expect:
            raise Failure(f"POST {path} answered {status}: {answer}")
        return answer

    def get(self, path):
        status, answer = request("GET", self.server.base + path, token=self.token)
        if status != 200:
            raise Failure(f"GET {path} answered {status}: {answer}")
        return answer

    def both(self, what, predicate, timeout=2, since=None):
        """Waits until `predicate(state)` holds in both pages; the seconds each took."""
        since = time.monotonic() if since is None else since
        _, t1 = wait_until(f"page 1: {what}", lambda: matching(predicate, self.state(self.first)), timeout, since=since)
        _, t2 = wait_until(f"page 2: {what}", lambda: matching(predicate, self.state(self.second)), timeout, since=since)
        return t1, t2

    def shoot(self, section, name):
        """A screenshot of one part of the first page."""
        self.first.find_element(By.ID, section).screenshot(os.path.join(self.artifacts, name))


def check_ready(run, stream):
    """Both pages have read everything with their own observer and follow the feed."""
    def ready(s):
        return s["status"] == "live" and s["rows"] == [3, 2, 4] and s["orderCount"] is not None \
            and len(s["donuts"]) == 4 and s["layout"] == "roundRobin" and len(s["columns"]) == 3
    t1, t2 = run.both("live", ready, timeout=15)
    one, two = run.state(run.first), run.state(run.second)
    if one["observer"] == two["observer"]:
        raise Failure("the two pages share an observer")
    if "#token" in run.first.current_url:
        raise Failure("the token stayed in the address bar")
    expected = "stream" if stream else "poll"
    if one["feed"] != expected or two["feed"] != "poll":
        raise Failure(f"page 1 should follow the feed by {expected} and page 2 by poll: {one['feed']}, {two['feed']}")
    run.check.record(f"both pages drew the grid (3, 2, 4), the menu and the count; page 1 by {expected}, page 2 by poll",
                     page1=t1, page2=t2)
    return one, two


def newest_ids(run, count):
    """The ids of the newest `count` orders, newest first, as the server lists them."""
    return [order["id"] for order in run.get(f"/truck/orders?fields=id&order=desc&limit={count}")["orders"]]


def page_through(run, page, button, what, predicate, timeout=5):
    """Clicks one of a page's paging buttons and waits until the orders it
    then shows satisfy `predicate`; the seconds it took."""
    pressed = time.monotonic()
    page.find_element(By.ID, button).click()
    _, took = wait_until(what, lambda: matching(lambda s: not s["ordersReading"] and predicate(s), run.state(page)),
                         timeout, since=pressed)
    return took


def check_few_orders(run):
    """On a new database the truck has no orders: both pages say so and
    cannot page; three orders show newest first, still on one page."""
    for page in run.pages:
        s = run.state(page)
        if s["orderCount"] != "0" or s["orders"] or s["ordersState"] != "No orders yet." or not s["olderDisabled"] \
                or not s["newerDisabled"]:
            raise Failure(f"a page on a database without orders shows {s['orderCount']} orders {s['orders']}, "
                          f"{s['ordersState']!r}, Older disabled {s['olderDisabled']}")
    sent = time.monotonic()
    for quantity in (1, 2, 3):
        run.post("/truck/orders", {"donutId": GLAZED, "quantity": quantity})
    t1, t2 = run.both("shows three orders, newest first, on one page", lambda s: s["orderCount"] == "3"
                      and s["orders"] == ["3 × Glazed", "2 × Glazed", "1 × Glazed"] and s["olderDisabled"], since=sent)
    run.check.record("no orders: both pages say so; three orders over HTTP shown newest first, no older page",
                     page1=t1, page2=t2)


def check_many_orders(run, many):
    """The truck with thousands of orders: made over HTTP while both pages
    watch, and read by a third page opened afterwards. The count and the
    newest five show, newest first; Older and Newer page through them; a
    new order and a removal show without a reload."""
    first, second = run.first, run.second
    before = int(run.state(first)["orderCount"])
    sent = time.monotonic()

    def order(index):
        return request("POST", run.server.base + "/truck/orders",
                       {"donutId": DONUTS[index % len(DONUTS)], "quantity": index % 9 + 1}, run.token)[0]

    with ThreadPoolExecutor(8) as pool:
        refused = [status for status in pool.map(order, range(many)) if status != 201]
    if refused:
        raise Failure(f"{len(refused)} of {many} orders were refused: {sorted(set(refused))}")
    made = time.monotonic() - sent
    total = before + many
    newest = newest_ids(run, 3 * PAGE_SIZE)
    c1, c2 = run.both(f"counts {total} orders and shows the newest five", lambda s: s["orderCount"] == str(total)
                      and s["orderIds"] == newest[:PAGE_SIZE], timeout=30, since=sent)
    run.check.record(f"{many} orders made over HTTP (8 at a time, {made:.1f} s): both pages count them and show the "
                     "newest five", page1=c1 - made, page2=c2 - made)

    # A page opened now reads the newest page of the truck, not every order.
    opened = time.monotonic()
    third = browser()
    try:
        third.get(run.server.base + "/#feed=poll")
        shown, t3 = wait_until("page 3 shows the count and the newest five", lambda: matching(
            lambda s: s["status"] == "live" and s["orderCount"] == str(total) and s["orderIds"] == newest[:PAGE_SIZE],
            run.state(third)), 15, since=opened)
        count_text = third.find_element(By.ID, "order-count").text
        if count_text != f"{total:,}":
            raise Failure(f"page 3 shows the count as {count_text!r}")
        if shown["olderDisabled"] or not shown["newerDisabled"] or not shown["ordersState"].startswith("Newest 5"):
            raise Failure(f"page 3 should be on the newest page with older ones to go to: {shown['ordersState']!r}")
        for read in third.execute_script(TRUCK_READS):
            if "limit=" not in read["url"] or read["bytes"] > 4096:
                raise Failure(f"page 3 read more than a page of the truck: {read}")

        # Older on the first two pages: past the five shown (the first page
        # heard every order arrive, so its first Link is long stale) twice.
        o1 = page_through(run, first, "orders-older", "page 1 shows orders 6–10",
                          lambda s: s["orderIds"] == newest[PAGE_SIZE:2 * PAGE_SIZE])
        o1 += page_through(run, first, "orders-older", "page 1 shows orders 11–15",
                           lambda s: s["orderIds"] == newest[2 * PAGE_SIZE:] and not s["newerDisabled"])
        o2 = page_through(run, second, "orders-older", "page 2 shows orders 6–10",
                          lambda s: s["orderIds"] == newest[PAGE_SIZE:2 * PAGE_SIZE])
        o2 += page_through(run, second, "orders-older", "page 2 shows orders 11–15",
                           lambda s: s["orderIds"] == newest[2 * PAGE_SIZE:])
        run.check.record("Older twice in pages 1 and 2 shows orders 11–15 from the newest", page1=o1, page2=o2)

        # A new order from outside: the newest page shows it on top, the
        # older pages keep their orders, and every count moves.
        sent = time.monotonic()
        fresh = run.post("/truck/orders", {"donutId": CHOCOLATE, "quantity": 4})["id"]
        total += 1
        n3 = wait_until("page 3 shows the new order on top", lambda: matching(
            lambda s: s["orderCount"] == str(total) and s["orderIds"] == [fresh] + newest[:PAGE_SIZE - 1]
            and s["orders"][0] == "4 × Chocolate Frosted", run.state(third)), 2, since=sent)[1]
        n1, n2 = run.both("counts the new order and keeps its older page", lambda s: s["orderCount"] == str(total)
                          and s["orderIds"] == newest[2 * PAGE_SIZE:] and s["newestText"] == "Newest (+1)", since=sent)
        run.check.record("an order over HTTP: on top of page 3's newest five, counted in all three, the older "
                         "pages unchanged", page3=n3, page1=n1, page2=n2)
        p3 = page_through(run, third, "orders-older", "page 3 shows orders 6–10",
                          lambda s: s["orderIds"] == ([fresh] + newest)[PAGE_SIZE:2 * PAGE_SIZE])

        # A removal clicked on page 1's older page: shown gone in both
        # pages that show it, and counted in all three.
        gone = newest[2 * PAGE_SIZE + 1]
        pressed = time.monotonic()
        first.find_element(By.CSS_SELECTOR, f'#orders li[data-order-id="{gone}"] .remove-order').click()
        total -= 1
        r1, r2 = run.both("shows the removed order gone", lambda s: s["orderCount"] == str(total)
                          and s["ordersGone"] == [gone] and s["orderIds"] == newest[2 * PAGE_SIZE:], since=pressed)
        wait_until("page 3 counts the removal", lambda: run.state(third)["orderCount"] == str(total), 2, since=pressed)
        time.sleep(0.6)  # the count's bump runs its course
        run.shoot("truck-card", "page-truck-older.png")
        run.check.record("an order removed in page 1's older page shown gone in pages 1 and 2 and counted in all",
                         page1=r1, page2=r2)

        # Back: Newer reads page 2 again (the removed order is not on it),
        # Newest the newest page again, with the new order on top.
        b1 = page_through(run, first, "orders-newer", "page 1 shows orders 6–10 again",
                          lambda s: s["orderIds"] == newest[PAGE_SIZE:2 * PAGE_SIZE] and s["newestText"] == "Newest (+1)")
        top = newest_ids(run, PAGE_SIZE)
        b1 += page_through(run, first, "orders-newest", "page 1 shows the newest five again",
                           lambda s: s["orderIds"] == top and s["olderDisabled"] is False and s["newerDisabled"])
        b2 = page_through(run, second, "orders-newest", "page 2 shows the newest five again",
                          lambda s: s["orderIds"] == top and s["newerDisabled"])
        p3 += page_through(run, third, "orders-newer", "page 3 shows the newest five again",
                           lambda s: s["orderIds"] == top and s["newerDisabled"])
        # Live again on the newest page: an order removed from it goes.
        sent = time.monotonic()
        status, _ = request("DELETE", f"{run.server.base}/truck/orders/{fresh}", token=run.token)
        if status != 204:
            raise Failure(f"DELETE /truck/orders/{fresh} answered {status}")
        total -= 1
        d1, d2 = run.both("drops the removed order from the newest page", lambda s: s["orderCount"] == str(total)
                          and s["orderIds"] == top[1:], since=sent)
        run.check.record("Newer and Newest read the newer pages again; a removal drops from the newest page",
                         back_page1=b1, back_page2=b2, page3=p3, removed_page1=d1, removed_page2=d2)
    finally:
        third.quit()


def check_tap(run):
    """A tap in the first page animates the same circle in the second."""
    first, second = run.first, run.second
    dot_id = first.find_element(By.CSS_SELECTOR, '#grid .row[data-row="2"] .dot[data-col="1"]').get_attribute("data-dot-id")
    taps1 = first.execute_script(DOT_STATE, dot_id)["taps"]
    taps2 = second.execute_script(DOT_STATE, dot_id)["taps"]
    circle = first.find_element(By.CSS_SELECTOR, f'[data-dot-id="{dot_id}"]')
    clicked = time.monotonic()
    circle.click()
    seen, tap2 = wait_until("page 2 shows the tap", lambda: matching(
        lambda d: d["state"] == "tapped", second.execute_script(DOT_STATE, dot_id)), TAP_LIMIT, since=clicked, interval=0.01)
    if seen["taps"] != taps2 + 1 or seen["transform"] in ("none", ""):
        raise Failure(f"page 2's circle is not scaled up: {seen}")
    _, tap1 = wait_until("page 1 shows its own tap", lambda: first.execute_script(DOT_STATE, dot_id)["taps"] == taps1 + 1,
                         2, since=clicked)
    _, settled = wait_until("the tap ends on page 2", lambda: second.execute_script(DOT_STATE, dot_id)["state"] == "idle",
                            3, since=clicked)
    animated = second.execute_script("return [...document.querySelectorAll('.dot')].filter(d => d.dataset.taps !== '0').length")
    if animated != 1:
        raise Failure(f"{animated} circles animated on page 2; only the tapped one should")
    run.check.record("tap in page 1 animates the same circle in page 2",
                     page2_tapped=tap2, page1_tapped=tap1, page2_back_to_idle=settled)


def check_order_and_sign_in(run):
    """An order and a sign-in over HTTP show in both pages."""
    run.count = int(run.state(run.first)["orderCount"])
    sent = time.monotonic()
    run.post("/truck/orders", {"donutId": GLAZED, "quantity": 2})
    run.count += 1
    o1, o2 = run.both("counts the order and lists it",
                      lambda s: s["orderCount"] == str(run.count) and s["orders"][:1] == ["2 × Glazed"], since=sent)
    run.check.record("order over HTTP counted and listed in both pages", page1=o1, page2=o2)
    sent = time.monotonic()
    run.post("/account/login", {"userName": "Ada"})
    u1, u2 = run.both("shows the user", lambda s: s["userName"] == "Ada", since=sent)
    run.check.record("sign-in over HTTP shown in both pages", page1=u1, page2=u2)


def check_random(run):
    """Random makes one dot glow in both pages; a page then resets it."""
    first, second = run.first, run.second
    pressed = time.monotonic()
    first.find_element(By.ID, "random").click()
    g1, t1 = wait_until("a dot glows in page 1", lambda: run.state(first)["glowing"], 2, since=pressed)
    g2, t2 = wait_until("the same dot glows in page 2", lambda: run.state(second)["glowing"], 2, since=pressed)
    if g1 != g2 or len(g1) != 1:
        raise Failure(f"different glows: page 1 {g1}, page 2 {g2}")
    time.sleep(0.3)  # the glow's CSS transition runs its course
    first.save_screenshot(os.path.join(run.artifacts, "page-1.png"))
    second.save_screenshot(os.path.join(run.artifacts, "page-2.png"))
    run.shoot("grid-card", "page-grid.png")
    if not run.state(first)["glowing"] or not run.state(second)["glowing"]:
        raise Failure("the glow ended before the screenshots; it should last about a second")
    ended = max(run.both("the glow ends", lambda s: not s["glowing"], timeout=4, since=pressed))
    status, dot = request("GET", run.server.base + f"/grid/dots/{g1[0]}", token=run.token)
    if status != 200 or dot["isRandomAnimated"]:
        raise Failure(f"the dot is still glowing on the server after the pages ended the glow: {status} {dot}")
    run.check.record("Random glows the same dot in both pages, then a page resets it",
                     page1=t1, page2=t2, glow_over_in_both=ended)


def check_read_only(run):
    """Without the write token a page observes but cannot write."""
    second = run.second
    # Its own reset of the glow may already have been refused; otherwise a
    # click on Add order is.
    if not run.state(second)["orderDisabled"]:
        second.find_element(By.ID, "add-order").click()
    page, _ = wait_until("page 2 shows the 401", lambda: matching(lambda s: s["messageStatus"] == "401", run.state(second)), 2)
    if "401" not in (page["message"] or ""):
        raise Failure(f"the 401 is not shown: {page['message']!r}")
    page, _ = wait_until("page 2's buttons are disabled",
                         lambda: matching(lambda s: s["randomDisabled"] and s["orderDisabled"], run.state(second)), 2)
    if page["access"] != "read-only" or page["orderCount"] != str(run.count):
        raise Failure(f"page 2 should be read-only with the count unchanged: {page}")
    disabled = second.execute_script("return [...document.querySelectorAll('button.write')].filter(b => !b.disabled).length")
    if disabled != 0:
        raise Failure(f"{disabled} write buttons of page 2 are still enabled")
    second.save_screenshot(os.path.join(run.artifacts, "page-2-read-only.png"))
    second.find_element(By.ID, "token").send_keys(run.token)
    second.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
    wait_until("page 2's buttons are enabled with the token", lambda: not run.state(second)["orderDisabled"], 2)
    pressed = time.monotonic()
    second.find_element(By.ID, "add-order").click()
    run.count += 1
    o1, o2 = run.both("counts page 2's order", lambda s: s["orderCount"] == str(run.count), since=pressed)
    run.check.record("page without the token: 401 shown and buttons disabled, then writes with the typed token",
                     order_in_page1=o1, order_in_page2=o2)


def check_account(run):
    """Signing in on one page and out on the other shows on both."""
    first, second = run.first, run.second
    first.find_element(By.ID, "login-name").send_keys("Grace")
    pressed = time.monotonic()
    first.find_element(By.ID, "sign-in").click()
    i1, i2 = run.both("shows Grace signed in", lambda s: s["userName"] == "Grace", since=pressed)
    run.shoot("account-card", "page-account.png")
    pressed = time.monotonic()
    second.find_element(By.ID, "sign-out").click()
    o1, o2 = run.both("shows nobody signed in", lambda s: s["userName"] == "signed out", since=pressed)
    run.check.record("sign-in on page 1 and sign-out on page 2 shown in both pages",
                     signed_in_page1=i1, signed_in_page2=i2, signed_out_page1=o1, signed_out_page2=o2)


def check_jobs(run):
    """A job the server advances reaches its total on both pages, its bar
    moving on the way; a job reported by hand follows its reports."""
    first, second = run.first, run.second
    sent = time.monotonic()
    job = run.post("/jobs", {"total": 100, "step": 10, "intervalMs": 200})["id"]
    seen = {1: [], 2: []}  # the distinct values each page's bar showed
    shot = False
    while True:
        for index, page in ((1, first), (2, second)):
            shown = run.state(page)["jobs"].get(job)
            if shown and (not seen[index] or seen[index][-1] != shown["bar"]):
                seen[index].append(shown["bar"])
        if not shot and seen[1] and 40 <= seen[1][-1] <= 70:
            run.shoot("jobs-card", "page-jobs.png")
            shot = True
        if seen[1][-1:] == [100] and seen[2][-1:] == [100]:
            break
        if time.monotonic() - sent > 10:
            raise Failure(f"the job did not reach its total on both pages within 10 s: {seen}")
        time.sleep(0.02)
    finished = time.monotonic() - sent
    for index, values in seen.items():
        if values != sorted(values) or len([v for v in values if 0 < v < 100]) < 3:
            raise Failure(f"page {index}'s bar should move up step by step: {values}")
        if not run.state(run.pages[index - 1])["jobs"][job]["complete"]:
            raise Failure(f"page {index} does not show the job complete")
    if run.get(f"/jobs/{job}")["isComplete"] is not True:
        raise Failure("the server does not say the job is complete")
    run.check.record(f"a job the server advances moves both pages' bars to its total ({len(seen[1])} and "
                     f"{len(seen[2])} values shown)", both_at_total=finished)

    sent = time.monotonic()
    manual = run.post("/jobs", {"total": 50})["id"]
    run.both("shows the new job", lambda s: manual in s["jobs"], since=sent)
    run.post(f"/jobs/{manual}/progress", {"current": 20})
    r1, r2 = run.both("shows the reported progress", lambda s: s["jobs"][manual]["current"] == 20)
    pressed = time.monotonic()
    second.find_element(By.CSS_SELECTOR, f'.job[data-job-id="{manual}"] .report').click()
    b1, b2 = run.both("shows the progress reported by page 2", lambda s: s["jobs"][manual]["current"] == 25, since=pressed)
    run.check.record("a job reported by hand: over HTTP, then with page 2's +10% button, shown in both pages",
                     http_page1=r1, http_page2=r2, button_page1=b1, button_page2=b2)


def check_game(run):
    """Two cards chosen over HTTP show face up on both pages; cards chosen
    on the pages follow the lecture's rules on both."""
    first, second = run.first, run.second
    sent = time.monotonic()
    game = run.post("/games", {"pairs": 3, "seed": 5})
    cards = game["cards"]
    a = cards[0]
    b = next(card for card in cards if card["content"] != a["content"])
    c = next(card for card in cards[1:] if card["content"] == a["content"])
    d1, d2 = run.both("shows the new game face down", lambda s: s["game"] == game["id"] and len(s["cards"]) == 6
                      and not any(card["faceUp"] for card in s["cards"]), since=sent)

    def face_up(s):
        return {card["id"]: card["shown"] for card in s["cards"] if card["faceUp"]}

    sent = time.monotonic()
    run.post(f"/games/{game['id']}/cards/{a['id']}/choose")
    run.post(f"/games/{game['id']}/cards/{b['id']}/choose")
    two_up = {a["id"]: a["content"], b["id"]: b["content"]}
    h1, h2 = run.both("shows the two chosen cards face up", lambda s: face_up(s) == two_up, since=sent)
    # A third card turns the unmatched pair down; then A matches it.
    pressed = time.monotonic()
    second.find_element(By.CSS_SELECTOR, f'[data-card-id="{c["id"]}"]').click()
    run.both("shows only the third card face up", lambda s: face_up(s) == {c["id"]: c["content"]}, since=pressed)
    first.find_element(By.CSS_SELECTOR, f'[data-card-id="{a["id"]}"]').click()
    m1, m2 = run.both("shows the pair matched", lambda s: s["matchedPairs"] == 1 and
                      {card["id"] for card in s["cards"] if card["matched"]} == {a["id"], c["id"]}, since=pressed)
    run.post(f"/games/{game['id']}/cards/{b['id']}/choose")
    run.both("shows the next card face up", lambda s: b["id"] in face_up(s))
    run.shoot("game-card", "page-game.png")
    run.check.record("two cards chosen over HTTP face up in both pages; a match made on the pages shown in both",
                     dealt_page1=d1, dealt_page2=d2, chosen_page1=h1, chosen_page2=h2,
                     matched_page1=m1, matched_page2=m2)


def check_posts(run):
    """Posts show in both pages, dealt as the server deals them in the
    layout each page chose."""
    first, second = run.first, run.second

    def dealt(layout):
        return [[post["id"] for post in column]
                for column in run.get(f"/posts/staggered?columns=3&layout={layout}")["columns"]]

    for page in run.pages:
        page.find_element(By.CSS_SELECTOR, '#posts-layout input[value="balanced"]').click()
    run.both("shows the balanced layout", lambda s: s["layout"] == "balanced")
    sent = time.monotonic()
    base = run.server.base
    # Two images the page has built in, one on another server (which the
    # page's Content-Security-Policy refuses) and one this server lacks.
    urls = {300: f"{base}/assets/post-mountains.svg", 120.5: "https://images.example/120.5.jpg",
            200: f"{base}/assets/post-sunset.svg", 90: f"{base}/assets/missing-90.svg"}
    ids = {}
    for height, url in urls.items():
        ids[height] = run.post("/posts", {"imageURL": url, "height": height})["id"]
    balanced = dealt("balanced")
    if balanced == dealt("roundRobin"):
        raise Failure(f"the two layouts should differ for these heights: {balanced}")
    p1, p2 = run.both("shows the posts balanced by height", lambda s: s["columns"] == balanced, since=sent)
    expected = {ids[300]: ("loaded", "post-mountains.svg", 300), ids[200]: ("loaded", "post-sunset.svg", 200),
                ids[120.5]: ("failed", "120.5.jpg", 120.5), ids[90]: ("failed", "missing-90.svg", 90)}
    i1, i2 = run.both("draws the images that load and the boxes of those that do not",
                      lambda s: tiles_drawn(s, expected), timeout=5, since=sent)
    pressed = time.monotonic()
    second.find_element(By.CSS_SELECTOR, '#posts-layout input[value="roundRobin"]').click()
    _, switched = wait_until("page 2 shows the posts round-robin",
                             lambda: run.state(second)["columns"] == dealt("roundRobin"), 2, since=pressed)
    height = first.find_element(By.ID, "post-height")
    height.clear()
    height.send_keys("150")
    pressed = time.monotonic()
    first.find_element(By.ID, "add-post").click()
    _, a1 = wait_until("page 1 shows its post balanced", lambda: matching(
        lambda s: sum(map(len, s["columns"])) == 5 and s["columns"] == dealt("balanced"), run.state(first)), 2, since=pressed)
    _, a2 = wait_until("page 2 shows it round-robin", lambda: matching(
        lambda s: sum(map(len, s["columns"])) == 5 and s["columns"] == dealt("roundRobin"), run.state(second)), 2, since=pressed)
    added = [post for post in run.get("/posts?order=desc&limit=1")["posts"]][0]
    if added["imageURL"] != f"{base}/assets/post-lake.svg" or added["height"] != 150:
        raise Failure(f"the page's form should post its built-in image at height 150: {added}")
    expected[added["id"]] = ("loaded", "post-lake.svg", 150)
    run.both("draws the image of the post added from page 1", lambda s: tiles_drawn(s, expected), timeout=5, since=pressed)
    run.shoot("posts-card", "page-posts.png")
    run.check.record("posts over HTTP and from page 1 shown in both pages, balanced in one and round-robin in the other",
                     balanced_page1=p1, balanced_page2=p2, switched_page2=switched, added_page1=a1, added_page2=a2)
    run.check.record("three posts drawn as their images at the post's height, two as the box with the file name",
                     images_page1=i1, images_page2=i2)


def tiles_drawn(state, expected):
    """Each post of `expected` (id: (how, file name, height)) is drawn: an
    image that loaded fills its tile, which is as tall as the post's height
    (scaled); an image that failed left the box with the height and the
    file name, as tall."""
    for post_id, (how, name, height) in expected.items():
        tile = state["posts"].get(post_id)
        if tile is None or tile["image"] != how:
            return False
        scaled = min(POST_MAX_PX, max(18, height * POST_SCALE))
        if abs(tile["styledHeight"] - scaled) > 0.01 or abs(tile["height"] - scaled) > 1:
            raise Failure(f"post {post_id} ({height}) is drawn {tile['height']} px tall, not {scaled}")
        if how == "loaded":
            if not tile["drawn"] or abs(tile["imageHeight"] - tile["height"]) > 1 or abs(tile["imageWidth"] - tile["width"]) > 1 \
                    or tile["text"]:
                raise Failure(f"post {post_id}'s image {name} should fill its tile: {tile}")
        elif tile["text"] != f"{height:g} · {name}" or tile["imageHeight"] is not None:
            raise Failure(f"post {post_id} should be the box with {height:g} · {name}: {tile}")
    return True


class Views:
    """What the filtered views should show, as fresh reads of the server
    give it: the biggest orders of a donut, the jobs running and finished
    (newest first, as the page lists them), the ten tallest posts."""

    def __init__(self, run):
        self.run = run

    def ids(self, path, key):
        return [element["id"] for element in self.run.get(path)[key]]

    def orders(self, donut):
        return self.ids(f"/truck/orders?donutId=eq.{donut}&sort=-quantity&limit={QUERY_ORDERS}", "orders")

    def running(self):
        return self.ids("/jobs?isComplete=eq.false", "jobs")[::-1]

    def finished(self):
        return self.ids("/jobs?isComplete=eq.true", "jobs")[::-1]

    def tallest(self):
        return self.ids(f"/posts?sort=-height&limit={TALLEST}", "posts")

    def exact(self, state):
        """Whether every view of a page equals a fresh read."""
        return state["queryOrders"] == self.orders(state["queryDonut"]) and state["running"] == self.running() \
            and state["finished"] == self.finished() and state["tallest"] == self.tallest()


def check_queries(run):
    """The filtered views: each is a query read with the page's observer,
    kept equal to a fresh read of the same query by the changes that carry
    its query, while other clients write."""
    first, second = run.first, run.second
    views = Views(run)
    t1, t2 = run.both("shows every filtered view as a fresh read does", views.exact, timeout=3)
    for page in run.pages:
        state = run.state(page)
        expected = {"query-orders": f"donutId=eq.{GLAZED}&sort=-quantity", "query-running": "isComplete=eq.false",
                    "query-finished": "isComplete=eq.true", "query-tallest": "sort=-height"}
        if state["queryDonut"] != GLAZED or state["queries"] != expected:
            raise Failure(f"the views should read the queries {expected} with Glazed chosen: {state['queries']}, "
                          f"{state['queryDonut']}")
    run.check.record("both pages' filtered views equal fresh reads of their queries", page1=t1, page2=t2)

    # Orders: page 1 chooses Maple Bar, page 2 keeps Glazed. A big order
    # of each enters that page's view on top; a small one enters only
    # where the donut has fewer than five orders; a removal refills.
    pressed = time.monotonic()
    Select(first.find_element(By.ID, "query-donut")).select_by_value(MAPLE)
    _, chosen = wait_until("page 1 shows the biggest orders of Maple Bar", lambda: matching(
        lambda s: s["queries"]["query-orders"] == f"donutId=eq.{MAPLE}&sort=-quantity"
        and s["queryOrders"] == views.orders(MAPLE) and "Maple Bar" in s["queryOrdersState"], run.state(first)),
        3, since=pressed)
    glazed = views.orders(GLAZED)
    sent = time.monotonic()
    big = run.post("/truck/orders", {"donutId": MAPLE, "quantity": 1000})["id"]
    _, b1 = wait_until("page 1 shows the big order of Maple Bar on top", lambda: matching(
        lambda s: s["queryOrders"][:1] == [big] and s["queryOrders"] == views.orders(MAPLE)
        and s["queryOrdersText"][0] == "1000 × Maple Bar", run.state(first)), 2, since=sent)
    if run.state(second)["queryOrders"] != glazed:
        raise Failure("page 2's orders of Glazed changed on an order of Maple Bar")
    sent = time.monotonic()
    other = run.post("/truck/orders", {"donutId": GLAZED, "quantity": 999})["id"]
    _, b2 = wait_until("page 2 shows the big order of Glazed on top", lambda: matching(
        lambda s: s["queryOrders"][:1] == [other] and s["queryOrders"] == views.orders(GLAZED), run.state(second)),
        2, since=sent)
    small = run.post("/truck/orders", {"donutId": MAPLE, "quantity": 1})["id"]
    wait_until("page 1's view is exact after a small order", lambda: run.state(first)["queryOrders"] == views.orders(MAPLE), 2)
    sent = time.monotonic()
    for order in (big, small):
        status, _ = request("DELETE", f"{run.server.base}/truck/orders/{order}", token=run.token)
        if status != 204:
            raise Failure(f"DELETE /truck/orders/{order} answered {status}")
    _, r1 = wait_until("page 1 drops the removed orders and shows the biggest again", lambda: matching(
        lambda s: big not in s["queryOrders"] and s["queryOrders"] == views.orders(MAPLE), run.state(first)), 3, since=sent)
    run.count += 1  # the order of Glazed stays
    run.check.record("orders of the donut chosen: a big order enters on top of the page that chose it only; "
                     "removals leave and the view is refilled", chosen_page1=chosen, entered_page1=b1,
                     entered_page2=b2, removed_page1=r1)

    # Jobs: a new job is running; a report moves its numbers; completing it
    # moves it from running to finished, and the jobs list keeps it.
    sent = time.monotonic()
    job = run.post("/jobs", {"total": 40})["id"]
    s1, s2 = run.both("lists the new job as running", lambda s: s["running"][:1] == [job] and job not in s["finished"]
                      and s["running"] == views.running(), since=sent)
    run.post(f"/jobs/{job}/progress", {"current": 10})
    run.both("shows its progress among the running", lambda s: any(
        job[-4:] in text and "10 / 40" in text for text in s["runningText"]))
    sent = time.monotonic()
    run.post(f"/jobs/{job}/progress", {"current": 40})
    f1, f2 = run.both("moves the job from running to finished", lambda s: job not in s["running"]
                      and s["finished"][:1] == [job] and s["running"] == views.running()
                      and s["finished"] == views.finished() and s["jobs"].get(job, {}).get("complete"), since=sent)
    run.check.record("a job over HTTP listed as running, and moved to finished when it completes, in both pages",
                     running_page1=s1, running_page2=s2, finished_page1=f1, finished_page2=f2)

    # Posts: enough for an eleventh, then a taller one enters the ten
    # tallest and the tenth leaves; a removal of one of them refills.
    lake = f"{run.server.base}/assets/post-lake.svg"
    while len(run.get("/posts")["posts"]) < TALLEST + 2:
        run.post("/posts", {"imageURL": lake, "height": 40 + 10 * len(run.get("/posts")["posts"])})
    run.both("shows the ten tallest posts", lambda s: s["tallest"] == views.tallest(), timeout=3)
    before = views.tallest()
    sent = time.monotonic()
    tall = run.post("/posts", {"imageURL": lake, "height": 5000})["id"]
    e1, e2 = run.both("shows the taller post first and lets the tenth go", lambda s: s["tallest"] == [tall] + before[:-1],
                      since=sent)
    if views.tallest() != [tall] + before[:-1]:
        raise Failure(f"the server's ten tallest are not the page's: {views.tallest()}")
    time.sleep(0.9)  # the marks of what entered run their course
    # The card is low on the page: scrolled to the top, it is shot whole.
    first.execute_script("arguments[0].scrollIntoView({block: 'start'})", first.find_element(By.ID, "queries-card"))
    run.shoot("queries-card", "page-queries.png")
    first.execute_script("window.scrollTo(0, 0)")
    sent = time.monotonic()
    status, _ = request("DELETE", f"{run.server.base}/posts/{tall}", token=run.token)
    if status != 204:
        raise Failure(f"DELETE /posts/{tall} answered {status}")
    g1, g2 = run.both("drops the removed post and shows the tenth again", lambda s: s["tallest"] == before, since=sent)
    run.check.record("a taller post over HTTP enters both pages' ten tallest and the eleventh leaves; its removal "
                     "brings the tenth back", entered_page1=e1, entered_page2=e2, removed_page1=g1, removed_page2=g2)


def shoot_whole_page(run):
    """The first page with every part drawn and a dot glowing, and the truck
    with its orders."""
    run.shoot("truck-card", "page-truck.png")
    pressed = time.monotonic()
    run.first.find_element(By.ID, "random").click()
    wait_until("a dot glows in page 1", lambda: run.state(run.first)["glowing"], 2, since=pressed)
    time.sleep(0.3)  # the glow's CSS transition runs its course
    run.first.save_screenshot(os.path.join(run.artifacts, "page-1-all.png"))
    run.both("the glow ends", lambda s: not s["glowing"], timeout=4, since=pressed)


def check_restart(run, one, two, stream):
    """The server stops and comes back: both pages say so and recover."""
    first, second = run.first, run.second
    stopped = time.monotonic()
    code = run.server.stop(15)
    if code != 0:
        raise Failure(f"the server exited with {code} on SIGTERM" if code is not None
                      else "the server did not stop within 15 s of SIGTERM")
    d1, d2 = run.both("says disconnected", lambda s: s["status"] == "disconnected", timeout=5, since=stopped)
    for page in run.pages:
        text = run.state(page)["statusText"]
        if "disconnected" not in text:
            raise Failure(f"the status line says {text!r}")
    first.save_screenshot(os.path.join(run.artifacts, "page-1-disconnected.png"))
    second.save_screenshot(os.path.join(run.artifacts, "page-2-disconnected.png"))
    time.sleep(1)
    restarted = time.monotonic()
    run.server.start(20)
    r1, r2 = run.both("is live again", lambda s: s["status"] == "live", timeout=10, since=restarted)
    sent = time.monotonic()
    run.post("/truck/orders", {"donutId": CHOCOLATE, "quantity": 1})
    run.count += 1
    n1, n2 = run.both("counts the new order", lambda s: s["orderCount"] == str(run.count), timeout=3, since=sent)
    if run.state(first)["observer"] != one["observer"] or run.state(second)["observer"] != two["observer"]:
        raise Failure("a page changed its observer across the restart; it should resume with the one it had")
    if run.state(first)["feed"] != ("stream" if stream else "poll"):
        raise Failure(f"page 1 follows the feed by {run.state(first)['feed']} after the restart")
    first.save_screenshot(os.path.join(run.artifacts, "page-1-recovered.png"))
    second.save_screenshot(os.path.join(run.artifacts, "page-2-recovered.png"))
    run.check.record("disconnected on SIGTERM, live again after the restart, new order counted",
                     page1_disconnected=d1, page2_disconnected=d2,
                     page1_live_after_start=r1, page2_live_after_start=r2,
                     order_in_page1=n1, order_in_page2=n2)


def check_past_retention(run, one, two, stream):
    """While the pages cannot reach it, the server (on another port) takes
    writes and prunes the change log past their cursors. Back on its port,
    both pages show those writes with the observers they had: the stream by
    a repair, the poll by reading again after its 410."""
    server = run.server
    cursor = int(run.first.execute_script("return document.body.dataset.cursor"))
    if server.stop(15) != 0:
        raise Failure("the server did not stop cleanly")
    run.both("says disconnected", lambda s: s["status"] == "disconnected", timeout=5)
    aside = make_server(run.binary, run.database, free_port(), server.log_path, run.token, ["--retain-changes", "3"])
    aside.start(20)
    try:
        for _ in range(3):
            status, _ = request("POST", aside.base + "/truck/orders", {"donutId": GLAZED, "quantity": 3}, run.token)
            if status != 201:
                raise Failure(f"POST /truck/orders on the second port answered {status}")
        request("POST", aside.base + "/account/login", {"userName": "Lin"}, run.token)
        status, probe = request("POST", aside.base + "/observers")
        wait_until("the change log is pruned past the pages' cursors", lambda: request(
            "GET", f"{aside.base}/observers/{probe['id']}/changes?since={cursor}&timeout=0")[0] == 410, 10, interval=0.2)
        request("DELETE", f"{aside.base}/observers/{probe['id']}")
    finally:
        aside.stop(15)
    run.count += 3
    restarted = time.monotonic()
    server.start(20)
    c1, c2 = run.both("shows what changed while it was away",
                      lambda s: s["status"] == "live" and s["orderCount"] == str(run.count) and s["userName"] == "Lin"
                      and s["orders"][:3] == ["3 × Glazed"] * 3, timeout=10, since=restarted)
    if run.state(run.first)["observer"] != one["observer"] or run.state(run.second)["observer"] != two["observer"]:
        raise Failure("a page changed its observer; it should have caught up with the one it had")
    views = Views(run)
    run.both("shows the filtered views as fresh reads do", views.exact, timeout=5)
    if stream and not any(" repair " in line for line in run.state(run.first)["changesHeard"]):
        raise Failure(f"page 1 should have caught up by a repair: {run.state(run.first)['changesHeard']}")
    run.check.record("writes pruned from the change log while the pages were away shown in both pages"
                     + (" (page 1 by a repair)" if stream else ""), page1=c1, page2=c2)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/observable-server"))
    parser.add_argument("--artifacts", default=os.path.join(ROOT, "artifacts"))
    parser.add_argument("--images", default=os.path.join(ROOT, "docs/images"),
                        help="where the screenshots of the page and its parts are copied after a pass ('' for nowhere)")
    parser.add_argument("--no-token", action="store_true", help="run the server without OBSERVABLE_TOKEN")
    parser.add_argument("--orders", type=int, default=5000,
                        help="orders made for the check of the truck's pages (0: skip it)")
    args = parser.parse_args()

    if not os.access(args.binary, os.X_OK):
        print(f"no server binary at {args.binary}; build it first (swift build)", file=sys.stderr)
        return 2
    os.makedirs(args.artifacts, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="observable-browser-test-")
    token = None if args.no_token else TOKEN
    binary, database = os.path.abspath(args.binary), os.path.join(folder, "observable.sqlite")
    server = make_server(binary, database, free_port(), os.path.join(args.artifacts, "server.log"), token)
    open(server.log_path, "w").close()
    pages = []
    results = []
    check = Check(results)
    began = time.monotonic()
    failed = None
    try:
        server.start(20)
        stream = offers_stream(server.base)
        pages = [browser(), browser()]
        first, second = pages
        first.get(server.base + "/" + (f"#token={token}" if token else ""))
        second.get(server.base + "/#feed=poll")
        run = Run(binary, database, server, first, second, token, args.artifacts, check)
        one, two = check_ready(run, stream)
        check_few_orders(run)
        if args.orders:
            check_many_orders(run, args.orders)
        check_tap(run)
        check_order_and_sign_in(run)
        check_random(run)
        if token:
            check_read_only(run)
        check_account(run)
        check_jobs(run)
        check_game(run)
        check_posts(run)
        check_queries(run)
        shoot_whole_page(run)
        check_restart(run, one, two, stream)
        check_past_retention(run, one, two, stream)
    except Exception as error:  # report any failure, keep the evidence
        failed = error
        for index, page in enumerate(pages, 1):
            try:
                page.save_screenshot(os.path.join(args.artifacts, f"page-{index}-failure.png"))
                with open(os.path.join(args.artifacts, f"page-{index}-console.log"), "w") as log:
                    for entry in page.get_log("browser"):
                        log.write(f"{entry['level']} {entry['message']}\n")
            except Exception:
                pass
    finally:
        for page in pages:
            try:
                page.quit()
            except Exception:
                pass
        server.stop(15)
        shutil.rmtree(folder, ignore_errors=True)

    elapsed = time.monotonic() - began
    with open(os.path.join(args.artifacts, "browser-test.json"), "w") as out:
        json.dump({"passed": failed is None, "seconds": round(elapsed, 1), "checks": results,
                   "failure": None if failed is None else str(failed)}, out, indent=2)
    if failed is not None:
        print(f"FAIL {failed}", file=sys.stderr)
        print(f"{len(results)} passed, 1 failed ({elapsed:.1f} s); see {args.artifacts}")
        return 1
    if args.images:
        os.makedirs(args.images, exist_ok=True)
        shutil.copyfile(os.path.join(args.artifacts, "page-1-all.png"), os.path.join(args.images, "live-page.png"))
        for _, name in PARTS:
            shutil.copyfile(os.path.join(args.artifacts, name), os.path.join(args.images, name))
    print(f"{len(results)} passed, 0 failed ({elapsed:.1f} s); screenshots in {args.artifacts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
