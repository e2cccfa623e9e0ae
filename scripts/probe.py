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
  server still answers).
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

    def request(self, method, path, body=None, headers=None, token=None):
        """One well-formed request; returns (status, headers dict, body bytes)."""
        payload = b"" if body is None else json.dumps(body).encode()
        text = f"{method} {path} HTTP/1.1\r\n" + self.headers(token) + "Connection: close\r\n"
        for name, value in (headers or {}).items():
            text += f"{name}: {value}\r\n"
        if body is not None:
            text += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        with self.connect() as s:
            s.sendall(text.encode("utf-8") + b"\r\n" + payload)
            received = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                received += chunk
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--token", help="the write token (OBSERVABLE_TOKEN), if set")
    parser.add_argument("--read-token", help="the read token (OBSERVABLE_READ_TOKEN), if set")
    parser.add_argument("--max-body", type=int, default=1 << 20, help="the server's --max-body")
    parser.add_argument("--request-timeout", type=int, default=20, help="the server's --request-timeout")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the slow sender (it takes the timeout)")
    args = parser.parse_args()
    target = Target(args.url, args.token, args.read_token)
    framing(target)
    chunked_body(target, args.max_body)
    cors(target)
    text(target)
    observer_id(target)
    extremes(target)
    if not args.skip_slow:
        slow_sender(target, args.request_timeout)
    failed = [name for name, ok in RESULTS if not ok]
    print(f"{len(RESULTS) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
