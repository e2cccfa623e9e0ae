"""observable-server (or another program that answers GET /healthz) as a
child process on 127.0.0.1, and what is measured of such a process."""

import os
import re
import resource
import signal
import socket
import subprocess
import time

from .client import HOST, Client, ConnectionLost

LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")

# The quotas of one address on a trusted network, raised for the checkers
# and the benchmarks, which make thousands of observers or streams from
# 127.0.0.1 (docs/OPERATIONS.md, "Quotas"). Given in the environment, which
# a build from before the quotas ignores: bench/ compares builds. What the
# caller's own environment says wins.
TRUSTED_QUOTAS = {
    "OBSERVABLE_MAX_OBSERVERS_PER_CLIENT": "10000000",
    "OBSERVABLE_MAX_OBSERVERS": "10000000",
    "OBSERVABLE_MAX_REGISTRY_MEMORY": "64G",
    "OBSERVABLE_MAX_STREAMS_PER_CLIENT": "10000000",
    "OBSERVABLE_MAX_RUNNING_JOBS": "1000000",
    "OBSERVABLE_MIN_JOB_INTERVAL": "10",
    # Exempt from every per-client quota and rate, the write rate and the
    # rows of a collection included.
    "OBSERVABLE_TRUSTED_ADDRESSES": "127.0.0.0/8,::1",
}


def trusted_environment():
    """This process's environment, with the quotas of a trusted address."""
    return {**TRUSTED_QUOTAS, **os.environ}


def serve_command(binary, database, port=0, arguments=()):
    """`observable-server serve` on 127.0.0.1:`port` (0: a free port it picks) and `database`."""
    return [binary, "serve", "--host", HOST, "--port", str(port), "--database", database, *arguments]


def free_port():
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def raise_descriptor_limit():
    """Lets this process, and what it starts from here on, open as many
    descriptors as the hard limit allows."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def cpu_seconds(pid):
    """User and system CPU seconds of a process so far; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_ns(pid):
    """Nanoseconds on a CPU of a process's threads so far (their
    schedstat: precise where `cpu_seconds` counts 10 ms ticks); 0 once it
    is gone. Threads that ended are not counted: for windows in which the
    server's threads stay the same."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def rss_kib(pid):
    """Resident memory of a process (VmRSS), in KiB; 0 if unknown."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class ServerError(RuntimeError):
    """The server did not start."""


class Server:
    """A server process, up once GET /healthz answers 200.

    `command` runs it (`serve_command` makes observable-server's); it
    listens on `port`, or, with port 0, on the port it reports in the line
    `listening on 127.0.0.1:PORT` of its output, read anew at every start
    (which needs `log_path`). Its output is appended to `log_path`, else
    dropped. `start` again after `stop` or `kill` restarts it with the same
    command: on the same database, on the same port unless that is 0.
    """

    def __init__(self, command, port=0, log_path=None, env=None, name="server", preexec_fn=None):
        self.command = list(command)
        self.requested_port = port
        self.port = port or None
        self.log_path = log_path
        self.env = env
        self.name = name
        self.preexec_fn = preexec_fn
        self.process = None
        self.log = None
        self.started_at = None         # time.perf_counter() at the last start
        self.startup_seconds = None    # from the last start until /healthz answered

    @property
    def pid(self):
        return self.process.pid

    @property
    def base(self):
        return f"http://{HOST}:{self.port}"

    def where(self):
        return f"; see {self.log_path}" if self.log_path else ""

    def start(self, timeout=60):
        """Starts the process and waits (at most `timeout` seconds) until it
        answers; a server that exits or does not answer by then is killed
        and ServerError raised."""
        if self.requested_port == 0 and self.log_path is None:
            raise ValueError("a server on port 0 needs a log to tell its port")
        self._close_log()
        offset = 0
        if self.log_path is not None:
            self.log = open(self.log_path, "ab")
            offset = os.path.getsize(self.log_path)
        self.started_at = time.perf_counter()
        self.process = subprocess.Popen(self.command, stdout=self.log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                        env=self.env, preexec_fn=self.preexec_fn)
        deadline = time.monotonic() + timeout
        try:
            if self.requested_port == 0:
                self.port = self._reported_port(offset, deadline)
            self._wait_healthy(deadline)
        except BaseException:
            self.kill()
            raise
        self.startup_seconds = time.perf_counter() - self.started_at
        return self

    def _exited(self):
        if self.process.poll() is not None:
            raise ServerError(f"{self.name} exited with {self.process.returncode} at start{self.where()}")

    def _reported_port(self, offset, deadline):
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                found = LISTENING.findall(f.read().decode("utf-8", "replace"))
            if found:
                return int(found[-1])
            self._exited()
            time.sleep(0.005)
        raise ServerError(f"{self.name} did not say where it listens{self.where()}")

    def _wait_healthy(self, deadline):
        while time.monotonic() < deadline:
            self._exited()
            client = Client(self.port, timeout=max(0.1, min(5.0, deadline - time.monotonic())))
            try:
                if client.exchange("GET", "/healthz")[0] == 200:
                    return
            except ConnectionLost:
                pass
            finally:
                client.close()
            time.sleep(0.005)
        raise ServerError(f"{self.name} did not answer GET /healthz on port {self.port}{self.where()}")

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout=30):
        """SIGTERM, then waits: the exit status, or None if it had not
        exited after `timeout` seconds and was killed (or never started)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                return None
        self._close_log()
        return self.process.returncode

    def kill(self):
        """SIGKILL (kill -9), and waits for the process to go."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
        self._close_log()

    def _close_log(self):
        if self.log is not None:
            self.log.close()
            self.log = None
