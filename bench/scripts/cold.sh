#!/usr/bin/env bash
# `make bench-cold`: a newcomer's first `make test-e2e`, cold, measured for
# BEFORE_REF (a commit; optional) and AFTER_REF (default HEAD) in one run,
# one after the other, each side:
#   - from a clean clone of its commit (in $BENCH_DIR, default
#     /tmp/capd-e2e-bench-cold);
#   - with an empty Go module cache, Go build cache and harness cache of
#     its own (GOMODCACHE, GOCACHE, CAPD_E2E_CACHE under $BENCH_DIR), so it
#     downloads every module and compiles everything; the machine's own
#     caches are left alone;
#   - with every image of the plan removed from the engine (label
#     e2e.capd.x-k8s.io/inputs-hash): the engine holds no image of ours.
# The engine itself is not replaced: run once with CAPD_E2E_FIX_ENGINE=replace
# on a machine that needs it (capd-e2e engine ensure) before, and add its
# time by hand. The host settings capd-e2e engine ensure makes (transparent huge
# pages among them) are put back as they were at the start before each side,
# so that each side's own capd-e2e engine ensure does what it does on a fresh
# machine with the CAPD_E2E_FIX_ENGINE given; and at the end.
#
# GINKGO_LABEL_FILTER (default: make test-e2e's, PR-Blocking) selects the
# specs of both sides. THEN_LABEL_FILTER, if set, selects specs run right
# after each side's cold run, in its clone with its caches and engine: what
# they built besides (the images they alone need, nothing else). Per side it records the wall time, the images phase
# and the suite (from ci-e2e.sh's log), the CPU time of the whole machine
# (/proc/stat, so the engine's and the containers' too) and the CPUs busy on
# average; per plan step its wall and CPU time as `capd-e2e images` logs them
# ("built in W (cpu C)"; a side that does not log CPU shows "-"). Results:
# $ARTIFACTS/bench-cold/results.md, logs beside it. Slow: a cold build per
# side (about 45 minutes for a side that builds every image, on 2 cores).
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO_ROOT"
OUT=${ARTIFACTS:-$REPO_ROOT/_artifacts}/bench-cold
BENCH_DIR=${BENCH_DIR:-/tmp/capd-e2e-bench-cold}
AFTER_REF=$(git rev-parse "${AFTER_REF:-HEAD}")
BEFORE_REF=${BEFORE_REF:+$(git rev-parse "$BEFORE_REF")}
rm -rf "$OUT"
mkdir -p "$OUT"
log() { printf '[bench-cold %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
THP=/sys/kernel/mm/transparent_hugepage/enabled
thp_start=$(sed 's/.*\[\(.*\)\].*/\1/' "$THP" 2>/dev/null || true)
reset_host() { [[ -n $thp_start && -w $THP ]] && echo "$thp_start" >"$THP" || true; }

cpu_ticks() { # busy total, summed over CPUs
  awk '/^cpu /{t=0; for(i=2;i<=NF;i++) t+=$i; print t-$5-$6, t}' /proc/stat
}

clear_images() {
  # A base image goes once the images built on it are gone: a few rounds.
  local round
  for round in 1 2 3 4 5; do
    mapfile -t ids < <(docker images -q --filter label=e2e.capd.x-k8s.io/inputs-hash | sort -u)
    ((${#ids[@]})) || break
    docker image rm -f "${ids[@]}" >/dev/null 2>&1 || true
  done
  docker image prune -f >/dev/null
  if [[ -n $(docker images -q --filter label=e2e.capd.x-k8s.io/inputs-hash) ]]; then
    log "images of the plan are still in the engine:"
    docker images --filter label=e2e.capd.x-k8s.io/inputs-hash >&2
    return 1
  fi
}

# built_steps LOG: each step `capd-e2e images` built, from its lines
# "[i/n] ID: built in W (cpu C)", as "ID W C" (C empty when not logged).
built_steps() {
  sed -n 's/^\[[0-9]*\/[0-9]*\] \(.*\): built in \([^ ]*\)\( (cpu \([^)]*\))\)\{0,1\}$/\1 \2 \4/p' "$1"
}

# then_run NAME DIR: right after side NAME's cold run, make test-e2e of
# THEN_LABEL_FILTER's specs in the same clone, with the same caches and
# engine: its wall time, and the steps it built (it should build only
# what the gate did not).
then_run() {
  local name=$1 dir=$2 rc=0 s0=$SECONDS
  log "$name, then: GINKGO_LABEL_FILTER='$THEN_LABEL_FILTER'"
  (
    cd "$dir/repo"
    export GOMODCACHE=$dir/gomod GOCACHE=$dir/gobuild CAPD_E2E_CACHE=$dir/capd-e2e ARTIFACTS=$OUT/$name-then
    GINKGO_LABEL_FILTER=$THEN_LABEL_FILTER make test-e2e
  ) >"$OUT/$name-then.log" 2>&1 || rc=$?
  local wall=$((SECONDS - s0)) built
  built=$(built_steps "$OUT/$name-then.log" | awk '{printf "%s%s (%s, cpu %s)", (NR > 1 ? "; " : ""), $1, $2, $3}')
  {
    echo
    printf '%s, then `GINKGO_LABEL_FILTER=%s make test-e2e`: %s in %dm%02ds; built: %s\n' "$name" "$THEN_LABEL_FILTER" \
      "$([[ $rc == 0 ]] && echo passed || echo "failed ($rc)")" $((wall / 60)) $((wall % 60)) "${built:-nothing}"
    grep -E '^images: .*(current|lacks)' "$OUT/$name-then.log" | sed 's/^/    /' || true
  } >>"$OUT/results.md"
  log "$name, then: $([[ $rc == 0 ]] && echo passed || echo "failed ($rc)") in ${wall}s"
  return "$rc"
}

# side NAME REF: one cold make test-e2e of REF.
side() {
  local name=$1 ref=$2 dir=$BENCH_DIR/$1
  if [[ -d $dir ]]; then chmod -R u+w "$dir" && rm -rf "$dir"; fi
  mkdir -p "$dir"
  git clone --quiet --no-checkout "$REPO_ROOT" "$dir/repo"
  git -C "$dir/repo" checkout --quiet "$ref"
  clear_images
  reset_host
  log "$name: $(git -C "$dir/repo" log --oneline -1), from $(docker images -q | wc -l) images and empty Go caches, transparent huge pages ${thp_start:-unknown}"
  local rc=0 s0=$SECONDS b0 t0 b1 t1
  read -r b0 t0 < <(cpu_ticks)
  (
    cd "$dir/repo"
    export GOMODCACHE=$dir/gomod GOCACHE=$dir/gobuild CAPD_E2E_CACHE=$dir/capd-e2e ARTIFACTS=$OUT/$name
    make test-e2e
  ) >"$OUT/$name.log" 2>&1 || rc=$?
  local wall=$((SECONDS - s0))
  read -r b1 t1 < <(cpu_ticks)
  local busy cpu images suite
  busy=$(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) -v n="$(nproc)" 'BEGIN{printf "%.2f", n*b/t}')
  cpu=$(( (b1 - b0) / $(getconf CLK_TCK) ))
  images=$(sed -n 's/.*images ready after \([0-9]*\)s.*/\1/p' "$OUT/$name.log" | tail -1)
  suite=$(sed -n 's/.*suite finished with exit code [0-9]* after \([0-9]*\)s in all.*/\1/p' "$OUT/$name.log" | tail -1)
  [[ -n $images && -n $suite ]] && suite=$((suite - images))
  fmt() { [[ -n ${1:-} ]] && printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)) || printf -- '-'; }
  printf '| %s | %s | %s | %s | %s | %s | %s | %s of %s |\n' "$name" "$(git -C "$dir/repo" log --format=%h -1)" \
    "$([[ $rc == 0 ]] && echo passed || echo "failed ($rc)")" "$(fmt "$wall")" "$(fmt "$images")" "$(fmt "$suite")" \
    "$(fmt "$cpu")" "$busy" "$(nproc)" >>"$OUT/results.md"
  built_steps "$OUT/$name.log" >"$OUT/$name-steps.txt"
  log "$name: $(tail -1 "$OUT/results.md")"
  if [[ -n ${THEN_LABEL_FILTER:-} && $rc == 0 ]]; then
    then_run "$name" "$dir" || rc=$?
  fi
  # The module and build caches are large: keep only the logs.
  chmod -R u+w "$dir" && rm -rf "$dir"
  return "$rc"
}

{
  echo "# cold make test-e2e, $(date -u +%FT%TZ), $(nproc) CPUs, $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo), label filter ${GINKGO_LABEL_FILTER:-PR-Blocking}"
  echo
  echo "| side | commit | result | wall | images phase | suite | CPU time (machine) | CPUs busy (avg) |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$OUT/results.md"
scripts/install-deps.sh
scripts/capd-e2e.sh engine ensure --privileged-nesting
rc=0
sides=()
[[ -n $BEFORE_REF ]] && { side before "$BEFORE_REF" || rc=1; sides+=(before); }
side after "$AFTER_REF" || rc=1
sides+=(after)
clear_images || true
reset_host

# The steps of both sides, side by side.
{
  echo
  header="| step"
  for s in "${sides[@]}"; do header+=" | $s wall | $s CPU"; done
  echo "$header |"
  echo "|---$(printf '|---|---%.0s' "${sides[@]}")|"
  cat "${sides[@]/#/$OUT/}"-steps.txt 2>/dev/null | awk '{print $1}' | sort -u | while read -r id; do
    row="| $id"
    for s in "${sides[@]}"; do
      read -r w c < <(awk -v id="$id" '$1 == id {print $2, ($3 == "" ? "-" : $3)}' "$OUT/$s-steps.txt")
      row+=" | ${w:--} | ${c:--}"
    done
    echo "$row |"
  done
} >>"$OUT/results.md"
cat "$OUT/results.md"
exit "$rc"
