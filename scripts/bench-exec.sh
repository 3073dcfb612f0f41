#!/usr/bin/env bash
# Measures exec latency through our runtime and through `docker exec`, on an
# idle machine and with every core kept busy by a CPU-bound loop, in one run,
# and prints both medians and their ratio for each regime.
set -o errexit -o nounset -o pipefail

N=${BENCH_N:-50}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
burners=()
stop_burners() { for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done; burners=(); }
trap 'stop_burners; rm -rf "$out"' EXIT

run() { # $1: label
  go test -run '^$' -bench '^BenchmarkExec$' -benchtime "${N}x" -count 1 ./framework/runtime/moby/ | tee "$out/$1.txt"
}

go test -c -o /dev/null ./framework/runtime/moby/ # compile before measuring
run idle
for _ in $(seq "$(nproc)"); do
  timeout 900 sh -c 'while :; do :; done' &
  burners+=($!)
done
run loaded
stop_burners

median() { awk -v s="$2" '$1 ~ "BenchmarkExec/"s {for (i=1;i<=NF;i++) if ($i=="ms-median") print $(i-1)}' "$out/$1.txt"; }
printf '\n%-8s %12s %12s %8s   (N=%s execs of "cat /etc/hostname" each)\n' regime runtime_ms docker_cli_ms cli/rt "$N"
for regime in idle loaded; do
  rt=$(median "$regime" runtime); cli=$(median "$regime" docker-cli)
  printf '%-8s %12s %12s %8s\n' "$regime" "$rt" "$cli" "$(awk -v a="$cli" -v b="$rt" 'BEGIN{ if (b>0) printf "%.2f", a/b; else print "n/a"}')"
done
