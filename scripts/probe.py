#!/usr/bin/env python3
"""Probes a running observable-server the way a careless or hostile client
would, and says for each probe whether the server refused it as
docs/SECURITY.md promises.

    scripts/probe.py --url http://127.0.0.1:8080 [--token WRITE] [--read-token READ]

Only the standard library; raw sockets for what an HTTP library would
correct. It writes only what it needs (a truck name it sets back, observers
it deletes). Exit status 0 when every probe passed, 1 otherwise.

Probes:
- framing: Content-Length with Transfer-Encoding, two lengths, an unknown
  coding, whitespace before a colon, a folded Transfer-Encoding, a CR in a
  value, no or two Host headers, a target without a leading slash or with a blank or a
  control character in it (400, 501 for a coding), and an absolute-form
  target that must be served;
- a chunked body past the body limit (413, before it is all sent), chunk
  extensions of 20 KB and 1 MB (refused: 400, 413 or 431, or the 500
  libmicrohttpd answers itself);
- a slow sender (cut within --request-timeout plus a margin);
- CORS: an Origin of `null` or with a control character is never echoed;
- text: a name of one letter and 100,000 combining marks, a name of only
  invisible characters (422, and the name unchanged);
- an observer's id: a random version-4 UUID;
- numbers at the edges: page cursors, limits, a poll's `since`, `timeout`
  and `Last-Event-ID`, `Prefer: wait=`, and the integer fields of request
  bodies at 2^63 - 1, -2^63, 2^63, 2^64 - 1 and 1e308 (never a 5xx, and the
  server still answers);
- ambiguity: a single-valued header (`Authorization` in both orders,
  `Observer`) or query parameter (`fields`) given twice, an encoded `/` in a
  path, an integer written `1e2` or `2.0` (400), and a problem that quotes
  at most a short prefix of a 7 KB name;
- the write rate: writes past --write-burst are 429 with Retry-After;
- connections: addresses 127.0.0.2 to .5 holding every connection they may
  (--max-connections-per-address each) leave a newcomer's /healthz served;
- with --huge-reads GAMES and --fill-from: GET /games made that many games
  long (5 KB a game) and read by four clients at once, each answer whole,
  while the control client's /healthz stays under 50 ms at p99 (48,000
  games make 248 MB);
- with --fill-from ADDRESS (an address the server trusts): a collection
  filled to --max-rows is 507; then the disk filled (a server started with
  a small --max-database-size) is 507 with /healthz degraded. Run last: it
  leaves the server full.

A control client asks /healthz between the probes: its p99 is printed, and
a probe fails when it passes 50 ms.
"""
import argparse
import json
import socket
import sys
import time
import urllib.parse

RESULTS = []


def record(name, ok, detail=""):
    RESULTS.append((name, ok))
    print(("ok  " if ok else "FAIL") + f"  {name}" + (f": {detail}" if detail else ""), flush=True)


