#!/usr/bin/env bash
# `make bench-images`: a cold `make images` measured both ways in one run,
# one step at a time (-jobs 1) and the default parallel schedule (-jobs
# ${JOBS:-number of CPUs}). Each side starts as on a fresh machine: every
# image the plan builds (label e2e.capd.x-k8s.io/inputs-hash) is removed,
# and the build runs with an empty Go module cache, Go build cache and
# harness cache of its own (under $BENCH_CACHE, default
# /tmp/capd-e2e-bench-images), so both download every module and compile
# everything; the caches of the machine are left alone. For each side it records
# the wall time, the CPUs busy on average (/proc/stat), the least memory
# available (sampled every 2 s) and the build log with per-step times, in
# $ARTIFACTS/bench-images/. Slow: two cold builds, 38 minutes in all on 2 cores.
# SIDES overrides the -jobs values measured, e.g. SIDES=2 for one side only.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/../.."

out=${ARTIFACTS:-$PWD/_artifacts}/bench-images
mkdir -p "$out"
jobs=${JOBS:-$(nproc)}
scripts/install-deps.sh
scripts/capd-e2e.sh engine ensure --privileged-nesting
go build -o hack/tools/bin/capd-e2e ./cmd/capd-e2e
bench_cache=${BENCH_CACHE:-/tmp/capd-e2e-bench-images}
export GOMODCACHE=$bench_cache/gomod GOCACHE=$bench_cache/gobuild CAPD_E2E_CACHE=$bench_cache/capd-e2e

cpu_ticks() { # busy total, summed over CPUs
  awk '/^cpu /{t=0; for(i=2;i<=NF;i++) t+=$i; print t-$5-$6, t}' /proc/stat
}

clear_everything() {
  # A base image goes once the images built on it are gone: a few rounds.
  local round
  for round in 1 2 3 4; do
    mapfile -t ids < <(docker images -q --filter label=e2e.capd.x-k8s.io/inputs-hash | sort -u)
    ((${#ids[@]})) || break
    docker image rm -f "${ids[@]}" >/dev/null 2>&1 || true
  done
  docker image prune -f >/dev/null
  if [[ -n $(docker images -q --filter label=e2e.capd.x-k8s.io/inputs-hash) ]]; then
    echo "bench-images: images of the plan are still in the engine:" >&2
    docker images --filter label=e2e.capd.x-k8s.io/inputs-hash >&2
    return 1
  fi
  if [[ -d $bench_cache ]]; then chmod -R u+w "$bench_cache" && rm -rf "$bench_cache"; fi
  mkdir -p "$GOMODCACHE" "$GOCACHE" "$CAPD_E2E_CACHE"
}

side() {
  local j=$1 log="$out/jobs-$1.log"
  clear_everything
  echo "bench-images: -jobs $j, from $(docker images -q | wc -l) images and empty Go caches" >&2
  ( while sleep 2; do awk '/MemAvailable/{print $2}' /proc/meminfo; done ) >"$out/memavail-$j.txt" &
  local sampler=$!
  read -r b0 t0 < <(cpu_ticks)
  local s0=$SECONDS rc=0
  hack/tools/bin/capd-e2e images --config "${E2E_CONFIG:-config/e2e.yaml}" --jobs "$j" >"$log" 2>&1 || rc=$?
  local wall=$((SECONDS - s0))
  read -r b1 t1 < <(cpu_ticks)
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  local minavail
  minavail=$(sort -n "$out/memavail-$j.txt" | head -1)
  local busy
  busy=$(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) -v n="$(nproc)" 'BEGIN{printf "%.2f", n*b/t}')
  printf '| %s | %s | %dm%02ds | %s of %s | %.1f GiB |\n' "$j" "$([[ $rc == 0 ]] && echo ok || echo "failed ($rc)")" \
    $((wall / 60)) $((wall % 60)) "$busy" "$(nproc)" "$(awk -v k="${minavail:-0}" 'BEGIN{print k/1048576}')" >>"$out/results.md"
  grep -E '^images: [0-9]+ built' "$log" >&2 || tail -5 "$log" >&2
  return "$rc"
}

{
  echo "# cold make images, $(date -u +%FT%TZ), $(nproc) CPUs, $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo
  echo "| -jobs | result | wall | CPUs busy (avg) | least memory available |"
  echo "|---|---|---|---|---|"
} >"$out/results.md"
rc=0
for j in ${SIDES:-1 $jobs}; do
  side "$j" || rc=1
done
cat "$out/results.md"
exit "$rc"
