"""A PostgreSQL server to make databases on: the throwaway one that
scripts/with-postgres starts (and names in OBSERVABLE_TEST_POSTGRES_ADMIN_URL),
or one given by its admin URL."""

import glob
import os
import re
import shutil
import subprocess
import urllib.parse


def admin_url(given=None):
    """The admin URL given, else the one scripts/with-postgres exports (None without either)."""
    return given or os.environ.get("OBSERVABLE_TEST_POSTGRES_ADMIN_URL")


def postgres_tool(name):
    """A PostgreSQL program (psql, pgbench, …): the highest version's under
    /usr/lib/postgresql, else the one on PATH."""
    for directory in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: [int(x) for x in re.findall(r"\d+", d)],
                            reverse=True):
        if os.access(os.path.join(directory, name), os.X_OK):
            return os.path.join(directory, name)
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"cannot find {name} (scripts/install-deps installs postgresql)")
    return found


class Postgres:
    """The server behind `admin_url`: new databases, SQL through psql, and
    the processes that work for a database."""

    def __init__(self, admin_url):
        self.admin_url = admin_url
        self.psql = postgres_tool("psql")
        self.count = 0

    def url(self, database):
        """The URL of `database` on this server, as the admin URL reaches it."""
        parts = urllib.parse.urlsplit(self.admin_url)
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + database, "", ""))

    def sql(self, statement, database="postgres"):
        """Runs `statement` in `database`; psql's unaligned output."""
        return subprocess.run([self.psql, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", statement, self.url(database)],
                              capture_output=True, text=True, check=True, timeout=60).stdout

    def create(self, name):
        """Makes a database `name`; its URL."""
        self.sql(f"CREATE DATABASE {name}")
        return self.url(name)

    def fresh(self, label):
        """Makes a new database, named after `label` and a count; its name."""
        self.count += 1
        name = f"bench_{self.count}_{re.sub(r'[^a-z0-9]+', '_', label.lower())}"[:60]
        self.create(name)
        return name

    def pids(self, database):
        """PostgreSQL's processes: the database's backends and the background ones."""
        text = self.sql(f"SELECT pid FROM pg_stat_activity WHERE (datname = '{database}' OR datname IS NULL)"
                        " AND pid <> pg_backend_pid()")
        return [int(line) for line in text.split() if line.strip()]
