#!/usr/bin/env bash
# Distribution benchmark on loopback: remote send throughput (msgs/s),
# request/reply round trips (us) and erpc calls (us), for every pairing of
# smarm and Erlang nodes, plain and over TLS, in one sitting:
# smarm->smarm, smarm->erlang, erlang->smarm, erlang->erlang. Prints
# RESULT lines (peer=<client>-<server>[-tls]).
#
#   benches/dist.sh            # N=200000 sends (N/10 round trips, N/100 erpc calls), RUNS=3
#   N=50000 RUNS=1 benches/dist.sh
#   TLS=0 benches/dist.sh      # plain TCP only
#
# Needs erl (Debian: erlang-base, erlang-ssl for TLS) and openssl (the TLS
# rows' certificates). EPMD: a private port; when the server is a smarm
# node it serves EPMD itself, otherwise erl starts epmd on that port and
# the script stops it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-200000}"
RUNS="${RUNS:-3}"
PORT="${EPMD_PORT:-24369}"
export ERL_EPMD_PORT="$PORT"
TLS="${TLS:-1}"
cargo build --release -q -p smarm-dist --features tls --example dist_bench
BIN=target/release/examples/dist_bench

# One certificate for localhost, client and server use, from a fresh CA.
CERTS="$(mktemp -d)"
if [ "$TLS" = 1 ]; then
    (cd "$CERTS"
     openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
         -subj "/CN=bench CA" -keyout ca.key -out ca.pem 2> /dev/null
     openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
         -subj "/CN=node" -keyout node.key -out node.csr 2> /dev/null
     printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > ext.cnf
     openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
         -extfile ext.cnf -out node.pem 2> /dev/null
     cat > ssl.conf <<CONF
[{server, [{certfile, "$CERTS/node.pem"}, {keyfile, "$CERTS/node.key"}, {cacertfile, "$CERTS/ca.pem"},
           {verify, verify_peer}, {fail_if_no_peer_cert, true}]},
 {client, [{certfile, "$CERTS/node.pem"}, {keyfile, "$CERTS/node.key"}, {cacertfile, "$CERTS/ca.pem"},
           {verify, verify_peer}]}].
CONF
    )
fi

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
E = max(1, N div 100),
T4 = erlang:monotonic_time(microsecond),
lists:foreach(fun(_) -> 42 = erpc:call(P, erlang, abs, [-42]) end, lists:seq(1, E)),
T5 = erlang:monotonic_time(microsecond),
io:format("RESULT peer=$2 workload=erpc_roundtrip value=~.1f unit=us~n", [(T5 - T4) / E]),
halt().
EOF
}

SERVER_PID=
stop_all() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
    epmd -port "$PORT" -kill > /dev/null 2>&1 || true
}
trap 'stop_all; rm -rf "$CERTS"' EXIT

wait_ready() { # $1 log file
    for _ in $(seq 200); do
        grep -q READY "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "server did not start: $(cat "$1")" >&2
    return 1
}

one() { # $1 client kind, $2 server kind, $3 "tls" or nothing
    local log; log="$(mktemp)"
    local suffix="" erl_tls=() smarm_tls=()
    if [ "${3:-}" = tls ]; then
        suffix=-tls
        erl_tls=(-proto_dist inet_tls -ssl_dist_optfile "$CERTS/ssl.conf")
        smarm_tls=(env DIST_BENCH_TLS="$CERTS")
    fi
    if [ "$2" = smarm ]; then
        "${smarm_tls[@]}" "$BIN" server srv@localhost "$PORT" > "$log" 2>&1 &
    else
        erl -sname srv@localhost -setcookie bench "${erl_tls[@]}" -noshell -eval "$ERL_SERVER" > "$log" 2>&1 &
    fi
    SERVER_PID=$!
    wait_ready "$log"
    if [ "$1" = smarm ]; then
        DIST_BENCH_LABEL="smarm-$2$suffix" "${smarm_tls[@]}" "$BIN" client cli@localhost srv@localhost "$PORT" "$N" 2>/dev/null | grep RESULT
    else
        erl -sname cli@localhost -setcookie bench -noshell -start_epmd false "${erl_tls[@]}" \
            -eval "$(erl_client srv@localhost "erlang-$2$suffix")" | grep RESULT
    fi
    stop_all
    rm -f "$log"
}

modes=(plain)
[ "$TLS" = 1 ] && modes+=(tls)
for _ in $(seq "$RUNS"); do
    for mode in "${modes[@]}"; do
        for pair in "smarm smarm" "smarm erlang" "erlang smarm" "erlang erlang"; do
            # shellcheck disable=SC2086
            one $pair "${mode/plain/}"
        done
    done
done
