"""A real Slurm cluster on this machine for tests and for trying the Slurm backend: Debian's
Slurm 22.05 daemons (munged, slurmctld, one slurmd per node, optionally slurmdbd + MariaDB for
`sacct`), configured for this host in a temporary folder, stopped and cleaned on exit.

    python -m tests.slurm_cluster            # then export the SLURM_CONF it prints

See `cluster.py` (lifecycle), `config.py` (the configuration lines and why), `daemons.py`
(processes, ports, cgroups) and `accounting.py` (slurmdbd + MariaDB).
"""

from .cluster import SlurmCluster, why_unavailable
from .daemons import SlurmUnavailable

__all__ = ["SlurmCluster", "SlurmUnavailable", "why_unavailable"]
