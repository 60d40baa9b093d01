#!/usr/bin/env bash
# Benchmark (not a test): `opship validate bundle` (default suite) of the current tree against
# the baseline commit, in one run, over the same bundles of ../shared/corpus/bundles.
#
#   scripts/bench-validate.sh [BASELINE_COMMIT] [RUNS]
#
# Builds BASELINE_COMMIT (default b3a00f2) from a git worktree under target/bench-baseline and
# the current tree, both `cargo build --release` (the baseline into this tree's target/, where
# its own crates sit beside the current ones and the dependencies are shared, then copied out).
# Then, for RUNS rounds (default 3), it runs both binaries back to back over all bundles and
# prints the CPU time (user+sys), the peak RSS and the parse throughput (MB of YAML/JSON per
# CPU-second) of each, and the ratio. Instruction counts come from `valgrind --tool=callgrind`
# (repeatable on a noisy machine), one thread, over every BENCH_STRIDE-th bundle (default 10,
# 24 bundles; 1 for all of them: about ten minutes per binary). It ends with the median CPU-time ratio and
# the instruction ratio. Both binaries must give the same verdicts; the script says so if not.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base=${1:-b3a00f2}
runs=${2:-3}
stride=${BENCH_STRIDE:-10}
corpus=${OPSHIP_CORPUS:-$root/../shared/corpus/bundles}
[ -d "$corpus" ] || { echo "no corpus at $corpus (set OPSHIP_CORPUS)" >&2; exit 2; }

wt=$root/target/bench-baseline
if [ ! -d "$wt" ]; then
  git worktree add --detach "$wt" "$base" >&2
else
  git -C "$wt" checkout --quiet --detach "$base"
fi
echo "==> building $base and the current tree (release)" >&2
old=$root/target/bench-baseline.opship
(cd "$wt" && CARGO_TARGET_DIR=$root/target cargo build --release --locked --quiet --bin opship)
cp "$root/target/release/opship" "$old"
cargo build --release --locked --quiet --bin opship
new=$root/target/release/opship

mapfile -t bundles < <(find "$corpus" -mindepth 2 -maxdepth 2 -type d | sort)
bytes=$(find "${bundles[@]}" -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) -printf '%s\n' | awk '{s+=$1} END {print s}')
mb=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1e6}')
echo "bundles: ${#bundles[@]}, YAML/JSON: $mb MB" >&2

# CPU seconds (user+sys) and peak RSS (KiB) of one run; verdicts to $3.
measure() {
  local bin=$1 out=$2 verdicts=$3
  /usr/bin/time -f '%U %S %M' -o "$out" "$bin" validate bundle --output json "${bundles[@]}" \
    >"$verdicts" 2>/dev/null || true
  tail -n 1 "$out" | awk '{printf "%.2f %d\n", $1 + $2, $3}'
}
mbps() { awk -v m="$mb" -v c="$1" 'BEGIN {printf "%.1f", m / c}'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ratios=()
printf '%-5s %-10s %-10s %-7s %-13s %-13s %-10s %-10s\n' run "cpu $base" "cpu HEAD" ratio \
  "MB/s $base" "MB/s HEAD" "rss $base" "rss HEAD"
for i in $(seq 1 "$runs"); do
  read -r c_old r_old < <(measure "$old" "$tmp/t_old" "$tmp/v_old.json")
  read -r c_new r_new < <(measure "$new" "$tmp/t_new" "$tmp/v_new.json")
  ratio=$(awk -v a="$c_old" -v b="$c_new" 'BEGIN {printf "%.2f", a / b}')
  ratios+=("$ratio")
  printf '%-5s %-10s %-10s %-7s %-13s %-13s %-10s %-10s\n' "$i" "${c_old}s" "${c_new}s" \
    "${ratio}x" "$(mbps "$c_old")" "$(mbps "$c_new")" "$((r_old / 1024)) MiB" "$((r_new / 1024)) MiB"
done
# The same verdict per bundle (error or not) from both.
if command -v jq >/dev/null; then
  jq -c '[.bundles[]? | {path, valid}]' "$tmp/v_old.json" >"$tmp/p_old" 2>/dev/null || true
  jq -c '[.bundles[]? | {path, valid}]' "$tmp/v_new.json" >"$tmp/p_new" 2>/dev/null || true
  if cmp -s "$tmp/p_old" "$tmp/p_new"; then
    echo "verdicts: the same for every bundle"
  else
    echo "note: verdicts differ between $base and HEAD (new rules?); compare $tmp/v_*.json" >&2
  fi
fi
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
echo "cpu time: median ratio ${median}x over $runs rounds"

if command -v valgrind >/dev/null; then
  subset=()
  for ((j = 0; j < ${#bundles[@]}; j += stride)); do subset+=("${bundles[j]}"); done
  echo "==> instructions (callgrind, ${#subset[@]} bundles, one thread)" >&2
  count() {
    RAYON_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$2" \
      "$1" validate bundle --output json "${subset[@]}" >/dev/null 2>"$tmp/vg.$2" || true
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/vg.$2"
  }
  i_old=$(count "$old" old)
  i_new=$(count "$new" new)
  echo "instructions (${#subset[@]} bundles): $base $i_old, HEAD $i_new, ratio $(awk -v a="$i_old" -v b="$i_new" 'BEGIN {printf "%.2fx", a / b}')"
fi
