#!/usr/bin/env bash
# JupyterLab for the browser tests: a fresh run store, this checkout's jupyter_px first
# (teardown.js stops the TensorBoard servers the tests started).
set -euo pipefail
cd "$(dirname "$0")"
rm -rf .px_home
mkdir -p .px_home
export PX_HOME="$PWD/.px_home"
export PYTHONPATH="$(cd .. && pwd)${PYTHONPATH:+:$PYTHONPATH}"
exec jupyter lab --config jupyter_server_test_config.py
