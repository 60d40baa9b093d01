#!/usr/bin/env bash
# Benchmark (not a test): `opship manifests` over every bundle of ../shared/corpus/bundles
# (layout bundles/<op>/<ver>/), once for each install mode its CSV supports:
#   AllNamespaces   --watch-namespace ""
#   OwnNamespace    --watch-namespace bench-system   (= --namespace)
#   SingleNamespace --watch-namespace watched
# each with -o to a fresh directory under a temporary directory.
#
#   scripts/bench-manifests.sh
#
# Builds the release binary (OPSHIP_BIN names another one and skips the build), reads each
# CSV's supported modes with yq (not timed), then times the whole loop with /usr/bin/time -v
# (wall time, peak RSS of the largest single process) and prints how many renders succeeded,
# how many were refused and the most frequent reasons (rule IDs of OLM v1's checks, or the
# first line of the message).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
corpus=${OPSHIP_CORPUS:-$root/../shared/corpus}/bundles
[ -d "$corpus" ] || corpus=/work/shared/corpus/bundles
[ -d "$corpus" ] || { echo "no corpus (set OPSHIP_CORPUS)" >&2; exit 2; }
command -v yq >/dev/null || { echo "yq is needed to read install modes" >&2; exit 2; }
if [ -z "${OPSHIP_BIN:-}" ]; then
  cargo build --release --locked --quiet --bin opship
  OPSHIP_BIN=${CARGO_TARGET_DIR:-$root/target}/release/opship
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mapfile -t bundles < <(find "$corpus" -mindepth 2 -maxdepth 2 -type d | sort)
# One job per (bundle, supported mode): `DIR<TAB>MODE<TAB>WATCH`.
for b in "${bundles[@]}"; do
  csv=$(find "$b/manifests" -maxdepth 1 -name '*clusterserviceversion*' | head -1)
  [ -n "$csv" ] || { printf '%s\tnone\t-\n' "$b"; continue; }
  yq -r '.spec.installModes[]? | select(.supported == true) | .type' "$csv" 2>/dev/null |
    while read -r mode; do
      case $mode in
        AllNamespaces) printf '%s\t%s\t%s\n' "$b" "$mode" "" ;;
        OwnNamespace) printf '%s\t%s\t%s\n' "$b" "$mode" bench-system ;;
        SingleNamespace) printf '%s\t%s\t%s\n' "$b" "$mode" watched ;;
      esac
    done
done >"$tmp/jobs"
echo "bundles: ${#bundles[@]}, renders (bundle x supported mode): $(wc -l <"$tmp/jobs"), bundles \
with none of the three modes (not run): $((${#bundles[@]} - $(cut -f1 "$tmp/jobs" | sort -u | wc -l)))"

cat >"$tmp/loop.sh" <<'LOOP'
#!/usr/bin/env bash
# $1 binary, $2 jobs, $3 work dir; one line per job to $3/results: `rc<TAB>mode<TAB>dir`.
n=0
while IFS=$'\t' read -r dir mode watch; do
  n=$((n + 1))
  if [ "$mode" = none ]; then
    "$1" -q manifests "$dir" --namespace bench-system -o "$3/out/$n" 2>"$3/err/$n"
  else
    "$1" -q manifests "$dir" --namespace bench-system --watch-namespace "$watch" \
      -o "$3/out/$n" 2>"$3/err/$n"
  fi
  printf '%s\t%s\t%s\t%s\n' "$?" "$mode" "$dir" "$n" >>"$3/results"
done <"$2"
LOOP
mkdir -p "$tmp/out" "$tmp/err"
/usr/bin/time -v bash "$tmp/loop.sh" "$OPSHIP_BIN" "$tmp/jobs" "$tmp" 2>"$tmp/time"

wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time")
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time")
ok=$(awk -F'\t' '$1 == 0' "$tmp/results" | wc -l)
bad=$(awk -F'\t' '$1 != 0' "$tmp/results" | wc -l)
files=$(find "$tmp/out" -type f | wc -l)
echo "renders: $((ok + bad)); rendered: $ok ($files files); refused: $bad"
user=$(sed -n 's/.*User time (seconds): //p' "$tmp/time")
sys=$(sed -n 's/.*System time (seconds): //p' "$tmp/time")
echo "wall: $wall; CPU: ${user}s user + ${sys}s system; peak RSS: $((rss / 1024)) MiB ($rss KiB)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "per mode (rendered/refused):"
awk -F'\t' '{t[$2]++; if ($1 == 0) o[$2]++} END {for (m in t) printf "  %-16s %d/%d\n", m, o[m], t[m] - o[m]}' \
  "$tmp/results" | sort
echo "refused bundles (distinct): $(awk -F'\t' '$1 != 0 {print $3}' "$tmp/results" | sort -u | wc -l)"
echo "top refusal reasons (renders per reason; a render may have several):"
awk -F'\t' '$1 != 0 {print $4}' "$tmp/results" | while read -r n; do
  rules=$(grep -o '\[OLM[0-9]*\]' "$tmp/err/$n" | sort -u || true)
  if [ -n "$rules" ]; then
    # The rule and the first words of its first message, the variable parts left out.
    for r in $rules; do
      grep -m1 -F "$r" "$tmp/err/$n" | sed -E "s/.*\\$r //; s/\`[^\`]*\`/\`…\`/g; s/Name: [^,]*, //; s/; OLM v1 installs only.*//" |
        cut -c1-110 | sed "s/^/$r /"
    done
  else
    head -n1 "$tmp/err/$n" | sed -E 's/^error: [^ ]*: //; s/^[0-9]+:[0-9]+: //; s/`[^`]*`/`…`/g; s/\[[^]]*\]/[…]/g' | cut -c1-100
  fi
done | sort | uniq -c | sort -rn | head -n "${BENCH_TOP:-12}"
