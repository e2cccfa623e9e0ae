"""How the checker reaches the servers: the instances under test, one
keep-alive client per instance, long-polls parked on threads of their own,
and event streams read over a raw socket."""

import json
import os
import random
import socket
import threading
import time

from harness import Client, ConnectionLost, Postgres, admin_url, start_instances, trusted_environment

# What every instance runs with: every change kept (the checker replays
# from 0), long-polls of up to a minute, and, since every observer's poll
# comes from 127.0.0.1, no share per address.
ARGUMENTS = ["--retain-changes", "100000000", "--retain-changes-bytes", "100000000000", "--max-long-poll", "60",
             "--idle-timeout", "120", "--max-connections-per-address", "1000000"]


def start_servers(args, folder, count, database, fault=None):
    """The instances of a run on `database`, started: one, or three named A, B
    and C; with OBSERVABLE_PLANTED_FAULT set to `fault` (unset if None) and the
    quotas of a trusted address."""
    env = trusted_environment()
    env.pop("OBSERVABLE_PLANTED_FAULT", None)
    if fault:
        env["OBSERVABLE_PLANTED_FAULT"] = fault
    names = [f"instance {'ABC'[i] if count > 1 else 'server'}" for i in range(count)]
    return start_instances(count, args.binary, database, folder, ARGUMENTS, env=env, names=names)


def stop_server(instance, how, report):
    """"kill": kill -9. "term": SIGTERM, after which the instance must exit 0 within 30 s."""
    if instance.process is None:
        return
    if how == "kill":
        instance.kill()
        return
    code = instance.stop(30)
    if code is None:
        report.fail("crash", f"{instance.name} did not stop within 30 s of SIGTERM; killed")
    elif code != 0:
        report.fail("crash", f"{instance.name} exited {code} after SIGTERM (expected 0); see {instance.log_path}")


def cluster_database(args):
    """A new database on the PostgreSQL server of --postgres-url or
    scripts/with-postgres; its URL (None without either)."""
    admin = admin_url(args.postgres_url)
    if not admin:
        return None
    return Postgres(admin).create(f"precision_{os.getpid()}_{random.randrange(1 << 30)}")


class Transport:
    """The checker's requests: each to one instance (at random where there
    are several), on that instance's keep-alive client. Needs `instances`,
    `clients`, `rng` and `report`."""

    def pick(self):
        k = self.rng.randrange(len(self.instances)) if len(self.instances) > 1 else 0
        return k

    def req(self, method, path, body=None, raw=None, headers=None, k=None, timeout=None):
        if k is None:
            k = self.pick()
        inst = self.instances[k]
        if self.clients[k].port != inst.port:
            self.clients[k].close()
            self.clients[k] = Client(inst.port)
        try:
            return self.clients[k].request(method, path, body=body, raw=raw, headers=headers, timeout=timeout)
        except ConnectionLost as e:
            alive = inst.alive()
            self.report.fail("crash", f"{inst.name}: {e}; the process is {'alive' if alive else 'gone: see ' + inst.log_path}")
            if not alive:
                inst.start()
            raise

    def current_etag(self, url):
        status, h, _ = self.req("GET", url)
        return h.get("etag") if status == 200 else None


class Parked(threading.Thread):
    """A long-poll on a thread (and a connection) of its own: its answer and when it came."""

    def __init__(self, port, url, timeout):
        super().__init__(daemon=True)
        self.port, self.url, self.timeout = port, url, timeout
        self.status = None
        self.answer = None
        self.error = None
        self.started_at = None
        self.done_at = None

    def run(self):
        c = Client(self.port, timeout=self.timeout + 15)
        self.started_at = time.monotonic()
        try:
            self.status, _, self.answer = c.request("GET", self.url)
        except ConnectionLost as e:
            self.error = str(e)
        self.done_at = time.monotonic()
        c.close()


# ---------------------------------------------------------------------------
# Streams (Server-Sent Events) over a raw socket


def sr_cursor(events):
    """The cursor of a stream's last event, for failure reports."""
    for ev in reversed(events):
        try:
            return json.loads(ev["data"]).get("cursor")
        except (ValueError, AttributeError):
            continue
    return None


class StreamReader(threading.Thread):
    """Reads one SSE answer; collects (id, event, data, retry) tuples."""

    def __init__(self, port, path, headers):
        super().__init__(daemon=True)
        self.port, self.path, self.headers = port, path, headers
        self.events = []
        self.status = None
        self.content_type = None
        self.error = None
        self.ended = False
        self.stop_flag = False
        self.sock = None
        self.opened = threading.Event()

    def run(self):
        try:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            req = f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            for k, v in self.headers.items():
                req += f"{k}: {v}\r\n"
            self.sock.sendall((req + "\r\n").encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionLost("stream closed before its headers")
                buf += chunk
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            self.status = int(lines[0].split()[1])
            hdrs = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                hdrs[k.strip().lower()] = v.strip()
            self.content_type = hdrs.get("content-type", "")
            self.opened.set()
            chunked = "chunked" in hdrs.get("transfer-encoding", "").lower()
            if self.status != 200:
                return
            self.sock.settimeout(0.2)
            raw = buf
            text = ""
            while not self.stop_flag:
                # decode what we have
                if chunked:
                    while True:
                        j = raw.find(b"\r\n")
                        if j < 0:
                            break
                        size = int(raw[:j].split(b";")[0], 16)
                        if size == 0:
                            self.ended = True
                            break
                        if len(raw) < j + 2 + size + 2:
                            break
                        text += raw[j + 2:j + 2 + size].decode("utf-8")
                        raw = raw[j + 2 + size + 2:]
                else:
                    text += raw.decode("utf-8")
                    raw = b""
                while "\n\n" in text:
                    block, text = text.split("\n\n", 1)
                    self.parse(block)
                if self.ended:
                    break
                try:
                    more = self.sock.recv(65536)
                except socket.timeout:
                    continue
                if not more:
                    self.ended = True
                    break
                raw += more
        except Exception as e:   # noqa: BLE001
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self.opened.set()
            try:
                if self.sock:
                    self.sock.close()
            except OSError:
                pass

    def parse(self, block):
        ev = {"id": None, "event": None, "data": [], "retry": None}
        anything = False
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            k, _, v = line.partition(":")
            v = v[1:] if v.startswith(" ") else v
            anything = True
            if k == "data":
                ev["data"].append(v)
            elif k in ("id", "event", "retry"):
                ev[k] = v
        if anything:
            ev["at"] = time.monotonic()
            ev["data"] = "\n".join(ev["data"])
            self.events.append(ev)

    def close(self):
        self.stop_flag = True
        self.join(timeout=3)
