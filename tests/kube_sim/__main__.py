"""Start the whole simulated cluster and serve until interrupted:

    python -m tests.kube_sim --kubeconfig /tmp/sim.kubeconfig

then, in another terminal, `KUBECONFIG=/tmp/sim.kubeconfig kubectl get pods` or
`KUBECONFIG=/tmp/sim.kubeconfig jupyter px run train.py -f topology.yaml --backend kubeflow --wait`.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import signal
import sys
import threading

from .cluster import Cluster

CONTROLLERS = ("gc", "scheduler", "kubelet", "job-controller", "jobset-controller", "training-operator", "trainer")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kube_sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True, help="where to write a kubeconfig pointing at the simulation")
    parser.add_argument("--port", type=int, default=0, help="the API server's port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--namespace", action="append", help="a namespace to create (default: default)")
    parser.add_argument("--version", default="1.33.0", help="the Kubernetes version the server reports")
    parser.add_argument(
        "--without", action="append", default=[], choices=CONTROLLERS, help="leave a controller out (repeatable)"
    )
    parser.add_argument(
        "--mpi-operator",
        action="store_true",
        help="serve mpi-operator v0.6.0's MPIJob (kubeflow.org/v2beta1) and run its controller, "
        "instead of the training operator's MPIJob v1",
    )
    parser.add_argument("--trainer", default="2.3", choices=("2.1", "2.3"), help="the Kubeflow Trainer release")
    network = parser.add_mutually_exclusive_group()
    network.add_argument(
        "--pod-network",
        action="store_const",
        const=True,
        dest="pod_network",
        help="require each pod in its own network namespace with an address on a bridge (needs root or "
        "CAP_NET_ADMIN); the default where the machine permits it",
    )
    network.add_argument(
        "--no-pod-network",
        action="store_const",
        const=False,
        dest="pod_network",
        help="pods share this machine's network namespace (127.0.x.y addresses)",
    )
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(name)s %(message)s"
    )
    controllers = tuple(c for c in CONTROLLERS if c not in args.without)
    namespaces = tuple(args.namespace or ("default",))
    stop = threading.Event()
    # Ctrl-C and SIGTERM stop it. Both set explicitly: a process started in the background by a
    # shell without job control (a CI script's `... &`) inherits SIGINT ignored, and Python then
    # leaves it ignored (no KeyboardInterrupt): such a simulation never stopped on SIGINT.
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    # `kill -USR1` prints every thread's stack (to stderr): what a stop that does not end waits on
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    with Cluster(
        namespaces=namespaces,
        version=args.version,
        port=args.port,
        controllers=controllers,
        trainer=args.trainer,
        mpi_operator=args.mpi_operator,
        pod_network=args.pod_network,
    ) as cluster:
        cluster.kubeconfig(args.kubeconfig, namespace=namespaces[0], tls=True)
        kubelet = cluster.kubelet
        isolation = (
            "pods isolated (own mount/UTS namespace, /etc/hosts"
            + (
                ", own network namespace on a bridge)"
                if kubelet and kubelet.network
                else f"; sharing this machine's network: {kubelet.no_pod_network_because if kubelet else ''})"
            )
            if kubelet and kubelet.isolated
            else f"pods not isolated: {kubelet.not_isolated_because if kubelet else 'no kubelet'}"
        )
        print(f"simulated cluster at {cluster.http.secure_url}; kubeconfig {args.kubeconfig}", flush=True)
        print(f"controllers: {', '.join(controllers)}; {isolation}; Ctrl-C to stop", flush=True)
        stop.wait()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
