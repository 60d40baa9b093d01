#!/usr/bin/env bash
# Benchmark of `opship sign` / `opship verify` / `opship attest` / `opship verify-attestation`
# over the corpus (BENCHMARKS.md): builds the 237 corpus bundles into one layout, pushes each to
# a loopback docker-registry as corpus/bundle-<n>:v1, then times signing, attesting and
# verifying all of them in one opship process each, next to a cosign loop over the same images
# (cosign has no many-images mode; COSIGN=cosign3 by default, offline flags only).
#
#   tests/scripts/bench-sign.sh OPSHIP_BINARY [CORPUS_DIR]
#   BENCH_ATTEST=1 ...: only the sign/attest/verify comparison with cosign (skips the older
#   per-process opship loops)
set -euo pipefail
opship=$(realpath "$1")
corpus=${2:-$(dirname "$0")/../../../shared/corpus}
work=$(mktemp -d)
trap 'kill "$reg_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/registry.yml" <<EOF
version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $work/data}}
http: {addr: 127.0.0.1:$port}
EOF
docker-registry serve "$work/registry.yml" >/dev/null 2>&1 &
reg_pid=$!
until curl -fs "http://127.0.0.1:$port/v2/" >/dev/null; do sleep 0.1; done
reg=127.0.0.1:$port

# One build per bundle with its own tag (default tags of clashing versions hold a `:`).
refs=()
n=0
for dir in "$corpus"/bundles/*/*; do
  n=$((n + 1))
  "$opship" -q build --layout "$work/oci" --tag "b$n" "$dir" >/dev/null
  "$opship" -q push "$work/oci:b$n" "$reg/corpus/bundle-$n:v1" >/dev/null 2>&1
  refs+=("$reg/corpus/bundle-$n:v1")
done
echo "pushed ${#refs[@]} images to $reg"

export COSIGN_PASSWORD=bench
"$opship" key generate --output-key-prefix "$work/k" 2>/dev/null
printf '%s\n' "${refs[@]}" >"$work/refs.txt"

timed() { /usr/bin/time -f '%e s wall, %U s user, %S s sys, %M KiB max RSS' -o "$work/time" "$@"; cat "$work/time"; }
echo "== sign all ${#refs[@]} (one process, key decrypted once)"
timed bash -c '"$0" sign --key "$1" "${@:2}" >/dev/null 2>"$1.log"' "$opship" "$work/k.key" "${refs[@]}"
echo "   $(grep -c "^signed " "$work/k.key.log") images signed"
for run in 1 2 3; do
  echo "== verify all ${#refs[@]} (one process), run $run"
  timed bash -c '"$0" verify --key "$1" "${@:2}" >/dev/null 2>/dev/null && echo "   all verified"' "$opship" "$work/k.pub" "${refs[@]}"
done
echo '{"buildDefinition":{"buildType":"https://example.com/bench/v1","externalParameters":{}},"runDetails":{"builder":{"id":"https://example.com/bench"}}}' >"$work/predicate.json"
echo "== attest all ${#refs[@]} (one process; .att, slsaprovenance1)"
timed bash -c '"$0" attest --key "$1" --type slsaprovenance1 --predicate "$2" "${@:3}" >/dev/null 2>"$1.att.log"' "$opship" "$work/k.key" "$work/predicate.json" "${refs[@]}"
echo "   $(grep -c "^attested " "$work/k.key.att.log") images attested"
echo "== verify-attestation all ${#refs[@]} (one process)"
timed bash -c '"$0" verify-attestation --key "$1" --type slsaprovenance1 "${@:2}" >/dev/null 2>/dev/null && echo "   all verified"' "$opship" "$work/k.pub" "${refs[@]}"
if [ -n "${BENCH_ATTEST:-}" ]; then
  cosign=${COSIGN:-cosign3}
  cflags=(--tlog-upload=false --allow-insecure-registry)
  case "$cosign" in *3*) cflags+=(--use-signing-config=false) ;; *) cflags+=(-y) ;; esac
  # cosign signs digests: resolve once, outside the timings.
  : >"$work/digests.txt"
  for r in "${refs[@]}"; do
    d=$(curl -fsI -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://${r%%/*}/v2/$(echo "${r#*/}" | cut -d: -f1)/manifests/v1" | tr -d '\r' | awk -F': ' 'tolower($1)=="docker-content-digest"{print $2}')
    echo "${r%:v1}@$d" >>"$work/digests.txt"
  done
  export cosign
  echo "== $cosign sign, one process per image (${#refs[@]})"
  timed bash -c 'while read -r r; do "$cosign" sign --key "$0" "${@:1}" "$r" >/dev/null 2>&1 || { echo "failed: $r"; exit 1; }; done <"'"$work/digests.txt"'"' "$work/k.key" "${cflags[@]}"
  echo "== $cosign attest, one process per image"
  timed bash -c 'while read -r r; do "$cosign" attest --key "$0" --type slsaprovenance1 --predicate "'"$work/predicate.json"'" "${@:1}" "$r" >/dev/null 2>&1 || { echo "failed: $r"; exit 1; }; done <"'"$work/digests.txt"'"' "$work/k.key" "${cflags[@]}"
  echo "== $cosign verify, one process per image"
  timed bash -c 'while read -r r; do "$cosign" verify --key "$0" --insecure-ignore-tlog=true --allow-insecure-registry "$r" >/dev/null 2>&1 || { echo "failed: $r"; exit 1; }; done <"'"$work/digests.txt"'"' "$work/k.pub"
  echo "== $cosign verify-attestation, one process per image"
  timed bash -c 'while read -r r; do "$cosign" verify-attestation --key "$0" --type slsaprovenance1 --insecure-ignore-tlog=true --allow-insecure-registry "$r" >/dev/null 2>&1 || { echo "failed: $r"; exit 1; }; done <"'"$work/digests.txt"'"' "$work/k.pub"
  echo "== opship verify all ${#refs[@]} again (one process; cosign's signatures there too)"
  timed bash -c '"$0" verify --key "$1" "${@:2}" >/dev/null 2>/dev/null && echo "   all verified"' "$opship" "$work/k.pub" "${refs[@]}"
  exit 0
fi
# BENCH_QUICK=1 skips the one-process-per-image loops.
[ -z "${BENCH_QUICK:-}" ] || exit 0
echo "== sign each (one process per image: key decrypted each time)"
timed bash -c 'while read -r r; do "$0" sign --key "$1" "$r" >/dev/null 2>&1 || exit 1; done <"$2"' "$opship" "$work/k.key" "$work/refs.txt"
echo "== verify each (one process per image; 2 signatures per image now)"
timed bash -c 'while read -r r; do "$0" verify --key "$1" "$r" >/dev/null 2>&1 || exit 1; done <"$2"' "$opship" "$work/k.pub" "$work/refs.txt"
