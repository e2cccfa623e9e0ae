#!/usr/bin/env python3
"""Drives the live page (GET /) in two headless Chromium windows against a
real observable-server, and checks that observation reaches both:

  1. a dot clicked in the first page scales up in the second within a second;
  2. Random makes the same dot glow in both, and the glow is then reset;
  3. an order and a sign-in made over HTTP show in both pages;
  4. a page without the write token observes but cannot write (401 shown,
     buttons disabled) until the token is typed in;
  5. after SIGTERM both pages say they are disconnected, and after a restart
     on the same port and database they recover and follow a new order.

The server runs with OBSERVABLE_TOKEN set (unless --no-token): the first page
gets the token as #token=… in its URL, the second starts without one.
Screenshots of both pages and the server's log go to artifacts/; one
screenshot is copied to docs/images/live-page.png. Exits 1 on any failure.

Usage: scripts/browser-test.py [--binary PATH] [--artifacts DIR] [--no-token]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "browser-test-write-token"
TAP_LIMIT = 1.0  # seconds from the click to the other page's animation


class Failure(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The observable-server binary as a child process."""

    def __init__(self, binary, port, database, log_path, token):
        self.binary, self.port, self.database, self.log_path = binary, port, database, log_path
        self.env = dict(os.environ)
        self.env.pop("OBSERVABLE_TOKEN", None)
        self.env.pop("OBSERVABLE_READ_TOKEN", None)
        if token:
            self.env["OBSERVABLE_TOKEN"] = token
        self.process = None

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [self.binary, "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--database", self.database],
            stdout=log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise Failure(f"the server exited with {self.process.returncode}; see {self.log_path}")
            try:
                if request("GET", self.base + "/healthz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise Failure("the server did not answer /healthz within 20 s")

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise Failure("the server did not stop within 15 s of SIGTERM")


def request(method, url, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def browser():
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1100,860", "--hide-scrollbars", "--disable-gpu"):
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
const dot = (id) => document.querySelector(`[data-dot-id="${id}"]`);
const status = document.getElementById("status");
return {
  status: status.dataset.state, statusText: status.textContent,
  orderCount: document.getElementById("order-count").dataset.value ?? null,
  userName: document.getElementById("user-name").textContent,
  rows: [...document.querySelectorAll("#grid .row")].map((row) => row.children.length),
  donuts: [...document.querySelectorAll("#donuts li")].map((li) => li.textContent),
  glowing: [...document.querySelectorAll('.dot[data-glowing="true"]')].map((d) => d.dataset.dotId),
  observer: document.body.dataset.observer || null,
  access: document.getElementById("access").dataset.access,
  message: document.getElementById("message").hidden ? null : document.getElementById("message").textContent,
  messageStatus: document.getElementById("message").dataset.status ?? null,
  randomDisabled: document.getElementById("random").disabled,
  orderDisabled: document.getElementById("add-order").disabled,
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/observable-server"))
    parser.add_argument("--artifacts", default=os.path.join(ROOT, "artifacts"))
    parser.add_argument("--readme-image", default=os.path.join(ROOT, "docs/images/live-page.png"))
    parser.add_argument("--no-token", action="store_true", help="run the server without OBSERVABLE_TOKEN")
    args = parser.parse_args()

    if not os.access(args.binary, os.X_OK):
        print(f"no server binary at {args.binary}; build it first (swift build)", file=sys.stderr)
        return 2
    os.makedirs(args.artifacts, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="observable-browser-test-")
    token = None if args.no_token else TOKEN
    server = Server(os.path.abspath(args.binary), free_port(), os.path.join(folder, "observable.sqlite"),
                    os.path.join(args.artifacts, "server.log"), token)
    open(server.log_path, "w").close()
    pages = []
    results = []
    check = Check(results)
    began = time.monotonic()
    failed = None
    try:
        server.start()
        pages = [browser(), browser()]
        first, second = pages
        first.get(server.base + "/" + (f"#token={token}" if token else ""))
        second.get(server.base + "/")
        state = lambda page: page.execute_script(PAGE_STATE)

        # Both pages have read everything with their own observer and are polling.
        def ready(page):
            s = state(page)
            return s if s["status"] == "live" and s["rows"] == [3, 2, 4] and s["orderCount"] is not None \
                and len(s["donuts"]) == 4 else None
        (one, t1), (two, t2) = wait_until("page 1 live", lambda: ready(first), 15), \
            wait_until("page 2 live", lambda: ready(second), 15)
        if one["observer"] == two["observer"]:
            raise Failure("the two pages share an observer")
        if "#token" in first.current_url:
            raise Failure("the token stayed in the address bar")
        check.record("both pages drew the grid (3, 2, 4), the menu and the count", page1=t1, page2=t2)

        # 1. A tap in the first page animates the same circle in the second.
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
        check.record("tap in page 1 animates the same circle in page 2",
                     page2_tapped=tap2, page1_tapped=tap1, page2_back_to_idle=settled)

        # 2. An order and a sign-in over HTTP show in both pages.
        count = int(state(first)["orderCount"])
        sent = time.monotonic()
        status, _ = request("POST", server.base + "/truck/orders",
                            {"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": 2}, token)
        if status != 201:
            raise Failure(f"POST /truck/orders answered {status}")
        _, o1 = wait_until("page 1 counts the order", lambda: state(first)["orderCount"] == str(count + 1), 2, since=sent)
        _, o2 = wait_until("page 2 counts the order", lambda: state(second)["orderCount"] == str(count + 1), 2, since=sent)
        check.record("order over HTTP counted in both pages", page1=o1, page2=o2)
        sent = time.monotonic()
        status, _ = request("POST", server.base + "/account/login", {"userName": "Ada"}, token)
        if status != 200:
            raise Failure(f"POST /account/login answered {status}")
        _, u1 = wait_until("page 1 shows the user", lambda: state(first)["userName"] == "Ada", 2, since=sent)
        _, u2 = wait_until("page 2 shows the user", lambda: state(second)["userName"] == "Ada", 2, since=sent)
        check.record("sign-in over HTTP shown in both pages", page1=u1, page2=u2)

        # 3. Random makes one dot glow in both pages; a page then resets it.
        pressed = time.monotonic()
        first.find_element(By.ID, "random").click()
        g1, t1 = wait_until("a dot glows in page 1", lambda: state(first)["glowing"], 2, since=pressed)
        g2, t2 = wait_until("the same dot glows in page 2", lambda: state(second)["glowing"], 2, since=pressed)
        if g1 != g2 or len(g1) != 1:
            raise Failure(f"different glows: page 1 {g1}, page 2 {g2}")
        time.sleep(0.3)  # the glow's CSS transition runs its course
        first.save_screenshot(os.path.join(args.artifacts, "page-1.png"))
        second.save_screenshot(os.path.join(args.artifacts, "page-2.png"))
        if not state(first)["glowing"] or not state(second)["glowing"]:
            raise Failure("the glow ended before the screenshots; it should last about a second")
        _, ended = wait_until("the glow ends in both pages",
                              lambda: not state(first)["glowing"] and not state(second)["glowing"], 4, since=pressed)
        status, dot = request("GET", server.base + f"/grid/dots/{g1[0]}", token=token)
        if status != 200 or dot["isRandomAnimated"]:
            raise Failure(f"the dot is still glowing on the server after the pages ended the glow: {status} {dot}")
        check.record("Random glows the same dot in both pages, then a page resets it",
                     page1=t1, page2=t2, glow_over_in_both=ended)

        # 4. Without the write token a page observes but cannot write.
        if token:
            # Its own reset of the glow may already have been refused;
            # otherwise a click on Add order is.
            if not state(second)["orderDisabled"]:
                second.find_element(By.ID, "add-order").click()
            page, _ = wait_until("page 2 shows the 401", lambda: matching(lambda s: s["messageStatus"] == "401", state(second)), 2)
            if "401" not in (page["message"] or ""):
                raise Failure(f"the 401 is not shown: {page['message']!r}")
            page, _ = wait_until("page 2's buttons are disabled",
                                 lambda: matching(lambda s: s["randomDisabled"] and s["orderDisabled"], state(second)), 2)
            if page["access"] != "read-only" or page["orderCount"] != str(count + 1):
                raise Failure(f"page 2 should be read-only with the count unchanged: {page}")
            second.save_screenshot(os.path.join(args.artifacts, "page-2-read-only.png"))
            second.find_element(By.ID, "token").send_keys(token)
            second.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
            wait_until("page 2's buttons are enabled with the token", lambda: not state(second)["orderDisabled"], 2)
            pressed = time.monotonic()
            second.find_element(By.ID, "add-order").click()
            _, o2 = wait_until("page 2 counts its order", lambda: state(second)["orderCount"] == str(count + 2), 2, since=pressed)
            _, o1 = wait_until("page 1 counts it", lambda: state(first)["orderCount"] == str(count + 2), 2, since=pressed)
            check.record("page without the token: 401 shown and buttons disabled, then writes with the typed token",
                         order_in_page2=o2, order_in_page1=o1)
            count += 1

        # 5. The server stops and comes back: both pages say so and recover.
        stopped = time.monotonic()
        code = server.stop()
        if code != 0:
            raise Failure(f"the server exited with {code} on SIGTERM")
        _, d1 = wait_until("page 1 says disconnected", lambda: state(first)["status"] == "disconnected", 5, since=stopped)
        _, d2 = wait_until("page 2 says disconnected", lambda: state(second)["status"] == "disconnected", 5, since=stopped)
        for page in pages:
            text = state(page)["statusText"]
            if "disconnected" not in text:
                raise Failure(f"the status line says {text!r}")
        first.save_screenshot(os.path.join(args.artifacts, "page-1-disconnected.png"))
        second.save_screenshot(os.path.join(args.artifacts, "page-2-disconnected.png"))
        time.sleep(1)
        restarted = time.monotonic()
        server.start()
        _, r1 = wait_until("page 1 is live again", lambda: state(first)["status"] == "live", 10, since=restarted)
        _, r2 = wait_until("page 2 is live again", lambda: state(second)["status"] == "live", 10, since=restarted)
        sent = time.monotonic()
        status, _ = request("POST", server.base + "/truck/orders",
                            {"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0002", "quantity": 1}, token)
        if status != 201:
            raise Failure(f"POST /truck/orders after the restart answered {status}")
        _, n1 = wait_until("page 1 counts the new order", lambda: state(first)["orderCount"] == str(count + 2), 3, since=sent)
        _, n2 = wait_until("page 2 counts the new order", lambda: state(second)["orderCount"] == str(count + 2), 3, since=sent)
        if state(first)["observer"] != one["observer"] or state(second)["observer"] != two["observer"]:
            raise Failure("a page changed its observer across the restart; it should resume with the one it had")
        first.save_screenshot(os.path.join(args.artifacts, "page-1-recovered.png"))
        second.save_screenshot(os.path.join(args.artifacts, "page-2-recovered.png"))
        check.record("disconnected on SIGTERM, live again after the restart, new order counted",
                     page1_disconnected=d1, page2_disconnected=d2,
                     page1_live_after_start=r1, page2_live_after_start=r2,
                     order_in_page1=n1, order_in_page2=n2)
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
        try:
            server.stop()
        except Failure:
            pass
        shutil.rmtree(folder, ignore_errors=True)

    elapsed = time.monotonic() - began
    with open(os.path.join(args.artifacts, "browser-test.json"), "w") as out:
        json.dump({"passed": failed is None, "seconds": round(elapsed, 1), "checks": results,
                   "failure": None if failed is None else str(failed)}, out, indent=2)
    if failed is not None:
        print(f"FAIL {failed}", file=sys.stderr)
        print(f"{len(results)} passed, 1 failed ({elapsed:.1f} s); see {args.artifacts}")
        return 1
    if args.readme_image:
        os.makedirs(os.path.dirname(args.readme_image), exist_ok=True)
        shutil.copyfile(os.path.join(args.artifacts, "page-1.png"), args.readme_image)
    print(f"{len(results)} passed, 0 failed ({elapsed:.1f} s); screenshots in {args.artifacts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
