#!/usr/bin/env bash
# Time from process start to the workbench's first full frame, in a real
# terminal (tmux, 160x48). The binary draws one frame at the terminal's size
# and exits (GPULAB_EXIT_AFTER_FIRST_FRAME=1); the shell inside tmux times it.
# Prints the median and the 90th percentile over N runs (default 30).
# Usage: bench/startup.sh [BINARY] [N]
set -euo pipefail
bin=$(realpath "${1:-bin/gpulab}")
n=${2:-30}
out=$(mktemp)
sock="gpulab-bench-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -f "$out" "$out.err"' EXIT
for _ in $(seq "$n"); do
  tmux -L "$sock" new-session -d -s b -x 160 -y 48 \
    "s=\$(date +%s%N); HOME=$(mktemp -d) GPULAB_EXIT_AFTER_FIRST_FRAME=1 $bin 2>>$out.err || echo FAIL >>$out; e=\$(date +%s%N); echo \$(( (e - s) / 1000 )) >>$out"
  while tmux -L "$sock" has-session -t b 2>/dev/null; do sleep 0.01; done
done
if grep -q FAIL "$out"; then echo "startup: the workbench failed to start:" >&2; cat "$out.err" >&2; exit 1; fi
sort -n "$out" | awk -v n="$n" '{a[NR]=$1} END {printf "start-up to first frame (160x48, %d runs): median %.1f ms, p90 %.1f ms\n", n, a[int((n+1)/2)]/1000, a[int(n*0.9)]/1000}'
