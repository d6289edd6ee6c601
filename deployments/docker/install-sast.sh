#!/bin/sh
# Installs the SAST pre-scan's semgrep into its own venv DIR (default /opt/semgrep), every
# dependency pinned by sast-constraints.txt: semgrep's pins (opentelemetry, click, jsonschema)
# conflict with Prefect's, so it never shares reviewflow's environment. The Dockerfile runs it
# (and links DIR/bin/semgrep onto PATH); so do `make dev` (.venv-sast) and `make image-check`.
set -eu
dir="${1:-/opt/semgrep}"
python -m venv "$dir"
"$dir/bin/python" -m pip install --no-cache-dir --disable-pip-version-check --quiet \
    --constraint deployments/docker/sast-constraints.txt semgrep==1.185.0
"$dir/bin/python" -m pip check
"$dir/bin/semgrep" --experimental --version
