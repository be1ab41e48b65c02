#!/usr/bin/env bash
# The kv fault test, bounded in time, on loopback: for SECS seconds
# (default 300), redis-benchmark loads examples/kv while the fault driver
# (benches/kv_fault.rs) crashes one shard every second, drops 1,000
# clients mid-command, runs 100 slowloris clients and garbage senders, and
# checks its own keys on the healthy shards. It reports:
#   - the checkers' errors (must be 0),
#   - crashes sent against crash reports in kv's log (must match),
#   - kv's RSS after warm-up and at the end (must be within 10%).
# Exit status 0 when all three hold.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${SECS:-300}"
PORT="${PORT:-7390}"
SHARDS=8
VICTIM=5

if ! command -v redis-benchmark >/dev/null; then
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-tools >&2
fi
cargo build --release --example kv >&2
cargo bench --bench kv_fault --no-run >&2
driver=$(find target/release/deps -maxdepth 1 -type f -executable -name 'kv_fault-*' | head -1)

log=$(mktemp)
target/release/examples/kv --port "$PORT" --shards "$SHARDS" --enable-debug >/dev/null 2>"$log" &
kv=$!
trap 'kill $kv 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
    redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
    sleep 0.1
done

rss() { awk '/VmRSS/ {print $2}' "/proc/$kv/status"; }

# Load for the whole run (redis-benchmark's keys fall on every shard, the
# victim's too, so its errors are expected and not counted).
timeout "$((SECS + 5))" redis-benchmark -p "$PORT" -t set,get,incr -c 50 -n 1000000000 -q \
    >/dev/null 2>&1 &
load=$!
"$driver" "$PORT" "$SECS" "$VICTIM" "$SHARDS" >"$log.driver" &
driver_pid=$!

warmup=$((SECS / 10))
[ "$warmup" -lt 5 ] && warmup=5
sleep "$warmup"
rss_warm=$(rss)
wait "$driver_pid" && driver_ok=1 || driver_ok=0
rss_end=$(rss)
kill "$load" 2>/dev/null || true
wait "$load" 2>/dev/null || true

cat "$log.driver"
crashes=$(awk -F= '/RESULT crashes=/ {print $2}' "$log.driver")
errors=$(awk -F= '/RESULT checker_errors=/ {print $2}' "$log.driver")
reported=$(grep -c 'shard crashed on request' "$log" || true)
alive=$(kill -0 "$kv" 2>/dev/null && echo yes || echo no)
echo "RESULT crash_reports=$reported"
echo "RESULT rss_after_warmup_kib=$rss_warm"
echo "RESULT rss_end_kib=$rss_end"
echo "RESULT kv_alive=$alive"
rm -f "$log.driver"

ok=1
[ "$driver_ok" = 1 ] && [ "${errors:-1}" = 0 ] || { echo "FAIL: checker errors" >&2; ok=0; }
# Every crash the driver saw answered was reported (a crash sent as the
# run ended may be reported without its answer counted).
[ "$reported" -ge "${crashes:-0}" ] && [ "${crashes:-0}" -gt 0 ] || { echo "FAIL: crashes $crashes, reports $reported" >&2; ok=0; }
awk -v w="$rss_warm" -v e="$rss_end" 'BEGIN { exit !(e <= w * 1.10) }' || { echo "FAIL: RSS grew past 10%" >&2; ok=0; }
[ "$alive" = yes ] || { echo "FAIL: kv died" >&2; ok=0; }
[ "$ok" = 1 ] && echo "PASS" || { echo "FAILED"; exit 1; }
