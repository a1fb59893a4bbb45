#!/usr/bin/env bash
# Build the control plane the kube tests run against (internal/kubetest):
# etcd, kube-apiserver, kube-scheduler and kwok, from the Go module proxy,
# into CACHE_DIR/<versions-key>/bin/. Nothing is built when that directory
# is already complete, so CI and `make kube-testenv` cost seconds once the
# cache is warm; a version bump (a go.mod/go.sum here, KWOK_VERSION, or the
# Go version) changes the key and builds afresh.
#
# usage: tools/kube/build.sh [CACHE_DIR]
#   CACHE_DIR defaults to ${GPULAB_KUBE_CACHE:-$HOME/.cache/gpulab-kube}.
#   With --print-bin it builds nothing and prints the bin directory the key
#   names (internal/kubetest finds the binaries the same way).
#
# The Go build cache of this build goes to CACHE_DIR/go-build (about 4 GB
# for Kubernetes) and is removed after a successful build unless
# GPULAB_KUBE_KEEP_GOCACHE=1: the binaries are what the tests need.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
GO="${GO:-go}"
KWOK_VERSION=v0.8.0

print_only=0
if [ "${1:-}" = "--print-bin" ]; then print_only=1; shift; fi
cache="${1:-${GPULAB_KUBE_CACHE:-$HOME/.cache/gpulab-kube}}"

modver() { (cd "$here/$1" && "$GO" list -m -f '{{.Version}}' "$2"); }
etcd_v=$(modver etcd go.etcd.io/etcd/server/v3)
kube_v=$(modver k8s k8s.io/kubernetes)
go_v=$("$GO" env GOVERSION)
# A short hash of what else decides the binaries (sums, mains, this script).
sum=$(cat "$here"/etcd/go.sum "$here"/k8s/go.sum "$here"/etcd/cmd/*/main.go "$here"/k8s/cmd/*/main.go "$0" \
  | sha256sum | cut -c1-12)
key="etcd-$etcd_v.kube-$kube_v.kwok-$KWOK_VERSION.$go_v.$sum"
bin="$cache/$key/bin"
if ((print_only)); then echo "$bin"; exit 0; fi

want=(etcd kube-apiserver kube-scheduler kwok)
complete() { for b in "${want[@]}"; do [ -x "$bin/$b" ] || return 1; done; }
if complete; then
  echo "kube-testenv: up to date: $bin"
  exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9   # one build at a time; a second caller waits, then finds it done
if complete; then echo "kube-testenv: up to date: $bin"; exit 0; fi

start=$(date +%s)
tmp="$cache/$key.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
export GOCACHE="$cache/go-build" CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath"
ld='-s -w'
echo "kube-testenv: building $key (cold: 6-11 minutes on 2 cores)"
(cd "$here/etcd" && "$GO" build -ldflags "$ld" -o "$tmp/bin/etcd" ./cmd/etcd)
(cd "$here/k8s" && "$GO" build -ldflags "$ld" -o "$tmp/bin/" ./cmd/kube-apiserver ./cmd/kube-scheduler)
GOBIN="$tmp/bin" "$GO" install -ldflags "$ld" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"

rm -rf "${cache:?}/$key"
mkdir -p "$cache/$key"
mv "$tmp/bin" "$bin"
if [ "${GPULAB_KUBE_KEEP_GOCACHE:-}" != 1 ]; then rm -rf "$cache/go-build"; fi
echo "kube-testenv: built $bin in $(($(date +%s) - start))s ($(du -sh "$bin" | cut -f1))"
