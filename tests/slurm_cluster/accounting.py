"""Accounting for the test cluster: a private MariaDB server and slurmdbd, so `sacct` answers.

Debian's `mariadb-server` and `slurmdbd` packages; nothing of the host's MariaDB is used: the
database lives in the cluster's folder, listens on a free port on 127.0.0.1 and on its own socket,
and is stopped with the cluster. `slurmdbd.conf` (mode 600, as slurmdbd demands) sits beside
`slurm.conf`, where slurmdbd looks for it (SLURM_CONF's folder). The cluster is registered with
`sacctmgr -i add cluster` before slurmctld starts, so slurmctld needs no restart.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from .config import slurmdbd_conf
from .daemons import SlurmUnavailable, log_tail, read_pid, run, stop_pids, wait_for_pid_file

BINARIES = ("mariadbd", "mariadb-install-db", "mariadb", "slurmdbd", "sacctmgr")


def missing_binaries() -> list[str]:
    return [name for name in BINARIES if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class Accounting:
    """MariaDB + slurmdbd for one cluster (start, then `register`, stop)."""

    def __init__(self, root: Path, munge_socket: Path, dbd_port: int, db_port: int):
        self.root, self.munge_socket = root, munge_socket
        self.dbd_port, self.db_port = dbd_port, db_port
        self.data = root / "mariadb"
        self.socket = root / "run" / "mariadb.sock"
        self.db_pid_file = root / "run" / "mariadb.pid"
        self.db_log = root / "log" / "mariadb.log"
        self.password = secrets.token_hex(12)
        self._db_process: subprocess.Popen | None = None

    def start(self, env: Mapping[str, str]) -> None:
        missing = missing_binaries()
        if missing:
            raise SlurmUnavailable(f"accounting needs {', '.join(missing)}: apt-get install slurmdbd mariadb-server")
        self.data.mkdir(parents=True)
        run(
            [
                _binary("mariadb-install-db"),
                f"--datadir={self.data}",
                "--user=root",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
            ],
            env,
            "mariadb-install-db",
            timeout=120,
        )
        with open(self.db_log, "ab") as log:
            self._db_process = subprocess.Popen(
                [
                    _binary("mariadbd"),
                    "--no-defaults",
                    f"--datadir={self.data}",
                    f"--socket={self.socket}",
                    f"--port={self.db_port}",
                    "--bind-address=127.0.0.1",
                    f"--pid-file={self.db_pid_file}",
                    "--user=root",
                    "--skip-name-resolve",
                    "--innodb-buffer-pool-size=16M",
                    "--performance-schema=off",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._wait_for_database(env)
        sql = (
            f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{self.password}';"
            "CREATE DATABASE slurm_acct_db;"
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
            "FLUSH PRIVILEGES;"
        )
        run([_binary("mariadb"), f"--socket={self.socket}", "-u", "root", "-e", sql], env, "creating the database")
        conf = Path(env["SLURM_CONF"]).parent / "slurmdbd.conf"
        conf.write_text(slurmdbd_conf(self.root, self.munge_socket, self.dbd_port, self.db_port, self.password))
        conf.chmod(0o600)
        run([_binary("slurmdbd")], env, "slurmdbd")
        wait_for_pid_file(self.root / "run" / "slurmdbd.pid", "slurmdbd", self.root / "log" / "slurmdbd.log")

    def _wait_for_database(self, env: Mapping[str, str], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._db_process is not None and self._db_process.poll() is not None:
                raise SlurmUnavailable(f"mariadbd exited ({self._db_process.returncode}){log_tail(self.db_log)}")
            ping = subprocess.run(
                [_binary("mariadb"), f"--socket={self.socket}", "-u", "root", "-e", "SELECT 1"],
                env=dict(env),
                capture_output=True,
            )
            if ping.returncode == 0:
                return
            time.sleep(0.2)
        raise SlurmUnavailable(f"MariaDB did not answer within {timeout:g} s{log_tail(self.db_log)}")

    def register(self, cluster: str, env: Mapping[str, str], timeout: float = 30.0) -> None:
        """`sacctmgr -i add cluster` once slurmdbd answers (it takes a moment to connect to MariaDB)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                run([_binary("sacctmgr"), "-i", "add", "cluster", cluster], env, "sacctmgr add cluster")
                return
            except SlurmUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def stop(self) -> None:
        stop_pids([read_pid(self.root / "run" / "slurmdbd.pid") or 0])
        pids = [read_pid(self.db_pid_file) or 0]
        if self._db_process is not None:
            pids.append(self._db_process.pid)
        stop_pids(pids, timeout=20)
        if self._db_process is not None:
            try:
                self._db_process.wait(5)
            except subprocess.TimeoutExpired:
                pass
