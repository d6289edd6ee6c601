#!/usr/bin/env sh
# deployments/server/start.sh: reviewflow's team server as plain processes, for machines without
# Docker (compose.yaml is the same server in containers; both read server.env). It starts the
# Prefect API server (`prefect server start --no-services`) and its background services
# (`prefect server services start`) on a PostgreSQL database and a Redis that are already running.
#
#   start.sh           both, in the foreground; Ctrl-C or SIGTERM stops both
#   start.sh api       the API server only (exec: its process is this one, for a service manager)
#   start.sh services  the background services only (exec)
#   start.sh setup     once the API answers: the automation that marks a run Crashed when its
#                      heartbeats stop (crash_silent_runs.py; idempotent, run after each upgrade)
#
# Needs: `prefect` on PATH (or PREFECT=/path/to/prefect) with the `server` extra installed
# (prefect-redis), and in the environment:
#   PREFECT_API_DATABASE_CONNECTION_URL  postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DATABASE
# Optional (defaults in server.env): REVIEWFLOW_REDIS_URL (redis://HOST:PORT, no database);
#   REVIEWFLOW_SERVER_HOST (the address the API binds, default 0.0.0.0); PREFECT_SERVER_API_PORT;
#   REVIEWFLOW_HEARTBEAT_WITHIN (setup: seconds without a heartbeat before a run is Crashed);
#   PYTHON (setup: the Python with Prefect, default the one beside `prefect`);
#   REVIEWFLOW_SETUP_API_URL (setup: the API to reach, default this machine's, on loopback).
set -eu
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
what=${1:-both}

# The environment wins over server.env: read the file, keeping every variable already set.
while IFS= read -r line; do
    case $line in '' | '#'*) continue ;; esac
    name=${line%%=*}
    eval "isset=\${$name+x}"
    # shellcheck disable=SC2154
    [ -n "$isset" ] || export "$line"
done <"$here/server.env"

if [ -z "${PREFECT_API_DATABASE_CONNECTION_URL:-}" ]; then
    echo "start.sh: error: PREFECT_API_DATABASE_CONNECTION_URL is not set (postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DATABASE)" >&2
    exit 2
fi
case $PREFECT_API_DATABASE_CONNECTION_URL in
    postgresql+asyncpg://*) ;;
    *)
        echo "start.sh: error: PREFECT_API_DATABASE_CONNECTION_URL must start with postgresql+asyncpg:// (the team server runs on PostgreSQL)" >&2
        exit 2
        ;;
esac
redis=${REVIEWFLOW_REDIS_URL%/}
case $redis in
    redis://* | rediss://*) ;;
    *)
        echo "start.sh: error: REVIEWFLOW_REDIS_URL must be redis://HOST:PORT or rediss://HOST:PORT, not '$redis'" >&2
        exit 2
        ;;
esac
export PREFECT_REDIS_MESSAGING_URL="$redis/0"
export PREFECT_REDIS_WORKER_CLEANUP_QUEUE_URL="$redis/0"
export PREFECT_SERVER_DOCKET_URL="$redis/1"
# The server never talks to another server: no API URL of a profile may leak into it.
export PREFECT_API_URL=
prefect=${PREFECT:-prefect}
host=${REVIEWFLOW_SERVER_HOST:-0.0.0.0}

setup() {
    # The API this machine reaches: loopback when it listens on every address.
    case $host in 0.0.0.0 | '::') at=127.0.0.1 ;; *) at=$host ;; esac
    python=${PYTHON:-$(dirname -- "$(command -v -- "$prefect")")/python}
    api_url=${REVIEWFLOW_SETUP_API_URL:-http://$at:$PREFECT_SERVER_API_PORT/api}
    PREFECT_API_URL=$api_url "$python" "$here/crash_silent_runs.py"
}

case $what in
    api) exec "$prefect" server start --no-services --host "$host" --port "$PREFECT_SERVER_API_PORT" ;;
    services) exec "$prefect" server services start ;;
    setup) setup ;;
    both)
        "$prefect" server start --no-services --host "$host" --port "$PREFECT_SERVER_API_PORT" &
        api=$!
        "$prefect" server services start &
        services=$!
        setup || echo "start.sh: warning: the automation that crashes silent runs is not in place" >&2
        trap 'kill -TERM "$api" "$services" 2>/dev/null' INT TERM
        # Either one ending ends both: a server without its services is not a team server.
        while kill -0 "$api" 2>/dev/null && kill -0 "$services" 2>/dev/null; do sleep 1; done
        kill -TERM "$api" "$services" 2>/dev/null || true
        wait
        ;;
    *)
        echo "start.sh: error: unknown part '$what' (accepted: api, services, setup, or nothing for both)" >&2
        exit 2
        ;;
esac
