#!/usr/bin/env bash
# JupyterLab for the browser tests: a fresh run store, this checkout's jupyter_px first, and its
# own configuration, settings, workspaces and runtime folders (never the user's ~/.jupyter);
# teardown.js stops the TensorBoard servers the tests started.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf .px_home .lab_home
mkdir -p .px_home .lab_home/config .lab_home/settings .lab_home/workspaces .lab_home/runtime
export PX_HOME="$PWD/.px_home"
export JUPYTER_CONFIG_DIR="$PWD/.lab_home/config"
export JUPYTERLAB_SETTINGS_DIR="$PWD/.lab_home/settings"
export JUPYTERLAB_WORKSPACES_DIR="$PWD/.lab_home/workspaces"
export JUPYTER_RUNTIME_DIR="$PWD/.lab_home/runtime"
export PYTHONPATH="$(cd .. && pwd)${PYTHONPATH:+:$PYTHONPATH}"
exec jupyter lab --config jupyter_server_test_config.py
