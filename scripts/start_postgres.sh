#!/usr/bin/env bash
# Start a private PostgreSQL server for the storage tests (Debian's package; installed if missing) and
# print its URL. Usage: export SENSITIVITY_TEST_POSTGRES_URL=$(scripts/start_postgres.sh)
# Data under ${PGDATA_DIR:-/tmp/sensitivity-pg}; port ${PGPORT:-54329}; socket in the same folder.
set -euo pipefail
DIR=${PGDATA_DIR:-/tmp/sensitivity-pg}
PORT=${PGPORT:-54329}
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >&2
fi
BIN=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")
RUN_AS=()
if [ "$(id -u)" = 0 ]; then RUN_AS=(runuser -u postgres --); fi
mkdir -p "$DIR" && chown "$( [ "$(id -u)" = 0 ] && echo postgres || id -un)" "$DIR"
if [ ! -f "$DIR/data/PG_VERSION" ]; then
    "${RUN_AS[@]}" "$BIN/initdb" -D "$DIR/data" -A trust -U postgres >&2
fi
if ! "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
    "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
        -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1" start >&2
fi
"${RUN_AS[@]}" "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname='sensitivity'" | grep -q 1 \
    || "${RUN_AS[@]}" "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres sensitivity >&2
echo "postgresql://postgres@127.0.0.1:$PORT/sensitivity"
