#!/bin/sh
# deployments/server/install-datastores.sh: PostgreSQL and Redis for the team server's tests
# (tests/teamserver/), installed from Debian's packages when missing. `make dev` and .ci/run run
# it. Installs only as root with apt-get; otherwise says in one line why it did not, and the
# tests that need them are skipped with the same reason. Never starts either service.
set -eu
missing=""
have_postgres() {
    command -v initdb >/dev/null 2>&1 && return 0
    for dir in /usr/lib/postgresql/*/bin; do [ -x "$dir/initdb" ] && return 0; done
    return 1
}
have_postgres || missing="postgresql"
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
missing=${missing# }
[ -n "$missing" ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "install-datastores: not root: not installing $missing (the team server's tests will be skipped)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-datastores: no apt-get: not installing $missing (the team server's tests will be skipped)"
    exit 0
fi
echo "install-datastores: installing $missing"
# shellcheck disable=SC2086
if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
    >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
        >/dev/null 2>&1; }; }; then
    echo "install-datastores: apt-get could not install $missing (the team server's tests will be skipped)"
fi
