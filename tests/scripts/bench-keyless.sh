#!/usr/bin/env bash
# Keyless signing benchmark (BENCHMARKS.md): the corpus bundles pushed to a loopback
# docker-registry as corpus/bundle-<n>:v1 (as bench-sign.sh does), a Sigstore stack from
# ../shared/sigstore-stack, then one `opship sign` of N images keylessly (one certificate,
# one Rekor v2 entry and one timestamp per image) next to a cosign 3 loop over the same images
# (a certificate, entry and timestamp per image: cosign signs one image per process); then the
# keyless verification of the images opship signed (trusted root, tlog and timestamp checks,
# the workflow identity and issuer) by one `opship verify` of all of them next to a cosign 3
# verify loop (one process per image), each counting those that verify. The references are
# resolved to digests once, outside the timings.
#
#   tests/scripts/bench-keyless.sh OPSHIP_BINARY [N] [CORPUS_DIR]     (N: images, default all)
set -euo pipefail
opship=$(realpath "$1")
limit=${2:-100000}
corpus=${3:-$(dirname "$0")/../../../shared/corpus}
stackdir=$(realpath "$(dirname "$0")/../../../shared/sigstore-stack")
work=$(mktemp -d)
trap 'kill "$reg_pid" 2>/dev/null || true; "$stackdir/down" "$work/stack" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/registry.yml" <<EOR
version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $work/data}}
http: {addr: 127.0.0.1:$port}
EOR
docker-registry serve "$work/registry.yml" >/dev/null 2>&1 &
reg_pid=$!
until curl -fs "http://127.0.0.1:$port/v2/" >/dev/null; do sleep 0.1; done
reg=127.0.0.1:$port

refs=()
n=0
for dir in "$corpus"/bundles/*/*; do
  [ "$n" -ge "$limit" ] && break
  n=$((n + 1))
  "$opship" -q build --layout "$work/oci" --tag "b$n" "$dir" >/dev/null
  "$opship" -q push "$work/oci:b$n" "$reg/corpus/bundle-$n:v1" >/dev/null 2>&1
  refs+=("$reg/corpus/bundle-$n:v1")
done
echo "pushed ${#refs[@]} images to $reg"

"$stackdir/up" "$work/stack" >/dev/null
. "$work/stack/env"
timed() { /usr/bin/time -f '%e s wall, %U s user, %S s sys, %M KiB max RSS' -o "$work/time" "$@"; cat "$work/time"; }

echo "== opship sign, keyless, all ${#refs[@]} in one process"
tok=$("$stackdir/token" "$work/stack" github --ttl 3600)
timed bash -c '"$0" sign --insecure --signing-config "$1" --identity-token "$2" "${@:4}" \
  >/dev/null 2>"$3"' "$opship" "$SIGSTORE_SIGNING_CONFIG" "$tok" "$work/opship.log" "${refs[@]}"
echo "   $(grep -c "keylessly" "$work/opship.log") images signed"

cosign=${COSIGN:-cosign3}
mkdir -p "$work/home"
digests=()
for r in "${refs[@]}"; do
  digests+=("${r%:v1}@$(crane digest --insecure "$r")")
done

echo "== opship verify, keyless, all ${#digests[@]} in one process"
timed bash -c '"$0" verify --insecure --trusted-root "$1" --certificate-identity "$2" \
  --certificate-oidc-issuer "$3" "${@:5}" >"$4" 2>&1 || true' "$opship" \
  "$SIGSTORE_TRUSTED_ROOT" "$GITHUB_IDENTITY" "$OIDC_ISSUER_URL" "$work/verify.log" "${digests[@]}"
echo "   $(grep -c '^verified ' "$work/verify.log" || true) of ${#digests[@]} verified"

echo "== $cosign verify of opship's keyless signatures, one process per image"
start=$(date +%s.%N)
verified=0
for d in "${digests[@]}"; do
  if HOME="$work/home" "$cosign" verify --trusted-root "$SIGSTORE_TRUSTED_ROOT" \
    --certificate-identity "$GITHUB_IDENTITY" --certificate-oidc-issuer "$OIDC_ISSUER_URL" \
    --insecure-ignore-sct --allow-http-registry "$d" >/dev/null 2>&1; then
    verified=$((verified + 1))
  fi
done
end=$(date +%s.%N)
echo "   $(python3 -c "print(f'{$end - $start:.1f}')") s wall; $verified of ${#refs[@]} verified"

echo "== $cosign sign, keyless, one process per image"
start=$(date +%s.%N)
for d in "${digests[@]}"; do
  HOME="$work/home" "$cosign" sign --signing-config "$SIGSTORE_SIGNING_CONFIG" \
    --trusted-root "$SIGSTORE_TRUSTED_ROOT" --identity-token "$tok" --yes \
    --allow-http-registry "$d" >/dev/null 2>&1
done
end=$(date +%s.%N)
echo "   $(python3 -c "print(f'{$end - $start:.1f}')") s wall for ${#refs[@]} images"