class Target:
    def __init__(self, url, token, read_token):
        parts = urllib.parse.urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.token = token
        self.read_token = read_token or token

    def connect(self, timeout=10):
        return socket.create_connection((self.host, self.port), timeout=timeout)

    def raw(self, data, timeout=10):
        """Sends `data` as it is; returns (status, head, closed): the status
        of the first answer (None when none came), its head, and whether the
        server closed the connection after it."""
        with self.connect(timeout) as s:
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # answered and closed before all was sent: read the answer
            received = b""
            deadline = time.time() + timeout
            try:
                while b"\r\n\r\n" not in received and time.time() < deadline:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    received += chunk
            except (socket.timeout, ConnectionResetError):
                pass
            if b"\r\n\r\n" not in received:
                return None, received, True
            head = received.split(b"\r\n\r\n", 1)[0].decode("latin-1")
            status = int(head.split(" ", 2)[1])
            closed = "connection: close" in head.lower()
            return status, head, closed

    def headers(self, token=None):
        lines = f"Host: {self.host}:{self.port}\r\n"
        if token:
            lines += f"Authorization: Bearer {token}\r\n"
        return lines

    def request(self, method, path, body=None, headers=None, token=None, timeout=10):
        """One well-formed request; returns (status, headers dict, body bytes)."""
        payload = b"" if body is None else json.dumps(body).encode()
        text = f"{method} {path} HTTP/1.1\r\n" + self.headers(token) + "Connection: close\r\n"
        for name, value in (headers or {}).items():
            text += f"{name}: {value}\r\n"
        if body is not None:
            text += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        with self.connect(timeout) as s:
            s.sendall(text.encode("utf-8") + b"\r\n" + payload)
            pieces = []
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                pieces.append(chunk)
            received = b"".join(pieces)
        head, _, rest = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        if fields.get("transfer-encoding", "").lower() == "chunked":
            body_bytes, data = b"", rest
            while data:
                size_line, _, data = data.partition(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    break
                body_bytes += data[:size]
                data = data[size + 2:]
            rest = body_bytes
        return status, fields, rest


def framing(t):
    host = t.headers(t.read_token)
    cases = [
        ("Content-Length with Transfer-Encoding", 400,
         f"POST /observers HTTP/1.1\r\n{host}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"),
        ("two different Content-Lengths", 400,
         f"POST /observers HTTP/1.1\r\n{host}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{{}} "),
        ("a malformed Content-Length", 400,
         f"POST /observers HTTP/1.1\r\n{host}Content-Length: 2x\r\n\r\n{{}}"),
        ("an unknown transfer coding", 501,
         f"POST /observers HTTP/1.1\r\n{host}Transfer-Encoding: gzip\r\n\r\n"),
        ("a coding after chunked", 501,
         f"POST /observers HTTP/1.1\r\n{host}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"),
        ("whitespace before a colon", 400,
         f"POST /observers HTTP/1.1\r\n{host}Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n"),
        ("a folded Transfer-Encoding", 400,
         f"POST /observers HTTP/1.1\r\n{host}Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"),
        ("a CR in a header value", 400,
         f"GET /truck HTTP/1.1\r\n{host}X-Value: a\rb\r\n\r\n"),
        ("no Host", 400, "GET /truck HTTP/1.1\r\n\r\n"),
        ("two Hosts", 400, f"GET /truck HTTP/1.1\r\n{host}Host: other\r\n\r\n"),
        ("a target without a leading slash", 400, f"GET ../truck HTTP/1.1\r\n{host}\r\n"),
        ("a blank inside the target", 400, f"GET /truck x HTTP/1.1\r\n{host}\r\n"),
        ("a control character in the target", 400, f"GET /tr\x01uck HTTP/1.1\r\n{host}\r\n"),
    ]
    for name, expected, text in cases:
        status, head, closed = t.raw(text.encode("latin-1"))
        record(f"framing: {name} is {expected}", status == expected, f"got {status}")
    status, _, _ = t.raw(f"GET http://{t.host}:{t.port}/healthz HTTP/1.1\r\n{host}Connection: close\r\n\r\n".encode())
    record("framing: an absolute-form target is served", status == 200, f"got {status}")


def chunked_body(t, max_body):
    """Chunks past the limit: the 413 must come before the body ends."""
    with t.connect(20) as s:
        s.sendall(f"POST /truck/orders HTTP/1.1\r\n{t.headers(t.token)}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
        chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
        sent, status = 0, None
        s.settimeout(0.05)
        while sent < max_body * 8:
            try:
                s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += 65536
            try:
                data = s.recv(4096)
                if data:
                    status = int(data.split(b" ", 2)[1])
                    break
            except socket.timeout:
                pass
        if status is None:
            s.settimeout(5)
            try:
                data = s.recv(4096)
                status = int(data.split(b" ", 2)[1]) if data else None
            except (socket.timeout, ConnectionResetError, IndexError, ValueError):
                pass
        record("a chunked body past the limit is 413 before it ends", status == 413 and sent <= max_body * 2,
               f"got {status} after {sent} bytes")
    for size in (20_000, 1_000_000):
        text = f"POST /observers HTTP/1.1\r\n{t.headers(t.read_token)}Transfer-Encoding: chunked\r\n\r\n2;{'x' * size}\r\n{{}}\r\n0\r\n\r\n"
        status, _, _ = t.raw(text.encode())
        record(f"a chunk extension of {size:,} bytes is refused", status in (400, 413, 431, 500), f"got {status}")


def slow_sender(t, request_timeout):
    start = time.time()
    with t.connect(request_timeout + 30) as s:
        request = f"GET /truck HTTP/1.1\r\n{t.headers(t.read_token)}\r\n".encode()
        closed_at = None
        for byte in request[:-4] * 100:
            try:
                s.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed_at = time.time()
                break
            s.settimeout(1)
            try:
                data = s.recv(4096)
                if not data or data.startswith(b"HTTP/1.1 4"):
                    closed_at = time.time()
                    break
            except socket.timeout:
                pass
            except ConnectionResetError:
                closed_at = time.time()
                break
            if time.time() - start > request_timeout + 20:
                break
    took = (closed_at or time.time()) - start
    record(f"a slow sender is cut within {request_timeout} s (and a margin)",
           closed_at is not None and took <= request_timeout + 5, f"after {took:.1f} s")


def cors(t):
    for origin in ["null", "https://a.example\x7f"]:
        status, head, _ = t.raw(f"GET /healthz HTTP/1.1\r\n{t.headers(t.read_token)}Origin: {origin}\r\nConnection: close\r\n\r\n".encode("latin-1"))
        echoed = any(line.lower().startswith("access-control-allow-origin:") and line.split(":", 1)[1].strip() == origin
                     for line in head.split("\r\n"))
        record(f"CORS: the Origin {origin!r} is not echoed", status is not None and not echoed, f"got {status}")


def text(t):
    status, _, body = t.request("GET", "/truck?fields=name", token=t.read_token)
    if status != 200:
        record("text: the truck can be read", False, f"got {status}")
        return
    before = json.loads(body)["name"]
    for name, value in [("one letter and 100,000 combining marks", "a" + "\u0301" * 100000),
                        ("only invisible characters", "\u200b\ufeff")]:
        status, _, _ = t.request("PATCH", "/truck", {"name": value}, token=t.token)
        _, _, after = t.request("GET", "/truck?fields=name", token=t.read_token)
        unchanged = json.loads(after)["name"] == before
        record(f"text: a name of {name} is 422 and changes nothing", status == 422 and unchanged, f"got {status}")
        if not unchanged:
            t.request("PATCH", "/truck", {"name": before}, token=t.token)


def observer_id(t):
    status, _, body = t.request("POST", "/observers", {}, token=t.read_token)
    if status != 201:
        record("an observer can be created", False, f"got {status}")
        return
    identifier = json.loads(body)["id"]
    random = len(identifier) == 36 and identifier[14] == "4" and identifier[19] in "89ab"
    record("an observer's id is a random (version 4) UUID", random, identifier)
    t.request("DELETE", "/observer", headers={"Observer": identifier}, token=t.read_token)


EDGES = ["9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551615", "1e308"]


def status_of(t, method, path, body=None, headers=None, token=None):
    """The status of one request; None when no answer came (the server closed or died)."""
    try:
        return t.request(method, path, body, headers=headers, token=token)[0]
    except (OSError, IndexError, ValueError):
        return None


def extremes(t):
    status, _, body = t.request("POST", "/observers", {}, token=t.read_token)
    observer = json.loads(body)["id"] if status == 201 else "none"
    reads = [f"/truck/donuts?after={v}" for v in EDGES] + [f"/truck/donuts?limit={v}" for v in EDGES]
    reads += [f"/truck/donuts?order=desc&after={v}" for v in EDGES] + [f"/posts?limit=1&after={v}" for v in EDGES]
    reads += [f"/truck?fields=orders,donuts&donuts.after={v}&donuts.limit=1" for v in EDGES]
    reads += [f"/truck?orders.order=desc&orders.after={v}" for v in EDGES]
    reads += [f"/observer/changes?timeout=0&since={v}" for v in EDGES] + [f"/observer/changes?timeout={v}" for v in EDGES]
    worst = []
    for path in reads:
        status = status_of(t, "GET", path, headers={"Observer": observer}, token=t.read_token)
        if status is None or status >= 500:
            worst.append(f"{path}: {status}")
    for name in ["Last-Event-ID", "Prefer"]:
        for v in EDGES:
            value = f"wait={v}" if name == "Prefer" else v
            headers = {"Observer": observer, name: value, "Accept": "application/json"}
            status = status_of(t, "GET", "/observer/changes?timeout=0", headers=headers, token=t.read_token)
            if status is None or status >= 500:
                worst.append(f"{name}: {value}: {status}")
    for path, field in [("/truck/orders", "quantity"), ("/jobs", "total"), ("/jobs", "step"), ("/jobs", "intervalMs"),
                        ("/games", "pairs"), ("/games", "seed"), ("/posts", "height")]:
        for v in EDGES:
            status = status_of(t, "POST", path, {field: json.loads(v)}, token=t.token)
            if status is None or status >= 500:
                worst.append(f"POST {path} {field}={v}: {status}")
    alive = status_of(t, "GET", "/healthz", token=t.read_token)
    record("numbers at the edges: never a 5xx, and the server still answers", not worst and alive == 200,
           "; ".join(worst[:3]) or f"/healthz {alive}")
    status_of(t, "DELETE", "/observer", headers={"Observer": observer}, token=t.read_token)


HEALTH = []


def control(t):
    """A control client's /healthz, timed."""
    began = time.perf_counter()
    status = status_of(t, "GET", "/healthz", token=t.read_token)
    HEALTH.append((time.perf_counter() - began, status))


def ambiguity(t):
    for first, second in [(t.token or "r", "w"), ("w", t.token or "r")]:
        head = (f"PATCH /truck HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {first}\r\nAuthorization: Bearer {second}\r\n"
                "Content-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"name\":\"Twice\"}")
        status, _, _ = t.raw(head.encode())
        record(f"Authorization twice ({first}, then {second}): 400", status == 400, f"{status}")
    status, _, _ = t.raw(b"GET /truck HTTP/1.1\r\nHost: x\r\nObserver: a\r\nObserver: b\r\n\r\n")
    record("Observer twice: 400", status == 400, f"{status}")
    status = status_of(t, "GET", "/truck?fields=name&fields=orderCount", token=t.read_token)
    record("fields= twice: 400", status == 400, f"{status}")
    for path in ["/truck%2forderCount", "/truck%2ForderCount"]:
        status = status_of(t, "GET", path, token=t.read_token)
        record(f"{path}: 400", status == 400, f"{status}")
    donut = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
    for spelling in ["1e2", "2.0", "10E-1", "-0.0"]:
        body = f'{{"donutId": "{donut}", "quantity": {spelling}}}'.encode()
        head = (f"POST /truck/orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                + (f"Authorization: Bearer {t.token}\r\n" if t.token else "") + "\r\n")
        status, _, _ = t.raw(head.encode() + body)
        record(f"quantity {spelling}: 400", status == 400, f"{status}")
    _, _, body = t.request("GET", "/truck/orders?" + "q" * 7000 + "=eq.1", token=t.read_token)
    record("a problem quotes at most a short prefix", len(body) < 1000, f"{len(body)} bytes")


def write_rate(t, burst):
    """Renames the truck until refused (at most burst + 200 times), then names it back."""
    status, _, body = t.request("GET", "/truck?fields=name", token=t.read_token)
    name = json.loads(body)["name"] if status == 200 else "Food Truck"
    refused, retry = None, None
    for i in range(burst + 200):
        status, fields, _ = t.request("PATCH", "/truck", {"name": f"Probe {i}"}, token=t.token)
        if status == 429:
            refused, retry = i, fields.get("retry-after")
            break
        if i % 100 == 0:
            control(t)
    # (The probes before took some of the burst: a refusal within it is the rate's too.)
    record(f"writes past the burst ({burst}) are 429 with Retry-After", refused is not None and bool(retry),
           f"refused at write {refused + 1 if refused is not None else None} of this probe, Retry-After {retry}")
    deadline = time.time() + 30
    while time.time() < deadline and t.request("PATCH", "/truck", {"name": name}, token=t.token)[0] == 429:
        time.sleep(0.5)


def connections(t, per_address):
    """Four addresses each hold `per_address` idle connections (as many as
    the server lets them); a newcomer's /healthz is still served."""
    held = []
    try:
        for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]:
            for _ in range(per_address):
                s = socket.socket()
                s.settimeout(5)
                s.bind((source, 0))
                s.connect((t.host, t.port))
                held.append(s)
        time.sleep(0.5)
        s = socket.socket()
        s.settimeout(5)
        s.bind(("127.0.0.9", 0))
        began = time.perf_counter()
        s.connect((t.host, t.port))
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        answer = s.recv(200)
        took = time.perf_counter() - began
        s.close()
        ok = answer.startswith(b"HTTP/1.1 200")
        record("four addresses holding their share leave a newcomer served", ok and took < 1,
               f"{answer[:20]!r} in {took * 1000:.0f} ms, {len(held)} held")
    finally:
        for s in held:
            s.close()


def from_address(t, source):
    """`t`, its connections made from the loopback address `source`."""
    class From(Target):
        def connect(self, timeout=10):
            s = socket.socket()
            s.settimeout(timeout)
            s.bind((source, 0))
            s.connect((self.host, self.port))
            return s
    return From(f"http://{t.host}:{t.port}", t.token, t.read_token)


def fill(t, source, max_rows):
    """Donuts until 507 (from the probe's own address, waiting out its write
    rate), then, from `source` (trusted, past the rate and --max-rows),
    posts until the disk is full."""
    f = from_address(t, source)
    def write(method, path, body=None):
        deadline = time.time() + 60
        while True:
            status, fields, answer = t.request(method, path, body, token=t.token)
            if status != 429 or time.time() > deadline:
                return status, answer
            time.sleep(float(fields.get("retry-after", "1")))
    status, added = None, []
    for i in range(max_rows + 10):
        status, body = write("POST", "/truck/donuts", {"name": f"Probe {i}"})
        if status != 201:
            break
        added.append(json.loads(body)["id"])
    record(f"a collection at --max-rows ({max_rows}) refuses an insert: 507", status == 507, f"{status} after {len(added)}")
    for donut in added:
        write("DELETE", f"/truck/donuts/{donut}")
    url = "https://example.com/" + "a" * 2000 + ".png"
    posts = 0
    for _ in range(20_000):
        status = f.request("POST", "/posts", {"imageURL": url, "height": 10}, token=t.token)[0]
        if status != 201:
            break
        posts += 1
    control(t)
    health, _, body = t.request("GET", "/healthz", token=t.read_token)
    record("a full disk is 507, and /healthz degraded", status == 507 and health == 503 and b"degraded" in body,
           f"{status} after {posts} posts; /healthz {health} {body[:60]!r}")


# The same fields named in other orders: each its own query string.
SELECTIONS = ["id,cards,isOver", "cards,isOver,id", "isOver,id,cards", "cards,id,isOver"]


def huge_reads(t, source, games, readers=4, seconds=10):
    """From `source` (trusted: past the write rate and --max-rows), games
    until GET /games is large; then `readers` clients read it at once, over
    and over (each its own query string, past any kept answer), for
    `seconds`, while the control client asks /healthz every 20 ms."""
    f = from_address(t, source)
    have = len(json.loads(f.request("GET", "/games?fields=id", token=t.read_token or t.token)[2])["games"])
    for i in range(have, games):
        status = f.request("POST", "/games", {"pairs": 26, "seed": i}, token=t.token)[0]
        if status != 201:
            record(f"{games} games to read", False, f"{status} after {i}")
            return
    # Each reader is a process of its own: what the probe does with 250 MB
    # must not hold the control client's thread.
    import multiprocessing
    results = multiprocessing.get_context("fork").Queue()
    stop = time.time() + seconds

    def read(n):
        while time.time() < stop:
            began = time.perf_counter()
            try:
                path = "/games?fields=" + SELECTIONS[n % len(SELECTIONS)]
                with t.connect(120) as s:
                    s.sendall(f"GET {path} HTTP/1.1\r\n{t.headers(t.read_token)}Connection: close\r\n\r\n".encode())
                    received = b""
                    while b"\r\n\r\n" not in received:
                        chunk = s.recv(65536)
                        if not chunk:
                            raise ConnectionError("closed in the head")
                        received += chunk
                    head, _, body = received.partition(b"\r\n\r\n")
                    status = int(head.split(b" ", 2)[1])
                    length = int(next((line.split(b":", 1)[1] for line in head.split(b"\r\n")
                                       if line.lower().startswith(b"content-length:")), b"-1"))
                    count, first, last = len(body), body[:10], body[-2:]
                    while True:
                        chunk = s.recv(1 << 20)
                        if not chunk:
                            break
                        count += len(chunk)
                        first = (first + chunk)[:10] if len(first) < 10 else first
                        last = (last + chunk)[-2:]
                whole = status == 200 and count == length and first.startswith(b'{"games":[') and last == b"]}"
                results.put((n, time.perf_counter() - began, count, None if whole else f"{status}, {count} bytes of {length}"))
            except Exception as error:  # a read cut short
                results.put((n, time.perf_counter() - began, 0, repr(error)[:80]))
    threads = [multiprocessing.get_context("fork").Process(target=read, args=(n,)) for n in range(readers)]
    for thread in threads:
        thread.start()
    before = len(HEALTH)
    # Timed for as long as any read is in progress.
    while any(thread.is_alive() for thread in threads):
        control(t)
        time.sleep(0.02)
    for thread in threads:
        thread.join()
    sizes, failures, took = [], [], []
    while not results.empty():
        _, seconds_taken, size, failure = results.get()
        took.append(seconds_taken)
        sizes.append(size)
        if failure:
            failures.append(failure)
    times = sorted(took for took, _ in HEALTH[before:])
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    largest = max(sizes) if sizes else 0
    record(f"{readers} clients reading GET /games ({largest / 1e6:.1f} MB) at once: every answer whole",
           sizes and not failures, f"{len(sizes)} answers, {sum(took) / max(1, len(took)):.2f} s each; {failures[:3]}")
    record(f"... while a control client's /healthz p99 is {p99 * 1000:.1f} ms of {len(times)}, under 50 ms", p99 < 0.05,
           f"max {times[-1] * 1000:.1f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--token", help="the write token (OBSERVABLE_TOKEN), if set")
    parser.add_argument("--read-token", help="the read token (OBSERVABLE_READ_TOKEN), if set")
    parser.add_argument("--max-body", type=int, default=1 << 20, help="the server's --max-body")
    parser.add_argument("--request-timeout", type=int, default=20, help="the server's --request-timeout")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the slow sender (it takes the timeout)")
    parser.add_argument("--write-burst", type=int, default=500, help="the server's --write-burst")
    parser.add_argument("--max-connections-per-address", type=int, default=0,
                        help="the server's --max-connections-per-address (0: leave out the connections probe)")
    parser.add_argument("--fill-from", help="an address the server trusts: fill a collection and the disk from it (last)")
    parser.add_argument("--max-rows", type=int, default=10_000, help="the server's --max-rows")
    parser.add_argument("--huge-reads", type=int, default=0, metavar="GAMES",
                        help="with --fill-from: make GET /games this many games long, then read it four times at once")
    parser.add_argument("--only-huge-reads", action="store_true", help="run only the huge reads")
    args = parser.parse_args()
    target = Target(args.url, args.token, args.read_token)
    if args.huge_reads and args.fill_from:
        huge_reads(target, args.fill_from, args.huge_reads)
    if args.only_huge_reads:
        return finish()
    for probe in [framing, lambda t: chunked_body(t, args.max_body), cors, text, observer_id, extremes, ambiguity,
                  lambda t: write_rate(t, args.write_burst)]:
        probe(target)
        control(target)
    if args.max_connections_per_address:
        connections(target, args.max_connections_per_address)
        control(target)
    if not args.skip_slow:
        slow_sender(target, args.request_timeout)
    if args.fill_from:
        fill(target, args.fill_from, args.max_rows)
    finish()


def finish():
    times = sorted(took for took, _ in HEALTH)
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] if times else 0
    record(f"a control client's /healthz: p99 {p99 * 1000:.1f} ms of {len(times)}, under 50 ms",
           p99 < 0.05 and all(status in (200, 503) for _, status in HEALTH))
    failed = [name for name, ok in RESULTS if not ok]
    print(f"{len(RESULTS) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
