#!/bin/sh
# Installs reviewflow (the Dask runner, Bedrock's AWS signing, Azure's Entra ID sign-in) from the
# source tree in the current directory into the active Python, every dependency pinned by
# constraints.txt. The Dockerfile runs it; so does
# `make image-check`, in a fresh venv, where no Docker engine is available.
set -eu
python -m pip install --no-cache-dir --disable-pip-version-check \
    --constraint deployments/docker/constraints.txt ".[dask,bedrock,azure]"
python -m pip check
reviewflow version
