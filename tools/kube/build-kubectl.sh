#!/usr/bin/env bash
# Build kubectl, at the version of the control plane the tests run, for the
# benchmarks that compare gpulab with it (bench/kube_test.go), into
# CACHE_DIR/<versions-key>/bin/kubectl. Nothing is built when it is there.
# The tests never need it (Debian's kubectl is too old for the test
# cluster, and gpulab reads clusters with client-go); only `make bench-kube`
# does.
#
# usage: tools/kube/build-kubectl.sh [--print-bin] [CACHE_DIR]
#   CACHE_DIR defaults to ${GPULAB_KUBE_CACHE:-$HOME/.cache/gpulab-kube}.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
GO="${GO:-go}"

print_only=0
if [ "${1:-}" = "--print-bin" ]; then print_only=1; shift; fi
cache="${1:-${GPULAB_KUBE_CACHE:-$HOME/.cache/gpulab-kube}}"

v=$(cd "$here/kubectl" && "$GO" list -m -f '{{.Version}}' k8s.io/kubectl)
go_v=$("$GO" env GOVERSION)
sum=$(cat "$here"/kubectl/go.sum "$here"/kubectl/cmd/kubectl/main.go "$0" | sha256sum | cut -c1-12)
bin="$cache/kubectl-$v.$go_v.$sum/bin"
if ((print_only)); then echo "$bin"; exit 0; fi
if [ -x "$bin/kubectl" ]; then echo "kubectl: up to date: $bin"; exit 0; fi

mkdir -p "$cache"
exec 9>"$cache/.lock-kubectl"
flock 9
if [ -x "$bin/kubectl" ]; then echo "kubectl: up to date: $bin"; exit 0; fi
start=$(date +%s)
tmp="$bin.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
# The version kubectl prints is the module's, as a release build's.
ld="-s -w -X k8s.io/component-base/version.gitVersion=${v/v0./v1.} -X k8s.io/client-go/pkg/version.gitVersion=${v/v0./v1.}"
(cd "$here/kubectl" && CGO_ENABLED=0 GOCACHE="$cache/go-build-kubectl" "$GO" build -trimpath -ldflags "$ld" -o "$tmp/kubectl" ./cmd/kubectl)
mv "$tmp" "$bin"
rm -rf "$cache/go-build-kubectl"
echo "kubectl: built $bin in $(($(date +%s) - start))s"
