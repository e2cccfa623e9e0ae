"""Restarts: afterwards the state, every observer's reads and cursor."""

import time

from harness import Client
from ..model import jdump, short
from ..transport import stop_server


class RestartChecks:
    """SIGTERM and kill -9 of an instance, then everything read again: every
    acknowledged write there, every observer's reads and cursor as the
    model has them (after kill -9, within the documented allowance)."""

    def restart(self, k, how):
        inst = self.instances[k]
        t_kill = time.monotonic()
        print(f"restart: {inst.name} by {'SIGTERM' if how == 'term' else 'kill -9'} after {self.stats['ops']} operations", flush=True)
        stop_server(inst, how, self.report)
        inst.start()
        self.clients[k].close()
        self.clients[k] = Client(inst.port)
        context = f"after the {'SIGTERM' if how == 'term' else 'kill -9'} restart of {inst.name}"
        self.check_everything(context, kill_time=t_kill if how == "kill" else None)
        self.check_copies(context, sample=15)

    def check_state(self, context):
        bad = False
        for url, body, _, _ in self.reads.everything():
            status, h, got = self.req("GET", url)
            if status != 200 or jdump(got) != jdump(body):
                bad = True
                self.report.fail("lost-write", f"{context}: GET {url} answered {status} {short(got, 600)}; "
                                               f"the model (every acknowledged write) says {short(body, 600)}")
        status, _, hz = self.req("GET", "/healthz")
        if status != 200 or hz.get("seq") != self.log.newest:
            self.report.fail("lost-write", f"{context}: /healthz answered {status} {short(hz)}; the newest acknowledged seq is {self.log.newest}")
        if bad:
            self.resync(context)

    def check_everything(self, context, kill_time=None):
        self.check_state(context)
        for obs in list(self.observers):
            allowed = None
            if kill_time is not None:
                allowed = {c for (t, c) in obs.history if t > kill_time - 1.5}
                older = [c for (t, c) in obs.history if t <= kill_time - 1.5]
                if older:
                    allowed.add(older[-1])
                else:
                    allowed.add(obs.creation)
                if obs.implicit is None:
                    allowed = None
            self.do_inspect(obs, allowed_cursors=allowed)
