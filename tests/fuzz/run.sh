#!/usr/bin/env bash
# Runs one fuzz target for a given time with libFuzzer on the stable
# toolchain, then minimises its corpus back into the repository.
#
#   tests/fuzz/run.sh TARGET SECONDS [libFuzzer flags...]
#
# TARGET is one of: watch_stream kubeconfig status selectors requests
# crd_schema. Inputs come from seeds/TARGET (hand-written, never changed)
# and corpus/TARGET (what earlier runs kept); crashes are written to
# crashes/TARGET, where `cargo test` (tests/replay.rs) replays them with
# the corpus. At the end the script prints executions, coverage and the
# corpus size. Run one target at a time on a shared machine.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
target=${1:?usage: run.sh TARGET SECONDS [libFuzzer flags...]}
seconds=${2:?usage: run.sh TARGET SECONDS [libFuzzer flags...]}
shift 2
case $target in
  watch_stream|kubeconfig|status|selectors|requests|crd_schema) ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac

# Coverage instrumentation with stable rustc: LLVM's SanitizerCoverage
# pass with the counters, PC table and comparison tracing libFuzzer reads
# (what cargo-fuzz passes, minus the sanitizer, which needs nightly).
# With an explicit --target, build scripts and proc-macros are built
# without these flags.
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares"
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$here/targets/target}
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --quiet --manifest-path "$here/targets/Cargo.toml" \
  --target "$host" --bin "$target"
bin=$CARGO_TARGET_DIR/$host/release/$target

seeds=$here/seeds/$target
corpus=$here/corpus/$target
crashes=$here/crashes/$target
mkdir -p "$corpus" "$crashes"
work=$(mktemp -d)
merged=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$work" "$merged" "$log"' EXIT

# A request is a hang past a second (the harness times each one); the
# whole input, of up to six requests, gets more.
case $target in
  requests) timeout=10 max_len=16384 ;;
  crd_schema) timeout=5 max_len=16384 ;;
  *) timeout=2 max_len=8192 ;;
esac
dict=()
[ -f "$here/dict/$target.dict" ] && dict=(-dict="$here/dict/$target.dict")

set +e
"$bin" "$work" "$seeds" "$corpus" "${dict[@]}" \
  -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 \
  -max_len="$max_len" -artifact_prefix="$crashes/" -print_final_stats=1 \
  "$@" 2>&1 | tee "$log" | grep -E '^#[0-9]+\s+(INITED|NEW|REDUCE|pulse|DONE)|ERROR|panicked|SUMMARY|Test unit' | tail -6
status=${PIPESTATUS[0]}
set -e

# Minimise: a small set of inputs covering every edge the run reached
# (edges alone, not hit counts or comparisons, so the repository keeps
# hundreds of inputs rather than thousands), without the seeds (kept
# apart, readable), named by content.
"$bin" -set_cover_merge=1 -use_counters=0 -use_cmp=0 "$merged" "$seeds" "$corpus" "$work" -timeout="$timeout" \
  -rss_limit_mb=2048 -max_len="$max_len" >/dev/null 2>&1 || true
for f in "$seeds"/*; do
  [ -f "$f" ] && rm -f "$merged/$(sha1sum "$f" | cut -c1-40)"
done
find "$corpus" -type f ! -name .gitkeep -delete
cp "$merged"/* "$corpus"/ 2>/dev/null || true

if [ "$status" -ne 0 ] && ! grep -q '^#[0-9]' "$log"; then
  tail -20 "$log" >&2
fi
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
echo "target=$target seconds=$seconds executions=${execs:-?} execs_per_sec=${rate:-?}" \
  "coverage_edges=${cov:-?} features=${ft:-?}" \
  "corpus_files=$(find "$corpus" -type f ! -name .gitkeep | wc -l)" \
  "crashes=$(find "$crashes" -type f ! -name .gitkeep | wc -l)" \
  "fuzzer_exit=$status"
