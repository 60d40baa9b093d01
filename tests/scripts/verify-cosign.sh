#!/usr/bin/env bash
# Independent cosign signature verifier for the tests: shares no code with opship and uses
# only curl, jq, openssl and coreutils' base64.
#
#   verify-cosign.sh REGISTRY REPO TAG|DIGEST PUBLIC_KEY_PEM
#
# Resolves the reference to a digest (Docker-Content-Digest of a manifest HEAD), fetches the
# `sha256-<hex>.sig` manifest, and for every signature layer: fetches the payload blob, checks
# its sha256 against the layer digest, base64-decodes the `dev.cosignproject.cosign/signature`
# annotation, verifies it over the payload bytes with `openssl dgst -sha256 -verify`, and
# checks that the payload's type is cosign's and its docker-manifest-digest is the image
# digest. Prints one line per layer; exit 0 when at least one layer passes, 1 otherwise.
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: $0 REGISTRY REPO TAG|DIGEST PUBLIC_KEY_PEM" >&2
  exit 2
fi
reg=$1 repo=$2 ref=$3 pub=$4
accept='Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json'

digest=$(curl -fsSI -H "$accept" "http://$reg/v2/$repo/manifests/$ref" |
  awk -F': ' 'tolower($1)=="docker-content-digest"{print $2}' | tr -d '\r')
if [ -z "$digest" ]; then
  echo "no Docker-Content-Digest for $reg/$repo:$ref" >&2
  exit 2
fi
echo "image $reg/$repo:$ref = $digest"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sigtag="${digest/:/-}.sig"
if ! curl -fsS -H "$accept" "http://$reg/v2/$repo/manifests/$sigtag" >"$tmp/sig.json"; then
  echo "no signature manifest $reg/$repo:$sigtag"
  exit 1
fi

n=$(jq '.layers | length' "$tmp/sig.json")
ok=0
for ((i = 0; i < n; i++)); do
  layer_digest=$(jq -r ".layers[$i].digest" "$tmp/sig.json")
  curl -fsS "http://$reg/v2/$repo/blobs/$layer_digest" >"$tmp/payload"
  actual="sha256:$(openssl dgst -sha256 -r "$tmp/payload" | cut -d' ' -f1)"
  if [ "$actual" != "$layer_digest" ]; then
    echo "layer $i: payload blob hashes to $actual, not $layer_digest"
    continue
  fi
  jq -r ".layers[$i].annotations[\"dev.cosignproject.cosign/signature\"] // empty" "$tmp/sig.json" >"$tmp/sig.b64"
  if ! base64 -d <"$tmp/sig.b64" >"$tmp/sig.der" 2>/dev/null || [ ! -s "$tmp/sig.der" ]; then
    echo "layer $i: no usable signature annotation"
    continue
  fi
  if ! openssl dgst -sha256 -verify "$pub" -signature "$tmp/sig.der" "$tmp/payload" >/dev/null 2>&1; then
    echo "layer $i: Verification failure"
    continue
  fi
  if ! jq -e --arg d "$digest" \
    '.critical.type == "cosign container image signature" and .critical.image["docker-manifest-digest"] == $d' \
    "$tmp/payload" >/dev/null; then
    echo "layer $i: signature OK but the payload names $(jq -r '.critical.image["docker-manifest-digest"]' "$tmp/payload"), not $digest"
    continue
  fi
  echo "layer $i: Verified OK identity=$(jq -r '.critical.identity["docker-reference"]' "$tmp/payload")"
  ok=$((ok + 1))
done
[ "$ok" -gt 0 ]
