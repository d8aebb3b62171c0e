"""The documented limits on what a topology may ask for, and on the text it may be written in.

Why limits at all: a count is a promise to start that many processes or pods, and a topology
arrives from files, notebook cells and the REST API. Without a bound, `n_workers: 10**26` or a
400-byte YAML "billion laughs" (aliases that expand to 10**9 values) costs minutes and gigabytes
before anything can say no. With these bounds every check runs in time and memory that do not
grow with what the input claims. The values are what a Kubernetes cluster could still run (its
documented scale is 5,000 nodes and 150,000 pods): a single job of 10,000 replicas is already
far beyond the jobs this tool is meant for. The README's topology section and the JSON schema
state them; change them here only.
"""

from __future__ import annotations

#: Replicas of one role (`n_workers`, `n_ps`).
MAX_REPLICAS_PER_ROLE = 10_000

#: Replicas of every role together (master, workers, parameter servers, evaluator).
MAX_TOTAL_REPLICAS = 10_000

#: Processes started inside one replica (`processes_per_replica`: torch nproc_per_node, MPI slots).
MAX_PROCESSES_PER_REPLICA = 1_024

#: A topology's text, in characters (a 10,000-override topology is well under 1 MiB).
MAX_DOCUMENT_CHARS = 2 * 1024 * 1024

#: Values a YAML document may hold once its aliases (`*name`) are expanded.
MAX_YAML_VALUES = 1_000_000

#: Nesting of mappings and lists (a topology needs 6; the YAML parser's own stack is not unbounded).
MAX_YAML_DEPTH = 64

#: Characters of a user's value quoted in an error message.
MAX_SHOWN_CHARS = 80
