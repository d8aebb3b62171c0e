#!/usr/bin/env bash
# JupyterLab for the browser tests: a fresh run store, this checkout's jupyter_px first. When the
# tests end, the TensorBoard servers they started (detached by design, so they outlive a Jupyter
# server) are stopped too: only those recorded in this private store.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf .px_home
mkdir -p .px_home
export PX_HOME="$PWD/.px_home"
export PYTHONPATH="$(cd .. && pwd)${PYTHONPATH:+:$PYTHONPATH}"
PYTHON="${PX_PYTHON:-python}"

cleanup() {
  [ -n "${LAB_PID:-}" ] && kill "$LAB_PID" 2>/dev/null && wait "$LAB_PID" 2>/dev/null || true
  "$PYTHON" -c "from jupyter_px import tensorboard
for server in tensorboard.list_servers():
    tensorboard.stop(server.key)" || true
}
trap cleanup EXIT
trap 'exit 143' TERM INT

jupyter lab --config jupyter_server_test_config.py &
LAB_PID=$!
wait "$LAB_PID"
