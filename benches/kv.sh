#!/usr/bin/env bash
# examples/kv against redis-server, in one sitting, on loopback.
#
# Builds the example, starts it twice (one scheduler, like redis-server's
# one thread, and the default of one per core) and a redis-server
# (Debian's redis-server and redis-tools are installed if missing), then
# runs
#   redis-benchmark -t ping_inline,set,get,incr,mset -n $N -q
# at -c 50, -c 50 -P 16 and -c 1000, interleaving the servers, RUNS times
# each (default 3), and prints requests/s side by side (the median of the
# runs) and the servers' peak RSS. Then it holds IDLE (default 10,000)
# silent connections open to each server and prints the RSS growth per
# idle connection.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${RUNS:-3}"
N="${N:-200000}"
IDLE="${IDLE:-10000}"
KV_PORT="${KV_PORT:-7379}"
REDIS_PORT="${REDIS_PORT:-7380}"
KVN_PORT="${KVN_PORT:-7381}"
TESTS=ping_inline,set,get,incr,mset

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "installing redis-server and redis-tools" >&2
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server redis-tools >&2
fi
# Enough descriptors for the idle connections (client and servers).
ulimit -n "$((IDLE * 2 + 1024))" 2>/dev/null || ulimit -n "$(ulimit -Hn)"

cargo build --release --example kv >&2
cargo bench --bench kv_idle --no-run >&2
idle_bin=$(find target/release/deps -maxdepth 1 -type f -executable -name 'kv_idle-*' | head -1)

target/release/examples/kv --port "$KV_PORT" --threads 1 --max-clients $((IDLE + 2000)) >/dev/null &
kv=$!
target/release/examples/kv --port "$KVN_PORT" --max-clients $((IDLE + 2000)) >/dev/null &
kvn=$!
redis-server --port "$REDIS_PORT" --save "" --appendonly no --maxclients $((IDLE + 2000)) \
    --daemonize no --logfile /dev/null &
redis=$!
trap 'kill $kv $kvn $redis 2>/dev/null || true' EXIT
for port in "$KV_PORT" "$KVN_PORT" "$REDIS_PORT"; do
    for _ in $(seq 100); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
done

# bench <port> <extra args...>: "test=rps" lines
bench() {
    local port=$1
    shift
    redis-benchmark -p "$port" -t "$TESTS" -n "$N" -q "$@" 2>/dev/null |
        tr '\r' '\n' | grep 'requests per second' |
        sed -E 's/^ *([A-Z_]+)( \(10 keys\))?: ([0-9.]+) requests per second.*/\1=\3/'
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A results
for run in $(seq "$RUNS"); do
    for config in "-c 50" "-c 50 -P 16" "-c 1000"; do
        for server in kv kvn redis; do
            case $server in
                kv) port=$KV_PORT ;;
                kvn) port=$KVN_PORT ;;
                redis) port=$REDIS_PORT ;;
            esac
            # shellcheck disable=SC2086
            while IFS== read -r test rps; do
                results["$config|$test|$server"]+="$rps "
            done < <(bench "$port" $config)
        done
    done
    echo "run $run of $RUNS done" >&2
done

# kv: one scheduler; kvn: the default, one per core.
printf '%-14s %-12s %12s %12s %12s %8s %8s\n' clients test kv kv-percore redis kv/redis \
    percore/redis
for config in "-c 50" "-c 50 -P 16" "-c 1000"; do
    for test in PING_INLINE SET GET INCR MSET; do
        k=$(echo "${results["$config|$test|kv"]:-0}" | tr ' ' '\n' | grep . | median)
        n=$(echo "${results["$config|$test|kvn"]:-0}" | tr ' ' '\n' | grep . | median)
        r=$(echo "${results["$config|$test|redis"]:-0}" | tr ' ' '\n' | grep . | median)
        ratio() { awk -v k="$1" -v r="$r" 'BEGIN { if (r > 0) printf "%.2f", k / r; else print "-" }'; }
        printf '%-14s %-12s %12.0f %12.0f %12.0f %8s %8s\n' "$config" "$test" "$k" "$n" "$r" \
            "$(ratio "$k")" "$(ratio "$n")"
    done
done

peak() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
echo "peak RSS: kv $(peak $kv) KiB, kv-percore $(peak $kvn) KiB, redis-server $(peak $redis) KiB"

# Idle connections: RSS growth per connection, for each server.
idle() {
    local port=$1 pid=$2
    local before after clients
    before=$(rss "$pid")
    coproc holder { "$idle_bin" "$port" "$IDLE"; }
    read -r _ <&"${holder[0]}" # "ready"
    for _ in $(seq 300); do
        clients=$(redis-cli -p "$port" info clients | tr -d '\r' | awk -F: '/^connected_clients/ {print $2}')
        [ "${clients:-0}" -gt "$IDLE" ] && break
        sleep 0.1
    done
    sleep 1
    after=$(rss "$pid")
    exec {holder[1]}>&- # close its stdin: it exits, closing the connections
    wait "$holder_PID" 2>/dev/null || true
    awk -v b="$before" -v a="$after" -v n="$IDLE" -v c="$clients" \
        'BEGIN { printf "%d clients, RSS +%d KiB, %.2f KiB per idle connection\n", c - 1, a - b, (a - b) / n }'
}
echo "kv idle:    $(idle "$KV_PORT" $kv)"
echo "kv-percore idle: $(idle "$KVN_PORT" $kvn)"
echo "redis idle: $(idle "$REDIS_PORT" $redis)"
