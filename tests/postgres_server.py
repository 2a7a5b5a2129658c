"""A throwaway PostgreSQL server for the suite: initdb into a temporary folder, pg_ctl start on a
free port, listening on a unix socket only, stopped and removed at the end. PostgreSQL refuses to
run as root, so as root the server (and psql) run as ``nobody`` through runuser.

Debian's package puts the binaries in /usr/lib/postgresql/<version>/bin; ``.ci/run`` installs it
(apt-get install postgresql), so CI never skips the tests that use it. Elsewhere, without the
binaries, those tests skip and say why.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

USER = "cq"  # the database superuser initdb creates


def binaries() -> Path | None:
    """The folder of initdb, pg_ctl and psql (the newest Debian version), or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: p.parts[-3])
    if found:
        return found[-1].parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, bindir: Path, root: Path, port: int):
        self.bindir, self.root, self.port = bindir, root, port
        self.data = root / "data"
        self.socket_dir = root / "socket"

    def _as_owner(self, *command: str) -> list[str]:
        return ["runuser", "-u", "nobody", "--", *command] if os.geteuid() == 0 else list(command)

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{USER}@/{db}?host={self.socket_dir}&port={self.port}"

    def psql(self, sql: str, db: str = "postgres") -> str:
        """Runs ``sql`` with PostgreSQL's own client, psql (ON_ERROR_STOP: a failure raises)."""
        out = subprocess.run(
            self._as_owner(
                str(self.bindir / "psql"),
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                str(self.socket_dir),
                "-p",
                str(self.port),
                "-U",
                USER,
                "-d",
                db,
                "-c",
                sql,
            ),
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode:
            raise RuntimeError(f"psql failed on {sql!r}: {out.stderr}")
        return out.stdout

    def start(self) -> None:
        self.socket_dir.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.root, "nobody")
            shutil.chown(self.socket_dir, "nobody")
        initdb = [str(self.bindir / "initdb"), "-D", str(self.data), "--auth=trust", "-U", USER]
        options = f"-p {self.port} -k {self.socket_dir} -c listen_addresses='' -c fsync=off"
        log = str(self.root / "log")
        pg_ctl = [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", log, "-w", "-t", "60"]
        for command in ([*initdb, "-E", "UTF8", "--no-sync"], [*pg_ctl, "-o", options, "start"]):
            out = subprocess.run(
                self._as_owner(*command), capture_output=True, text=True, check=False
            )
            if out.returncode:
                log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
                raise RuntimeError(f"{command[0]} failed: {out.stdout}{out.stderr}{log}")

    def stop(self) -> None:
        pg_ctl = str(self.bindir / "pg_ctl")
        subprocess.run(
            self._as_owner(pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"),
            capture_output=True,
            check=False,
        )


@contextmanager
def postgres() -> Iterator[Server]:
    """A running server for the duration of the block."""
    bindir = binaries()
    if bindir is None:
        raise FileNotFoundError("no PostgreSQL binaries (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="cq_pg_"))
    server = Server(bindir, root, _free_port())
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
