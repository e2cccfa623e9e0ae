"""A keep-alive HTTP/1.1 client over a plain socket: lean enough that a
benchmark can time through it, complete enough for the checkers (HEAD, 204
and 304 without a body, chunked bodies, several requests in flight)."""

import collections
import json
import select
import socket
import time

HOST = "127.0.0.1"
_CONSTRUCTOR = object()   # "as the client was made", for patience


class ConnectionLost(Exception):
    """The server went away: refused, reset, timed out, or closed before the
    whole answer arrived."""


class _ClosedBeforeAnswer(ConnectionError):
    """The connection closed before any byte of the answer: a keep-alive
    connection the server had closed meanwhile."""


class Client:
    """One keep-alive connection to 127.0.0.1:`port`, made on first use and
    again after the server closed it.

    `request` sends a request and reads its answer: (status, headers, value),
    headers a dict with lower-case names (a repeated header's values joined
    by ", "), value the JSON of the body, or None. `exchange` is the same
    with the body as bytes. `send` and then `answer` (or `receive`, bytes)
    split one of them in two, so that requests can be in flight while
    something else is timed or read; answers come in the order the
    requests were sent.

    `timeout` (seconds; None: none) bounds connecting and each read. A GET
    or HEAD that finds its keep-alive connection closed by the server is
    sent once more on a new one; any other failure is ConnectionLost.
    With `patience`, an answer that has not begun after that many seconds
    is a stall: `on_stall(what, since)` is called (what: "METHOD path",
    since: time.perf_counter() when the wait began), then the wait goes on.
    """

    def __init__(self, port, timeout=30.0, patience=None, on_stall=None):
        self.port = port
        self.timeout = timeout
        self.patience = patience
        self.on_stall = on_stall
        self.sock = None
        self.buffer = bytearray()
        self.pending = collections.deque()   # methods of the requests sent and not yet answered

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def connect(self, timeout=None):
        self.close()
        self.sock = socket.create_connection((HOST, self.port), timeout=timeout or self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
        self.buffer = bytearray()
        self.pending.clear()

    # -- one request

    def request(self, method, path, body=None, headers=None, raw=None, timeout=None, patience=_CONSTRUCTOR):
        """(status, headers, JSON value of the body or None). `body` is sent
        as JSON, `raw` as it is (bytes), both as application/json."""
        status, answer_headers, payload = self.exchange(method, path, body, headers, raw, timeout, patience)
        return status, answer_headers, decode(answer_headers, payload)

    def exchange(self, method, path, body=None, headers=None, raw=None, timeout=None, patience=_CONSTRUCTOR):
        """(status, headers, body as bytes; a large one as a bytearray)."""
        for attempt in (0, 1):
            try:
                if self.sock is None:
                    self.connect(timeout)
                elif timeout is not None:
                    self.sock.settimeout(timeout)
                self.send(method, path, body, headers, raw)
                answer = self.receive(patience)
                break
            except (OSError, ValueError, IndexError) as error:
                self.close()
                # A keep-alive connection the server closed meanwhile: the
                # request never reached it; a read is sent again once.
                if attempt == 0 and method in ("GET", "HEAD") and \
                        isinstance(error, (_ClosedBeforeAnswer, BrokenPipeError, ConnectionResetError)):
                    continue
                raise ConnectionLost(f"{method} {path}: {type(error).__name__}: {error}") from None
        if timeout is not None and self.sock is not None:
            self.sock.settimeout(self.timeout)
        return answer

    # -- a request and its answer apart

    def send(self, method, path, body=None, headers=None, raw=None):
        """Sends a request without waiting for its answer (connecting first if needed)."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        fields = {"Host": f"{HOST}:{self.port}"}
        if data is not None:
            fields["Content-Type"] = "application/json"
        fields.update(headers or {})
        if data is not None or method in ("POST", "PUT", "PATCH"):
            fields["Content-Length"] = str(len(data or b""))
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{name}: {value}\r\n" for name, value in fields.items())
        if self.sock is None:
            self.connect()
        self.pending.append(f"{method} {path}")
        self.sock.sendall(head.encode("latin-1") + b"\r\n" + (data or b""))

    def answer(self, patience=_CONSTRUCTOR):
        """`receive`, with the JSON of the body: (status, headers, value or None)."""
        status, headers, payload = self.receive(patience)
        return status, headers, decode(headers, payload)

    def receive(self, patience=_CONSTRUCTOR):
        """The answer to the oldest request sent and not yet answered:
        (status, headers, body as bytes)."""
        what = self.pending.popleft() if self.pending else "GET ?"
        patience = self.patience if patience is _CONSTRUCTOR else patience
        began = time.perf_counter()
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            while end < 0:
                if patience is not None and not select.select([self.sock], [], [], patience)[0]:
                    if self.on_stall is not None:
                        self.on_stall(what, began)
                    continue
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    if self.buffer:
                        raise ConnectionError("closed in the middle of an answer's head")
                    raise _ClosedBeforeAnswer("closed before the answer")
                self.buffer += chunk
                end = self.buffer.find(b"\r\n\r\n")
            lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            del self.buffer[:end + 4]
            status = int(lines[0].split()[1])
            if not 100 <= status < 200:
                break
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if colon:
                name, value = name.strip().lower(), value.strip()
                headers[name] = headers[name] + ", " + value if name in headers else value
        if what.startswith("HEAD ") or status in (204, 304):
            payload = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            payload = self._chunked()
        elif "content-length" in headers:
            payload = self._exactly(int(headers["content-length"]))
        else:
            payload = self._until_closed()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, payload

    # -- the server's own resources

    def metrics(self):
        """GET /metrics: {sample name (with its labels): value}."""
        _, _, payload = self.exchange("GET", "/metrics")
        values = {}
        for line in bytes(payload).decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        return values

    def metric(self, name):
        return self.metrics().get(name, 0.0)

    # -- reading a body

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("closed in the middle of an answer")
        self.buffer += chunk

    def _line(self):
        while (end := self.buffer.find(b"\r\n")) < 0:
            self._fill()
        line = bytes(self.buffer[:end])
        del self.buffer[:end + 2]
        return line

    def _exactly(self, length):
        if len(self.buffer) >= length:
            payload = bytes(self.buffer[:length])
            del self.buffer[:length]
            return payload
        # Straight into a buffer of the body's size: a whole truck of a
        # million orders is over 100 MB.
        content = bytearray(length)
        view = memoryview(content)
        filled = len(self.buffer)
        view[:filled] = self.buffer
        self.buffer = bytearray()
        while filled < length:
            got = self.sock.recv_into(view[filled:], min(length - filled, 1 << 20))
            if not got:
                raise ConnectionError("closed in the middle of an answer")
            filled += got
        return content

    def _chunked(self):
        out = bytearray()
        while True:
            size = int(self._line().split(b";")[0], 16)
            if size == 0:
                while self._line():   # trailers, up to the empty line
                    pass
                return bytes(out)
            out += self._exactly(size)
            self._line()

    def _until_closed(self):
        out = bytearray(self.buffer)
        while chunk := self.sock.recv(1 << 16):
            out += chunk
        self.close()
        return bytes(out)


def decode(headers, payload):
    """The JSON value of a body, or None (no body, not JSON, or malformed)."""
    if payload and "json" in headers.get("content-type", ""):
        try:
            return json.loads(payload)
        except ValueError:
            return None
    return None
