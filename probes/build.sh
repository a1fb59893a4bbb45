#!/usr/bin/env bash
# Builds the portable NVML probes: linux/amd64 and linux/arm64 binaries that
# run on glibc >= 2.28 hosts (RHEL 8, Ubuntu 20.04 and newer).
#
# go-nvml needs cgo, and a plain cgo build on a newer distribution asks for
# that distribution's glibc (Debian 12: GLIBC_2.34). So each probe is linked
# against a Debian 11 (bullseye, glibc 2.31, symbols up to 2.28 used) sysroot
# made with debootstrap. The build fails if a required GLIBC symbol version
# is above 2.28, or if the binary asks for immediate binding (BIND_NOW):
# NVML's entry points must resolve lazily, from the driver's library.
#
# Needs (Debian): debootstrap gcc gcc-aarch64-linux-gnu binutils.
# Usage: probes/build.sh [OUTDIR]   (default dist/; sysroots cached outside
# the repository, in ${GPULAB_SYSROOT_CACHE:-~/.cache/gpulab-sysroot}, so a
# fresh clone, CI's, does not make them again)
# Leaves OUTDIR/nvmlprobe-linux-{amd64,arm64} and OUTDIR/nvmlsim-linux-amd64,
# and puts them gzipped into probes/bundle/bin/ for gpulab to embed, listed
# in probes/bundle/bin/.portable (make build then builds no native probe
# over them).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
mkdir -p "$out" build
version=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}
maxglibc=2.28

cache=${GPULAB_SYSROOT_CACHE:-${HOME:-/root}/.cache/gpulab-sysroot}
mkdir -p "$cache"

sysroot() { # arch -> absolute path of a bullseye sysroot with libc6-dev
  local arch=$1 sr=$cache/bullseye-$1
  if [ ! -f "$sr/.done" ]; then
    rm -rf "$sr"
    local foreign=()
    [ "$arch" = "$(dpkg --print-architecture)" ] || foreign=(--foreign)
    echo "probes: making the Debian 11 sysroot for $arch in $sr (once)" >&2
    debootstrap "${foreign[@]}" --arch="$arch" --variant=minbase --include=libc6-dev,linux-libc-dev \
      bullseye "$sr" http://deb.debian.org/debian >"$cache/debootstrap-$arch.log" 2>&1 ||
      { echo "probes: debootstrap failed, see $cache/debootstrap-$arch.log" >&2; exit 1; }
    if [ ${#foreign[@]} -gt 0 ]; then # second stage cannot run here: unpack the packages by hand
      for deb in "$sr"/var/cache/apt/archives/*.deb; do dpkg-deb -x "$deb" "$sr"; done
    fi
    # Absolute symlinks (libm.so -> /lib/...) would point into this machine.
    find "$sr" -type l -lname '/*' | while read -r l; do
      t=$(readlink "$l"); ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$sr$t")" "$l"
    done
    touch "$sr/.done"
  fi
  echo "$sr"
}

build() { # goarch debarch triplet cc name tags
  local goarch=$1 debarch=$2 triplet=$3 cc=$4 name=$5 tags=$6 sr bin
  sr=$(sysroot "$debarch")
  bin="$out/$name-linux-$goarch"
  CGO_ENABLED=1 GOOS=linux GOARCH="$goarch" \
    CC="$cc --sysroot=$sr -B$sr/usr/lib/$triplet -L$sr/usr/lib/$triplet" \
    CGO_CFLAGS="-O2 -Wno-deprecated-declarations" \
    go build -tags "$tags" -trimpath -ldflags="-s -w -X main.version=$version" -o "$bin" ./probes/nvmlprobe
  check "$bin"
}

check() { # the portability gate
  local bin=$1 need
  need=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  if [ "$(printf '%s\n%s\n' "$need" "$maxglibc" | sort -V | tail -1)" != "$maxglibc" ]; then
    echo "probes: $bin needs GLIBC_$need, above $maxglibc" >&2; exit 1
  fi
  if readelf -d "$bin" | grep -qE 'BIND_NOW|FLAGS_1.*NOW'; then
    echo "probes: $bin asks for BIND_NOW: NVML symbols must bind lazily" >&2; exit 1
  fi
  printf 'probes: %-32s %s bytes, %s gzipped, needs GLIBC_%s\n' "$bin" "$(stat -c %s "$bin")" "$(gzip -9 -c "$bin" | wc -c)" "$need" >&2
}

# The probes pushed to hosts carry no simulator; nvmlsim (amd64) is the
# same probe with the simulated DGX A100, for --mock.
build amd64 amd64 x86_64-linux-gnu gcc nvmlprobe netgo,osusergo,nosim
build arm64 arm64 aarch64-linux-gnu aarch64-linux-gnu-gcc nvmlprobe netgo,osusergo,nosim
build amd64 amd64 x86_64-linux-gnu gcc nvmlsim netgo,osusergo
# gpulab embeds them gzipped: it pushes them that way, unpacked on the host.
# They replace native probes of the same names (make build), and .portable
# lists them so that make build does not replace them in turn.
mkdir -p probes/bundle/bin
rm -f probes/bundle/bin/nvml* probes/bundle/bin/.portable
names=()
for f in "$out"/nvmlprobe-linux-* "$out"/nvmlsim-linux-*; do
  gzip -9 -c "$f" > "probes/bundle/bin/$(basename "$f").gz"
  names+=("$(basename "$f").gz")
done
printf '%s\n' "${names[@]}" > probes/bundle/bin/.portable
