#!/usr/bin/env bash
# Benchmark of `opship release` (BENCHMARKS.md): the full release of the sample operator's
# 0.3.0 against a loopback docker-registry, and the same steps done by hand with the peers
# where they exist: skopeo copy for both image pushes, cosign (cosign2 from scripts/peers)
# signing the bundle image, the catalog image and the chart and attesting (SLSA provenance,
# a predicate file written beforehand) the bundle and catalog images, the Helm engine of
# helm-python-sdk for the chart package; opship for the steps no peer here does (generate,
# validate, build, catalog add/validate/build — there is no opm —, chart render and push —
# there is no helm binary).
#
#   tests/scripts/bench-release.sh OPSHIP_BINARY PYTHON_WITH_HELM_SDK [RUNS]
set -euo pipefail
opship=$(realpath "$1")
python=$(realpath -s "$2")
runs=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'kill "$reg_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/registry.yml" <<YAML
version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $work/data}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$port}
YAML
docker-registry serve "$work/registry.yml" >/dev/null 2>&1 &
reg_pid=$!
until curl -fs "http://127.0.0.1:$port/v2/" >/dev/null; do sleep 0.1; done
reg=127.0.0.1:$port

# A fresh copy of the sample project with a signing key, and an empty registry, per run.
mkdir -p "$work/keys"
COSIGN_PASSWORD=bench "$opship" key generate --output-key-prefix "$work/keys/cosign" 2>/dev/null
cat >"$work/fresh.sh" <<SH
set -e
rm -rf "$work/p" "$work/data"
mkdir -p "$work/p"
cp -r "$repo/bundle" "$work/p/"
SH

# The SLSA provenance predicate the hand chain attests (a pipeline would write one per run).
echo '{"buildDefinition":{"buildType":"https://example.com/manual/v1","externalParameters":{},"resolvedDependencies":[]},"runDetails":{"builder":{"id":"https://example.com/ci"}}}' >"$work/keys/provenance.json"

# The same steps, one tool per step.
cosign=${COSIGN:-cosign2}
cat >"$work/tools.sh" <<SH
set -e
cd "$work/p"
o="$opship"
c="-c bundle/opship.yaml"
export COSIGN_PASSWORD=bench
sign() { $cosign sign --key "$work/keys/cosign.key" --tlog-upload=false --allow-insecure-registry --allow-http-registry --yes "\$1" >/dev/null 2>&1; }
attest() { $cosign attest --key "$work/keys/cosign.key" --tlog-upload=false --allow-insecure-registry --allow-http-registry --yes --type slsaprovenance1 --predicate "$work/keys/provenance.json" "\$1" >/dev/null 2>&1; }
\$o \$c generate bundle --version 0.3.0 >/dev/null
\$o validate bundle bundle/0.3.0 >/dev/null
d=\$(\$o build --layout bundle/dist/oci --tag 0.3.0 bundle/0.3.0 | cut -d' ' -f2)
skopeo copy -q --dest-tls-verify=false oci:bundle/dist/oci:0.3.0 docker://$reg/ns/memcached-operator-bundle:v0.3.0
sign $reg/ns/memcached-operator-bundle@\$d
attest $reg/ns/memcached-operator-bundle@\$d
\$o catalog add --bundle bundle/dist/oci:0.3.0 --image $reg/ns/memcached-operator-bundle@\$d --index bundle/index --channel stable >/dev/null
\$o catalog validate bundle/index 2>/dev/null
cd=\$(\$o catalog build bundle/index --layout bundle/dist/oci --tag catalog-0.3.0 | cut -d' ' -f2)
skopeo copy -q --dest-tls-verify=false oci:bundle/dist/oci:catalog-0.3.0 docker://$reg/ns/memcached-operator-catalog:v0.3.0
sign $reg/ns/memcached-operator-catalog@\$cd
attest $reg/ns/memcached-operator-catalog@\$cd
\$o \$c chart render --bundle bundle/0.3.0 --output bundle/dist/charts >/dev/null
"$python" "$here/helm_check.py" package bundle/dist/charts/memcached-operator bundle/dist/charts >/dev/null
ch=\$(\$o chart push bundle/dist/charts/memcached-operator-0.3.0.tgz oci://$reg/ns | cut -d' ' -f1)
sign \$ch
SH

cd "$work"
hyperfine -r "$runs" ${BENCH_JSON:+--export-json "$BENCH_JSON"} --prepare "bash $work/fresh.sh" \
  -n 'opship release' \
  "cd $work/p && COSIGN_PASSWORD=bench $opship -q -c bundle/opship.yaml release --version 0.3.0 --registry $reg/ns --key $work/keys/cosign.key >/dev/null 2>&1" \
  -n 'same steps: skopeo copy + helm-python-sdk package + opship for the rest' \
  "bash $work/tools.sh"
# A re-run of a finished release (every step recognised as done).
bash "$work/fresh.sh"
(cd "$work/p" && COSIGN_PASSWORD=bench "$opship" -q -c bundle/opship.yaml release --version 0.3.0 --registry "$reg/ns" --key "$work/keys/cosign.key" >/dev/null 2>&1)
hyperfine -r "$runs" -n 'opship release, re-run (all done)' \
  "cd $work/p && COSIGN_PASSWORD=bench $opship -q -c bundle/opship.yaml release --version 0.3.0 --registry $reg/ns --key $work/keys/cosign.key >/dev/null 2>&1" \
  -n 'opship release --dry-run' \
  "cd $work/p && $opship -q -c bundle/opship.yaml release --version 0.3.0 --registry $reg/ns --key $work/keys/cosign.key --dry-run >/dev/null 2>&1"
