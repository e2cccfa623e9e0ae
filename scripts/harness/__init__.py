"""What every test and benchmark script needs to drive observable-server on
this machine: the server as a child process (`Server`), a keep-alive HTTP
client (`Client`), several instances on one database (`start_instances`)
and the throwaway PostgreSQL server of scripts/with-postgres (`Postgres`).
Standard library only.

The package lives in scripts/harness; bench/harness is a link to it, so a
script in either folder imports it as `harness` when it runs (Python puts
the folder of the script it runs first on its path):

    from harness import Client, Server, serve_command

    server = Server(serve_command(binary, database), log_path="server.log")
    server.start()
    status, headers, body = Client(server.port).request("GET", "/truck")
    server.stop()
"""

from .client import HOST, Client, ConnectionLost
from .instances import start_instances, stop_instances
from .postgres import Postgres, admin_url, postgres_tool
from .server import (Server, ServerError, cpu_ns, cpu_seconds, free_port, raise_descriptor_limit, rss_kib, serve_command,
                     trusted_environment)

__all__ = ["HOST", "Client", "ConnectionLost", "Postgres", "Server", "ServerError", "admin_url", "cpu_ns", "cpu_seconds", "free_port",
           "postgres_tool", "raise_descriptor_limit", "rss_kib", "serve_command", "start_instances", "stop_instances",
           "trusted_environment"]
