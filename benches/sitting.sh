#!/usr/bin/env bash
# One interleaved sitting: smarm's workloads against its peers', round by
# round (each round runs every workload once on every peer, the peers'
# order turning from round to round), so that a machine's drift lands on
# every column alike. Prints medians (min-max) and smarm's ratio to the
# best peer, and keeps the raw lines.
#
#   benches/sitting.sh                                  # 10 rounds, smarm go tokio
#   ROUNDS=3 WORKLOADS="spawn fanin" benches/sitting.sh
#   PEERS="smarm go tokio erlang" benches/sitting.sh
#
# Env:
#   ROUNDS     rounds (default 10)
#   WORKLOADS  default: spawn pingpong pingpong1 ring skynet call call1
#              fanin timers timers_warm memory yield spawn_1m
#              (call1 is call on one scheduler; smarm only)
#   PEERS      smarm go tokio erlang may ractor (default: smarm go tokio)
#   PEERS_DIR  the shared peer suite (default: ../shared/peers beside the
#              repository); copied to a scratch directory and built there
#   LOG        the raw RESULT/EXTRA lines (default target/sitting/raw-<time>.txt)
#
# Needs go and erl for those peers: ../shared/peers/setup.sh installs them.
# The Rust peers build once into target/peers (kept between sittings).
# Workloads the shared suite lacks have twins here: benches/peers/go-twins
# and benches/peers/tokio-twins (yield, timers_warm), benches/peers/go-spawn-1m.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS="${ROUNDS:-10}"
WORKLOADS="${WORKLOADS:-spawn pingpong pingpong1 ring skynet call call1 fanin timers timers_warm memory yield spawn_1m}"
PEERS="${PEERS:-smarm go tokio}"
PEERS_DIR="${PEERS_DIR:-$ROOT/../shared/peers}"
mkdir -p "$ROOT/target/sitting" "$ROOT/target/peers"
LOG="${LOG:-$ROOT/target/sitting/raw-$(date +%Y%m%d-%H%M%S).txt}"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

die() { echo "sitting.sh: $*" >&2; exit 1; }
has_peer() { [[ " $PEERS " == *" $1 "* ]]; }

# --- build everything first: never compile while a benchmark runs --------
[ -d "$PEERS_DIR" ] || die "no peer suite at $PEERS_DIR (set PEERS_DIR)"
cp -r "$PEERS_DIR" "$SCRATCH/peers"
SUITE="$SCRATCH/peers"
rm -rf "$SUITE/rust/target" "$SUITE/go/gopeer" "$SUITE/erlang/ebin"
ln -s "$ROOT/target/peers" "$SUITE/rust/target"
echo "building smarm's workloads" >&2
SMARM_BIN="$(cd "$ROOT" && cargo bench --bench workloads --no-run --message-format=json 2>/dev/null \
    | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -n 1)"
[ -x "$SMARM_BIN" ] || die "could not build benches/workloads.rs"
if has_peer go; then
    command -v go >/dev/null || die "go not found: run ../shared/peers/setup.sh"
    echo "building the go peer and twins" >&2
    (cd "$SUITE/go" && go build -o gopeer .) >&2
    (cd "$ROOT/benches/peers/go-twins" && go build -o "$SCRATCH/gotwins" .) >&2
    (cd "$ROOT/benches/peers/go-spawn-1m" && go build -o "$SCRATCH/gospawn1m" .) >&2
fi
if has_peer erlang; then
    command -v erlc >/dev/null || die "erlc not found: run ../shared/peers/setup.sh"
    mkdir -p "$SUITE/erlang/ebin" && erlc -o "$SUITE/erlang/ebin" "$SUITE/erlang/peers_bench.erl" >&2
fi
if has_peer tokio || has_peer may || has_peer ractor; then
    echo "building the rust peers and twins" >&2
    (cd "$SUITE/rust" && cargo build --release --locked -q) >&2
    (cd "$ROOT" && CARGO_TARGET_DIR="$ROOT/target/peers" cargo build --release -q \
        --manifest-path benches/peers/tokio-twins/Cargo.toml) >&2
fi

# --- one run of one workload on one peer -----------------------------------
SUITE_WORKLOADS=" spawn pingpong pingpong1 ring skynet call fanin timers memory "

# The command for PEER x WORKLOAD, or nothing when the peer has no twin.
cmd_for() {
    local peer="$1" wl="$2"
    case "$peer:$wl" in
        smarm:call1) echo "env SMARM_BENCH_THREADS=1 $SMARM_BIN call" ;;
        smarm:*) echo "$SMARM_BIN $wl" ;;
        *:call1) ;;
        go:yield | go:timers_warm) echo "$SCRATCH/gotwins $wl" ;;
        go:spawn_1m) echo "$SCRATCH/gospawn1m" ;;
        tokio:yield | tokio:timers_warm) echo "$ROOT/target/peers/release/tokio-twins $wl" ;;
        *)
            # The shared suite's own workloads, through its run.sh (one run).
            if [[ "$SUITE_WORKLOADS" == *" $wl "* ]]; then echo "suite $peer $wl"; fi
            ;;
    esac
}

