"""What the SSH backend needs beyond the topology: the machines, how to reach them, what runs there.

Read as every backend family reads its settings (`backends/settings_file.py`): defaults (below),
then a YAML file (`$PX_SSH_CONFIG`, else `$PX_HOME/ssh.yaml`), then `PX_SSH_<FIELD>` variables
(`PX_SSH_HOSTS` comma-separated `host slots=N`, `PX_SSH_SETUP` one line each), each bad value one
line naming where, the setting and the value. The hosts come from `hostfile` (a file in
DeepSpeed's and Horovod's form) or `hosts` (the same lines, or mappings, in the settings), never
both. ssh itself is configured the user's way: `~/.ssh/config` and the user's keys are ssh's own,
`ssh_config` (passed as `ssh -F`) replaces that file when set, `ssh_options` adds `-o` options.
The stop grace is `PX_STOP_GRACE_S`, the one every backend reads.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..base import BackendError
from ..settings_file import SettingsFile, check_bool, check_choice, env_bool, env_comma_list, env_lines, env_seconds
from .hosts import Host, read_hostfile, read_hosts, unique

ENV_PREFIX = "PX_SSH_"
STOP_GRACE_ENV = "PX_STOP_GRACE_S"
DEFAULT_STOP_GRACE_S = 30.0
#: `-o Name=value` options ssh knows the form of; a value with a space or a quote is refused (no
#: shell reads it, but a ProxyCommand written here should be written in ~/.ssh/config instead).
_OPTION = re.compile(r"^[A-Za-z][A-Za-z0-9]*=[^\s'\"]+$")
SHARED_CHOICES = ("auto", "yes", "no")
#: The longest `warm_dir`: a template's socket, `<warm_dir>/<12 hex digits>.sock`, must fit in
#: the 108 bytes of a Unix socket's address.
MAX_WARM_DIR = 80


@dataclass(frozen=True)
class SshSettings:
    #: a hostfile (`host slots=N` lines); None: the `hosts` setting
    hostfile: str | None = None
    #: the hosts, in the hostfile's form or as {host, slots, address} mappings
    hosts: list[Host] = field(default_factory=list)
    #: an ssh configuration file used instead of ~/.ssh/config (`ssh -F`); None: ssh's own
    ssh_config: str | None = None
    #: more `-o Name=value` options for every ssh command
    ssh_options: list[str] = field(default_factory=list)
    #: the Python the replicas run on the hosts (None: this interpreter's path, as on a cluster
    #: whose machines share a filesystem or an image)
    python: str | None = None
    #: whether the hosts see the run store at the same path: yes, no (the run's code is copied to
    #: `remote_dir` and its outputs copied back), auto (proved per host with a file of the run)
    shared_filesystem: str = "auto"
    #: where runs are kept on hosts that do not share the run store
    remote_dir: str = "/tmp/jupyter-px-runs"
    #: shell lines run before each replica (module loads, a venv's activation): the user's own
    setup: list[str] = field(default_factory=list)
    #: where ssh's connection-sharing sockets live (ControlPath; short: a socket path has a limit)
    control_dir: str | None = None
    #: seconds ssh waits for a host to answer
    connect_timeout_s: float = 15.0
    #: seconds every replica waits for the others to start before the run fails
    rendezvous_timeout_s: float = 120.0
    #: replicas of PyTorch runs and runs without a framework start from a template on their host,
    #: which imported torch once (`host_template.py`); false: every replica starts cold
    warm: bool = True
    #: where a host's templates listen (on the host; None: /tmp/jupyter-px-warm-<uid> there)
    warm_dir: str | None = None
    #: seconds a host's template waits for a start before it exits
    warm_idle_s: float = 600.0
    stop_grace_s: float = field(default_factory=lambda: _stop_grace())

    @property
    def interpreter(self) -> str:
        return self.python or sys.executable

    def machines(self) -> list[Host]:
        """The hosts to place replicas on: the hostfile's, else the `hosts` setting's."""
        if self.hostfile:
            return unique(read_hostfile(self.hostfile), f"hostfile {self.hostfile}")
        if not self.hosts:
            raise BackendError(
                f"no hosts: name them in a hostfile (`host slots=N` lines; PX_SSH_HOSTFILE or `hostfile:` in "
                f"{SETTINGS_FILE.path()}) or as `hosts:` there"
            )
        return unique(list(self.hosts), "hosts")

    def control_path(self) -> str:
        folder = self.control_dir or f"/tmp/jupyter-px-ssh-{os.getuid()}"
        return os.path.join(folder, "%C")


def _stop_grace() -> float:
    text = os.environ.get(STOP_GRACE_ENV)
    if not text:
        return DEFAULT_STOP_GRACE_S
    value = env_seconds(text, STOP_GRACE_ENV)
    if value < 0:
        raise BackendError(f"{STOP_GRACE_ENV}: {text!r} is below 0")
    return value


_PATHS = {"hostfile", "ssh_config", "python", "control_dir", "remote_dir", "warm_dir"}
_FLOATS = {"connect_timeout_s", "rendezvous_timeout_s", "warm_idle_s"}
_LISTS = {"setup", "ssh_options"}


def _check(name: str, value: Any, where: str) -> Any:
    """`value` if it is a valid `name`, else BackendError naming where, the setting and the value."""
    if name == "hosts":
        return read_hosts(value, where)
    if name == "warm":
        return check_bool(name, value, where)
    if name in _LISTS:
        if isinstance(value, str):
            value = [line for line in value.splitlines() if line.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BackendError(f"{where}: {name}: {value!r} is not a list of lines")
        if any("\n" in v or "\0" in v for v in value):
            raise BackendError(f"{where}: {name}: one line per entry (no newline inside one)")
        if name == "ssh_options":
            for option in value:
                if not _OPTION.match(option.strip()):
                    raise BackendError(f"{where}: ssh_options: {option!r} is not Name=value (an ssh -o option)")
            value = [option.strip() for option in value]
        return value
    if name in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise BackendError(f"{where}: {name}: {value!r} is not a positive number of seconds")
        return float(value)
    if name == "shared_filesystem":
        if isinstance(value, bool):
            value = "yes" if value else "no"
        return check_choice(name, str(value).lower(), where, SHARED_CHOICES)
    if not isinstance(value, str) or not value.strip():
        raise BackendError(f"{where}: {name}: {value!r} is not text")
    text = os.path.expanduser(value.strip())
    if name in _PATHS and not os.path.isabs(text):
        raise BackendError(f"{where}: {name}: {value!r} is not an absolute path")
    if name == "warm_dir" and len(text.encode()) > MAX_WARM_DIR:
        raise BackendError(f"{where}: warm_dir: {value!r} is over {MAX_WARM_DIR} bytes (a socket path is short)")
    if name in ("hostfile", "ssh_config") and not os.path.isfile(text):
        raise BackendError(f"{where}: {name}: {value!r} is not a file")
    return text


#: How each `PX_SSH_*` variable that is not plain text reads.
_ENV_TEXT: dict[str, Callable[[str, str], Any]] = {
    "hosts": env_comma_list,
    "setup": env_lines,
    "ssh_options": env_comma_list,
    "warm": env_bool,
    **dict.fromkeys(_FLOATS, env_seconds),
}
SETTINGS_FILE = SettingsFile(
    "SSH", SshSettings, ENV_PREFIX, "ssh.yaml", _check, _ENV_TEXT, not_settings={"stop_grace_s"}
)


def config_path() -> Path:
    return SETTINGS_FILE.path()


def load_settings(**overrides: Any) -> SshSettings:
    """Defaults < settings file < PX_SSH_* variables < `overrides`; a hostfile and `hosts` both
    given is an error (which one wins would be a guess)."""
    settings = SETTINGS_FILE.load(**overrides)
    if settings.hostfile and settings.hosts:
        raise BackendError("hostfile and hosts are both set: keep one (a hostfile, or hosts: in the settings)")
    return settings


def to_json(settings: SshSettings) -> dict[str, Any]:
    """The settings a run started with, for its handle (`ssh.json`)."""
    return asdict(settings)


def from_json(data: dict[str, Any]) -> SshSettings:
    """The settings a run's handle keeps (as `to_json` wrote them)."""
    fields = dict(data)
    fields["hosts"] = [Host(**host) for host in fields.get("hosts") or []]
    return replace(SshSettings(), **fields)
