# reviewflow: the CLI (`docker run IMAGE review ...`) and a Prefect worker image
# (`docker run --entrypoint prefect IMAGE worker start --pool reviewflow`).
FROM python:3.11-slim-bookworm

# Prefect never phones home from this image; Python stays quiet and unbuffered.
ENV DO_NOT_TRACK=1 \
    PREFECT_SERVER_ANALYTICS_ENABLED=false \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    REVIEWFLOW_CODE_DIR=/opt/reviewflow \
    REVIEWFLOW_HOME=/home/reviewflow/.reviewflow

# git from the base image's Debian release (its security updates replace exact versions).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/reviewflow
COPY pyproject.toml README.md prefect.yaml ./
COPY deployments/docker ./deployments/docker
COPY reviewflow ./reviewflow
COPY tasks ./tasks
COPY flows ./flows
# reviewflow with the dask, bedrock and azure extras (Entra ID sign-in for Azure OpenAI), pinned;
# semgrep for `--sast`, in a venv of its own (its pins conflict with Prefect's), on PATH.
RUN sh deployments/docker/install.sh \
    && sh deployments/docker/install-sast.sh /opt/semgrep \
    && ln -s /opt/semgrep/bin/semgrep /usr/local/bin/semgrep \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin reviewflow

USER 10001
# The managed Prefect home's first start (database migrated, block types registered), done at
# build time: a review in the image pays a cold start, never a first-ever one.
RUN reviewflow server prepare
WORKDIR /work

ENTRYPOINT ["reviewflow"]
CMD ["--help"]
