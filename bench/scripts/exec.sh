#!/usr/bin/env bash
# Measures exec latency through our runtime and through `docker exec`, on an
# idle machine and with every core kept busy by a CPU-bound loop, in one run,
# and prints both medians and their ratio for each regime, then where the
# runtime's time goes (BenchmarkExecPhases) and the CPU each side costs.
set -o errexit -o nounset -o pipefail

N=${BENCH_N:-50}
cd "$(dirname "$0")/../.."
out=$(mktemp -d)
burners=()
stop_burners() { for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done; burners=(); }
trap 'stop_burners; rm -rf "$out"' EXIT

(cd framework/runtime && go test -c -o "$out/moby.test" ./moby/) # compile before measuring
run() { # $1: label
  "$out/moby.test" -test.run '^$' -test.bench '^BenchmarkExec(Phases)?$' -test.benchtime "${N}x" -test.count 1 | tee "$out/$1.txt"
}

run idle
for _ in $(seq "$(nproc)"); do
  timeout 900 sh -c 'while :; do :; done' &
  burners+=($!)
done
run loaded
stop_burners

# metric <regime> <benchmark regexp> <unit>: the value reported in that unit.
metric() { awk -v s="$2" -v u="$3" '$1 ~ s {for (i=2;i<=NF;i++) if ($i==u) print $(i-1)}' "$out/$1.txt"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b>0) printf "%.2f", a/b; else print "n/a"}'; }
printf '\n%-8s %12s %12s %8s   (N=%s execs of "cat /etc/hostname" each)\n' regime runtime_ms docker_cli_ms cli/rt "$N"
for regime in idle loaded; do
  rt=$(metric "$regime" 'BenchmarkExec/runtime' ms-median); cli=$(metric "$regime" 'BenchmarkExec/docker-cli' ms-median)
  printf '%-8s %12s %12s %8s\n' "$regime" "$rt" "$cli" "$(ratio "$cli" "$rt")"
done
printf '\nWhere the runtime'"'"'s exec time goes (medians, ms; BenchmarkExecPhases):\n'
printf '%-8s %8s %8s %8s %8s %8s\n' regime create upgrade stream inspect total
for regime in idle loaded; do
  printf '%-8s' "$regime"
  for p in create upgrade stream inspect total; do printf ' %8s' "$(metric "$regime" BenchmarkExecPhases "$p-ms")"; done
  printf '\n'
done
printf '\nCPU per exec (ms): this side'"'"'s own, and the engine'"'"'s (dockerd+containerd, shim+runc), which both pay:\n'
printf '%-8s %-8s %10s %10s %10s\n' regime side client daemon shim+runc
for regime in idle loaded; do
  for side in runtime docker-cli; do
    printf '%-8s %-8s %10s %10s %10s\n' "$regime" "${side/docker-/}" "$(metric "$regime" "BenchmarkExec/$side" client-cpu-ms/op)" \
      "$(metric "$regime" "BenchmarkExec/$side" daemon-cpu-ms/op)" "$(metric "$regime" "BenchmarkExec/$side" shim-runc-cpu-ms/op)"
  done
done
