#!/usr/bin/env bash
# Benchmark of `opship sign` / `opship verify` over the corpus (BENCHMARKS.md): builds the 237
# corpus bundles into one layout, pushes each to a loopback docker-registry as
# corpus/bundle-<n>:v1, then times signing and verifying all of them.
#
#   tests/scripts/bench-sign.sh OPSHIP_BINARY [CORPUS_DIR]
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

"$opship" build --layout "$work/oci" "$corpus"/bundles/*/* >"$work/built.txt"
refs=()
n=0
while read -r tag _digest; do
  n=$((n + 1))
  "$opship" -q push "$work/oci:$tag" "$reg/corpus/bundle-$n:v1" >/dev/null
  refs+=("$reg/corpus/bundle-$n:v1")
done <"$work/built.txt"
echo "pushed ${#refs[@]} images to $reg"

export COSIGN_PASSWORD=bench
"$opship" key generate --output-key-prefix "$work/k" 2>/dev/null
printf '%s\n' "${refs[@]}" >"$work/refs.txt"

echo "== sign all (one process, key decrypted once)"
/usr/bin/time -f '%e s wall, %U s user, %S s sys, %M KiB max RSS' \
  "$opship" -q sign --key "$work/k.key" "${refs[@]}" >/dev/null
echo "== verify all (one process)"
/usr/bin/time -f '%e s wall, %U s user, %S s sys, %M KiB max RSS' \
  "$opship" -q verify --key "$work/k.pub" "${refs[@]}" >/dev/null
echo "== sign each (one process per image, scrypt each time)"
/usr/bin/time -f '%e s wall, %U s user, %S s sys' bash -c \
  'while read -r r; do "$0" -q sign --key "$1" "$r" >/dev/null; done <"$2"' "$opship" "$work/k.key" "$work/refs.txt"
echo "== verify each (one process per image; 2 signatures per image now)"
/usr/bin/time -f '%e s wall, %U s user, %S s sys' bash -c \
  'while read -r r; do "$0" -q verify --key "$1" "$r" >/dev/null 2>&1; done <"$2"' "$opship" "$work/k.pub" "$work/refs.txt"