run_one() {
    local peer="$1" wl="$2" cmd out
    cmd="$(cmd_for "$peer" "$wl")"
    [ -n "$cmd" ] || return 0
    if [[ "$cmd" == suite* ]]; then
        out="$(cd "$SUITE" && RUNS=1 LOG="$SCRATCH/suite.log" ./run.sh "$peer" "$wl" 2>/dev/null || true)"
    else
        out="$(timeout -k 5 300 $cmd 2>"$SCRATCH/stderr" || true)"
    fi
    # Keep the workload's name as the sitting knows it (call1, spawn_1m).
    out="$(grep -E '^(RESULT|EXTRA) ' <<<"$out" | sed -E "s/ workload=[^ ]+ / workload=$wl /" || true)"
    if grep -q '^RESULT ' <<<"$out"; then
        tee -a "$LOG" <<<"$out" | grep '^RESULT ' >&2
    else
        echo "FAIL peer=$peer workload=$wl: $(tail -c 300 "$SCRATCH/stderr" 2>/dev/null | tr '\n' ' ')" \
            | tee -a "$LOG" >&2
    fi
}

# --- the rounds ------------------------------------------------------------
read -r -a peer_list <<<"$PEERS"
echo "# sitting $(date -Is) smarm $(cd "$ROOT" && git rev-parse --short HEAD) rounds=$ROUNDS" | tee -a "$LOG" >&2
for ((r = 0; r < ROUNDS; r++)); do
    echo "# round $((r + 1)) of $ROUNDS" | tee -a "$LOG" >&2
    for wl in $WORKLOADS; do
        for ((k = 0; k < ${#peer_list[@]}; k++)); do
            run_one "${peer_list[$(((k + r) % ${#peer_list[@]}))]}" "$wl"
        done
    done
done

# --- the summary -------------------------------------------------------------
python3 - "$LOG" "$PEERS" "$WORKLOADS" <<'EOF'
import statistics, sys
log, peers, workloads = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
results, extras, units, by_round = {}, {}, {}, {}
round_no = 0
for line in open(log):
    if line.startswith("# round "):
        round_no = int(line.split()[2])
    if not line.startswith(("RESULT ", "EXTRA ")):
        continue
    f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    key = (f["workload"], f["peer"])
    if line.startswith("RESULT "):
        results.setdefault(key, []).append(float(f["value"]))
        by_round.setdefault((f["workload"], round_no), {})[f["peer"]] = float(f["value"])
        units[f["workload"]] = f["unit"]
    elif f.get("metric") != "peak_rss":
        extras.setdefault((f["workload"] + " " + f["metric"], f["peer"]), []).append(float(f["value"]))

def cell(v):
    if not v:
        return "—"
    fmt = lambda x: f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}"
    return f"{fmt(statistics.median(v))} ({fmt(min(v))}–{fmt(max(v))}, n={len(v)})"

# A machine's slow minutes (page faults turning dear, say) land on every
# peer of a round alike: the ratio within each round is steadier than the
# ratio of medians, so both are shown.
def round_ratios(wl):
    out = []
    for (w, _), seen in by_round.items():
        others = [v for p, v in seen.items() if p != "smarm"]
        if w == wl and "smarm" in seen and others and min(others) > 0:
            out.append(seen["smarm"] / min(others))
    return out

print(f"\n| workload | unit | " + " | ".join(peers)
      + " | smarm / best peer | per round (median, min–max) | smarm max/min |")
print("| --- | --- | " + " | ".join("---" for _ in peers) + " | --- | --- | --- |")
for wl in workloads:
    row = [cell(results.get((wl, p), [])) for p in peers]
    mine = results.get((wl, "smarm"), [])
    others = [statistics.median(results[(wl, p)]) for p in peers if p != "smarm" and (wl, p) in results]
    ratio = f"{statistics.median(mine) / min(others):.2f}x" if mine and others else "—"
    rr = round_ratios(wl)
    per_round = f"{statistics.median(rr):.2f}x ({min(rr):.2f}–{max(rr):.2f})" if rr else "—"
    spread = f"{max(mine) / min(mine):.2f}" if mine and min(mine) > 0 else "—"
    print(f"| {wl} | {units.get(wl, '')} | " + " | ".join(row) + f" | {ratio} | {per_round} | {spread} |")
if extras:
    print("\n| extra figure | " + " | ".join(peers) + " |")
    print("| --- | " + " | ".join("---" for _ in peers) + " |")
    for name in sorted({k[0] for k in extras}):
        print(f"| {name} | " + " | ".join(cell(extras.get((name, p), [])) for p in peers) + " |")
print(f"\nraw lines: {log}")
EOF
