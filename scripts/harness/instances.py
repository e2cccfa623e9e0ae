"""Several instances of observable-server on one database."""

import os
import sys

from .server import Server, serve_command


def start_instances(count, binary, database, folder, arguments=(), base_port=0, env=None, names=None,
                    preexec_fn=None):
    """`count` instances of `binary` on `database`, started one after the
    other (the first runs the migrations): on ports base_port, base_port +
    1, …, or each on a port of its own choosing when base_port is 0; the
    output of instance k in `folder`/server-k.log. If one does not start,
    those started are stopped. The Servers, started."""
    instances = []
    try:
        for k in range(count):
            port = base_port + k if base_port else 0
            instance = Server(serve_command(binary, database, port, arguments), port,
                              log_path=os.path.join(folder, f"server-{k}.log"), env=env,
                              name=names[k] if names else f"instance {k}", preexec_fn=preexec_fn)
            instance.start()
            instances.append(instance)
    except BaseException:
        stop_instances(instances)
        raise
    return instances


def stop_instances(instances, timeout=15):
    """Stops each (SIGTERM; killed after `timeout` seconds); warns of an exit
    status other than 0. Their exit statuses (None: killed)."""
    codes = [instance.stop(timeout) for instance in instances]
    if any(code != 0 for code in codes):
        print(f"warning: instance exit statuses {codes}", file=sys.stderr)
    return codes
