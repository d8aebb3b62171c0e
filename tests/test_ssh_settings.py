"""The SSH backend's hosts and settings: a hostfile in DeepSpeed's and Horovod's form, `hosts:` in
the settings, placement by slots, and every bad value a one-line error naming the field and the
value; `jupyter px render --backend ssh` shows the placement and the ssh commands. No host is
contacted here (tests/test_ssh_backend.py runs real sshd servers)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_px.backends import BackendError
from jupyter_px.backends.preload import BASE_PRELOAD, FRAMEWORK_PRELOAD
from jupyter_px.backends.ssh.hosts import Host, read_hostfile
from jupyter_px.backends.ssh.plan import place
from jupyter_px.backends.ssh.settings import load_settings
from jupyter_px.topology import parse_topology

ROOT = Path(__file__).resolve().parents[1]


def topology(workers: int = 2, **environment) -> object:
    return parse_topology(
        {
            "version": 1,
            "kind": "experiment",
            "framework": "pytorch",
            "backend": "ssh",
            "environment": {"replicas": {"n_workers": workers}, **environment},
        }
    )


def test_a_hostfile_in_deepspeeds_and_horovods_forms(tmp_path):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("# our GPU boxes\nworker-1 slots=4\n\nalice@gpu2   slots=2  # the new one\ngpu3:3\ngpu4\n")
    assert read_hostfile(hostfile) == [
        Host("worker-1", 4),
        Host("alice@gpu2", 2),
        Host("gpu3", 3),
        Host("gpu4", 1),
    ]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("gpu1 slots=two", "hostfile:1: slots: 'two' is not a whole number"),
        ("gpu1 slots=0", "hostfile:1: slots: '0' is not a positive number of slots"),
        ("gpu1 cpus=4", "hostfile:1: 'cpus=4' is not slots=N (a hostfile line is `host slots=N`)"),
        (
            "-oProxyCommand=evil slots=1",
            "hostfile:1: host: '-oProxyCommand=evil' is not a host name, alias or user@host",
        ),
    ],
)
def test_a_bad_hostfile_line_is_one_line_naming_the_field_and_value(tmp_path, line, said):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(line + "\n")
    with pytest.raises(BackendError) as error:
        read_hostfile(hostfile)
    assert str(error.value) == f"{hostfile}:{said.removeprefix('hostfile:')}"


def test_settings_from_a_file_and_variables_each_bad_value_named(tmp_path, monkeypatch):
    settings_file = tmp_path / "ssh.yaml"
    monkeypatch.setenv("PX_SSH_CONFIG", str(settings_file))
    settings_file.write_text("hosts:\n  - gpu1 slots=2\n  - {host: gpu2, slots: 1, address: 10.1.2.3}\n")
    assert load_settings().machines() == [Host("gpu1", 2), Host("gpu2", 1, "10.1.2.3")]
    monkeypatch.setenv("PX_SSH_HOSTS", "a slots=1,b slots=3")  # variables win over the file
    assert load_settings().machines() == [Host("a", 1), Host("b", 3)]
    for text, said in (
        ("hosts:\n  - {host: gpu1, slot: 2}\n", "hosts[0]: unknown field 'slot' (known: host, slots, address)"),
        ("shared_filesystem: maybe\n", "shared_filesystem: 'maybe' is not one of auto, yes, no"),
        ("ssh_options: ['ProxyCommand nc %h']\n", "ssh_options: 'ProxyCommand nc %h' is not Name=value"),
        ("hostfile: relative/hosts\n", "hostfile: 'relative/hosts' is not an absolute path"),
        ("slot: 2\n", "unknown setting 'slot'"),
        ("warm: sometimes\n", "warm: 'sometimes' is not true or false"),
        (f"warm_dir: /tmp/{'w' * 80}\n", f"warm_dir: '/tmp/{'w' * 80}' is over 80 bytes (a socket path is short)"),
    ):
        monkeypatch.delenv("PX_SSH_HOSTS")
        settings_file.write_text(text)
        with pytest.raises(BackendError) as error:
            load_settings()
        message = str(error.value)
        assert said in message and "\n" not in message, message
        assert message.startswith(str(settings_file)), message
        monkeypatch.setenv("PX_SSH_HOSTS", "a")
    settings_file.write_text("")
    monkeypatch.setenv("PX_SSH_CONNECT_TIMEOUT_S", "soon")
    with pytest.raises(BackendError, match=r"^PX_SSH_CONNECT_TIMEOUT_S: 'soon' is not a number of seconds$"):
        load_settings()


def test_no_hosts_says_where_to_name_them(tmp_path, monkeypatch):
    monkeypatch.setenv("PX_SSH_CONFIG", str(tmp_path / "ssh.yaml"))
    with pytest.raises(BackendError, match="no hosts: name them in a hostfile"):
        load_settings().machines()


def test_replicas_are_placed_by_slots_and_too_many_are_refused():
    hosts = [Host("a", 2), Host("b", 1), Host("c", 4)]
    placed = [(p.key, p.host, p.slot) for p in place(topology(workers=4), hosts)]
    assert placed == [
        ("master-0", "a", 0),
        ("worker-0", "a", 1),
        ("worker-1", "b", 0),
        ("worker-2", "c", 0),
        ("worker-3", "c", 1),
    ]
    with pytest.raises(BackendError) as error:
        place(topology(workers=7), hosts)
    assert str(error.value) == "hosts: 8 replicas do not fit on a slots=2, b slots=1, c slots=4 (7 fit)"
    # two processes per replica take two slots each: b's one slot takes none
    two = [(p.key, p.host) for p in place(topology(workers=2, processes_per_replica=2), hosts)]
    assert two == [("master-0", "a"), ("worker-0", "c"), ("worker-1", "c")]


def test_render_shows_each_replicas_host_and_ssh_command(tmp_path):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("gpu1 slots=2\ngpu2 slots=2\n")
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    spec = tmp_path / "topology.yaml"
    spec.write_text("version: 1\nkind: experiment\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2\n")
    env = dict(os.environ, PX_SSH_HOSTFILE=str(hostfile), PX_SSH_CONFIG=str(tmp_path / "none.yaml"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter_px.cli",
            "render",
            str(script),
            "-f",
            str(spec),
            "--backend",
            "ssh",
            "--name",
            "demo",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "# hosts: gpu1 slots=2, gpu2 slots=2" in text
    commands = [line for line in text.splitlines() if line.startswith("ssh ")]
    assert len(commands) == 3 and "# worker-1: gpu2, slot 0" in text
    argv = shlex.split(commands[2])
    assert argv[argv.index("--") - 1] == "gpu2" and "ControlMaster=auto" in argv
    remote = shlex.split(argv[-1])  # what the host's shell runs: the entry, the run directory, the replica
    assert remote[1].endswith("/runs/demo/ssh/entry.py") and remote[2:5] == [remote[2], "worker", "1"]
    assert remote[2].endswith("/runs/demo")
    # a PyTorch run: the replica is offered to its host's template, which imports torch once
    assert remote[5:] == ["--warm", ",".join((*BASE_PRELOAD, *FRAMEWORK_PRELOAD["pytorch"])), "600"], remote
