#!/usr/bin/env bash
# Fuzz smarm-dist's parsers as a hostile peer would feed them: each
# target (handshake, frames, term, dispatch) runs for SECONDS (default 60)
# from the seed corpus (written fresh from smarm_dist::fuzz::seeds), on
# the one toolchain here (RUSTC_BOOTSTRAP lets cargo fuzz use its
# sanitizer flags on stable). A crasher lands in fuzz/artifacts/<target>/;
# once fixed, copy it into fuzz/regressions/<target>/, where the unit
# tests keep running it.
#
#   cargo install cargo-fuzz --locked     # once
#   smarm-dist/fuzz/run.sh 600            # ten minutes each
#   smarm-dist/fuzz/run.sh 600 term       # one target (or several)
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(handshake frames term dispatch)
SMARM_FUZZ_SEEDS="$PWD/corpus" cargo test --manifest-path ../../Cargo.toml \
    -p smarm-dist --lib write_fuzz_seeds_when_asked -q >/dev/null
export RUSTC_BOOTSTRAP=1
for target in "${targets[@]}"; do
    echo "== $target ($secs s)"
    cargo fuzz run --fuzz-dir . "$target" "corpus/$target" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        2>&1 | grep -aE "^(stat::|Done|#[0-9]+ *DONE|==[0-9]+== ERROR|SUMMARY|artifact_prefix|Test unit written)" || true
    echo "corpus/$target: $(ls "corpus/$target" | wc -l) inputs"
done
