#!/usr/bin/env bash
# Echo benchmark, smarm against tokio, in one sitting: builds the tokio echo
# server (benches/peers/tokio-echo, outside the smarm workspace), runs the
# same clients against both, RUNS times each (default 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${RUNS:-3}"
PORT="${PORT:-7001}"
cargo build --release --manifest-path benches/peers/tokio-echo/Cargo.toml >&2
cargo bench --bench echo --no-run >&2
benches/peers/tokio-echo/target/release/tokio-echo "127.0.0.1:$PORT" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 0.5
for _ in $(seq "$RUNS"); do
    cargo bench --bench echo 2>/dev/null | grep '^RESULT'
    cargo bench --bench echo -- --server "127.0.0.1:$PORT" --peer tokio 2>/dev/null | grep '^RESULT'
done
