#!/usr/bin/env bash
# examples/http_api under a real load generator (wrk), beside the same API
# written in plain tokio + axum with the store as a tokio task
# (examples/http_api/src/bin/plain.rs), in one sitting, interleaved: for
# each round, each connection count and each endpoint, smarm then plain.
#
#   benches/http_api.sh            # 3 rounds of 10 s runs
#   ROUNDS=5 DURATION=20 benches/http_api.sh
#
# Endpoints: GET /items (a store call: an SQLite read of 10 rows) and
# GET /quote (a call to a server that calls a second local HTTP service
# with reqwest). Prints one line per run:
#   RESULT peer=<smarm|plain> workload=<items|quote>_c<conns> rps=<req/s> p99_ms=<ms>
# wrk is installed from Debian's packages when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
PATHS=${PATHS:-/items /quote}
if ! command -v wrk > /dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk > /dev/null
fi
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/integrations}
cargo build --release --manifest-path examples/http_api/Cargo.toml
bin="$CARGO_TARGET_DIR/release"
work=$(mktemp -d)
cleanup() { kill "${pids[@]}" 2> /dev/null || true; rm -rf "$work"; }
pids=()
trap cleanup EXIT

start() { # name binary port
    HTTP_API_ADDR="127.0.0.1:$3" HTTP_API_DB="$work/$1.sqlite" "$bin/$2" > "$work/$1.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        grep -q '^ready' "$work/$1.log" 2> /dev/null && return
        sleep 0.1
    done
    echo "$1 did not start:"; cat "$work/$1.log"; exit 1
}
start smarm http_api 3100
start plain plain 3101
for port in 3100 3101; do
    for i in $(seq 10); do
        curl -s -o /dev/null -H 'content-type: application/json' \
            -d "{\"name\":\"item $i\"}" "http://127.0.0.1:$port/items"
    done
done

run() { # peer port path conns
    out=$(wrk -t2 -c"$4" -d"${DURATION}s" --latency "http://127.0.0.1:$2$3")
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; print v}')
    errors=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
    echo "RESULT peer=$1 workload=${3#/}_c$4 rps=$rps p99_ms=$p99${errors:+ non2xx=$errors}"
}
for round in $(seq "$ROUNDS"); do
    for conns in 50 256; do
        for path in $PATHS; do
            run smarm 3100 "$path" "$conns"
            run plain 3101 "$path" "$conns"
        done
    done
done
