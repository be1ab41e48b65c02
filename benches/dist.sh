#!/usr/bin/env bash
# Distribution benchmark on loopback: remote send throughput (msgs/s) and
# request/reply round trips (us), for every pairing of smarm and Erlang
# nodes, in one sitting: smarm->smarm, smarm->erlang, erlang->smarm,
# erlang->erlang. Prints RESULT lines (peer=<client>-<server>).
#
#   benches/dist.sh            # N=200000 sends (N/10 round trips), RUNS=3
#   N=50000 RUNS=1 benches/dist.sh
#
# Needs erl (Debian: erlang-base). EPMD: a private port; when the server is
# a smarm node it serves EPMD itself, otherwise erl starts epmd on that
# port and the script stops it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-200000}"
RUNS="${RUNS:-3}"
PORT="${EPMD_PORT:-24369}"
export ERL_EPMD_PORT="$PORT"
cargo build --release -q -p smarm-dist --example dist_bench
BIN=target/release/examples/dist_bench

ERL_SERVER='Sink = fun L(C) -> receive {done, F} -> F ! {count, C}, L(0); stop -> ok; _ -> L(C + 1) end end,
register(sink, spawn(fun() -> Sink(0) end)),
register(echo, spawn(fun E() -> receive {F, T} -> F ! T, E(); stop -> ok end end)),
io:format("READY~n"), receive never -> ok end.'

erl_client() { # $1 peer node, $2 label
    cat <<EOF
P = '$1', N = $N,
{echo, P} ! {self(), warm}, receive warm -> ok end,
T0 = erlang:monotonic_time(microsecond),
lists:foreach(fun(_) -> {sink, P} ! {msg, 42} end, lists:seq(1, N)),
{sink, P} ! {done, self()},
receive {count, N} -> ok end,
T1 = erlang:monotonic_time(microsecond),
io:format("RESULT peer=$2 workload=dist_send value=~w unit=msgs/s~n", [round(N * 1000000 / (T1 - T0))]),
R = N div 10,
Loop = fun L(0) -> ok; L(K) -> {echo, P} ! {self(), {msg, 42}}, receive _ -> L(K - 1) end end,
T2 = erlang:monotonic_time(microsecond),
Loop(R),
T3 = erlang:monotonic_time(microsecond),
io:format("RESULT peer=$2 workload=dist_roundtrip value=~.1f unit=us~n", [(T3 - T2) / R]),
halt().
EOF
}

SERVER_PID=
stop_all() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
    epmd -port "$PORT" -kill > /dev/null 2>&1 || true
}
trap stop_all EXIT

wait_ready() { # $1 log file
    for _ in $(seq 200); do
        grep -q READY "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "server did not start: $(cat "$1")" >&2
    return 1
}

one() { # $1 client kind, $2 server kind
    local log; log="$(mktemp)"
    if [ "$2" = smarm ]; then
        "$BIN" server srv@localhost "$PORT" > "$log" 2>&1 &
    else
        erl -sname srv@localhost -setcookie bench -noshell -eval "$ERL_SERVER" > "$log" 2>&1 &
    fi
    SERVER_PID=$!
    wait_ready "$log"
    if [ "$1" = smarm ]; then
        DIST_BENCH_LABEL="smarm-$2" "$BIN" client cli@localhost srv@localhost "$PORT" "$N" 2>/dev/null | grep RESULT
    else
        erl -sname cli@localhost -setcookie bench -noshell -start_epmd false \
            -eval "$(erl_client srv@localhost "erlang-$2")" | grep RESULT
    fi
    stop_all
    rm -f "$log"
}

for _ in $(seq "$RUNS"); do
    for pair in "smarm smarm" "smarm erlang" "erlang smarm" "erlang erlang"; do
        # shellcheck disable=SC2086
        one $pair
    done
done
