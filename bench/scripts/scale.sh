#!/usr/bin/env bash
# `make bench-scale`: one quick-start alone, then three at once
# (GINKGO_NODES=3, one per Ginkgo process), in one run of this script. Each
# side is a real `scripts/ci-e2e.sh` run with its own management cluster
# (bench/e2e, label filter "scale"). It reports, from the specs'
# summary.json files, each side's wall time from the first spec's start to
# the last one's end (the management cluster's setup is not in it) and
# their ratio; and, from the engine's stats sampled every 5 s during the
# three-at-once side, the most memory each workload container used, by
# role, and the least memory the host had available. Results go to
# $ARTIFACTS/bench-scale/results.md. About 10 minutes.
#
# BENCH_SCALE_BEYOND="5 7" then runs that many at once, in turn, until a run
# fails: where this machine runs out, with the least memory it had left and
# its highest load average on the way.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/../.."

out=${ARTIFACTS:-$PWD/_artifacts}/bench-scale
rm -rf "$out"
mkdir -p "$out"
command -v jq >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; }

# sample FILE: every 5 s, "<unix time> <container> <memory bytes> <cpu %>"
# for every container of a cluster, "<unix time> host <MemAvailable
# bytes>" and "<unix time> load <1-minute load average>".
sample() {
  while :; do
    local ts ids
    ts=$(date +%s)
    mapfile -t ids < <(docker ps -q --filter label=io.x-k8s.kind.cluster)
    if ((${#ids[@]})); then
      docker ps --filter label=io.x-k8s.kind.cluster --format '{{.Names}} {{.Label "io.x-k8s.kind.role"}}' >>"$1.roles" || true
      docker stats --no-stream --format '{{.Name}} {{.MemUsage}} {{.CPUPerc}}' "${ids[@]}" 2>/dev/null |
        awk -v ts="$ts" '{
          v=$2; u=v; gsub(/[0-9.]/, "", u); sub(/[A-Za-z]+$/, "", v)
          m = (u=="KiB") ? 1024 : (u=="MiB") ? 1048576 : (u=="GiB") ? 1073741824 : 1
          print ts, $1, int(v*m), $(NF)
        }' >>"$1" || true
    fi
    echo "$ts host $(( $(awk '/MemAvailable/{print $2}' /proc/meminfo) * 1024 ))" >>"$1"
    echo "$ts load $(cut -d' ' -f1 /proc/loadavg)" >>"$1"
    sleep 5
  done
}

# side NAME NODES FOCUS: a ci-e2e.sh run of NODES quick-starts at once
# (SCALE_CLUSTERS=NODES, one per Ginkgo process); prints "<specs passed>
# <specs> <span seconds>" from the specs' summary.json files. A failed run
# returns its exit code after printing what it has.
side() {
  local name=$1 nodes=$2 focus=$3 rc=0
  echo "bench-scale: $name (GINKGO_NODES=$nodes SCALE_CLUSTERS=$nodes)" >&2
  E2E_SUITE_DIR=$PWD/bench/e2e ARTIFACTS=$out/$name GINKGO_LABEL_FILTER=scale GINKGO_NODES=$nodes SCALE_CLUSTERS=$nodes GINKGO_FOCUS=$focus \
    scripts/ci-e2e.sh >"$out/$name.log" 2>&1 || rc=$?
  if ((rc != 0)); then
    echo "bench-scale: $name failed (rc $rc); see $out/$name.log" >&2
  fi
  cat "$out/$name"/clusters/*/summary.json 2>/dev/null | jq -rs '
    def ts: (.[0:19] + "Z" | fromdate) + ((capture("\\.(?<f>[0-9]+)").f // "0") | "0." + . | tonumber);
    [.[] | select(.spec == "quick-start") | {s: (.start | ts), e: ((.start | ts) + .duration / 1e9), r: .result}] as $q
    | if ($q | length) == 0 then "0 0 0" else
      "\($q | map(select(.r == "passed")) | length) \($q | length) \(($q | map(.e) | max) - ($q | map(.s) | min))" end
  '
  return "$rc"
}

# host-min FILE: the least MemAvailable sampled, GiB.
host_min() { awk '$2 == "host" { if (min == "" || $3 < min) min = $3 } END { printf "%.1f", min/1073741824 }' "$1"; }

r=$(side one 1 "cluster 1 of ")
read -r p1 n1 one <<<"$r"
((p1 == 1)) || { echo "bench-scale: the quick-start alone did not pass" >&2; exit 1; }
sample "$out/stats.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT
r=$(side three 3 "")
read -r p3 n3 three <<<"$r"
kill "$sampler" 2>/dev/null || true
((p3 == 3)) || { echo "bench-scale: $p3 of 3 quick-starts at once passed" >&2; exit 1; }

# Beyond three (BENCH_SCALE_BEYOND="5 7", ascending): more quick-starts at
# once until one fails, to find where this machine runs out. A failure here
# is a result, not an error of this script.
beyond=()
for n in ${BENCH_SCALE_BEYOND:-}; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench-scale: BENCH_SCALE_BEYOND: $n is not a count" >&2; exit 2; }
  sample "$out/stats-$n.txt" &
  sampler=$!
  rc=0
  r=$(side "at-once-$n" "$n" "") || rc=$?
  kill "$sampler" 2>/dev/null || true
  read -r pn nn wn <<<"$r"
  beyond+=("$n $pn $nn $wn $rc $(host_min "$out/stats-$n.txt")")
  ((rc == 0)) || break
done

{
  echo "# quick-starts at once, $(date -u +%FT%TZ), $(nproc) CPUs, $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo
  echo "| side | specs | wall (first start to last end) |"
  echo "|---|---|---|"
  printf '| alone | %s | %.1f s |\n| at once (GINKGO_NODES=3) | %s | %.1f s |\n' "$n1" "$one" "$n3" "$three"
  awk -v a="$one" -v b="$three" 'BEGIN{printf "\nratio: %.2f (three at once / one alone)\n", b/a}'
  echo
  echo "Most memory per container while three ran (docker stats, every 5 s):"
  echo
  echo "| role | containers | max MiB (median of containers) | max MiB (largest) |"
  echo "|---|---|---|---|"
  # Workload clusters' containers only (quick-start-*), by the role label
  # CAPD and kind put on them.
  awk 'FNR == NR { role[$1] = $2; next }
    $2 != "host" && $2 ~ /^quick-start-/ && $3 > max[$2] { max[$2] = $3 }
    END { for (c in max) print role[c], max[c] }' "$out/stats.txt.roles" "$out/stats.txt" | sort -k1,1 -k2,2n |
    awk '{ n[$1]++; v[$1, n[$1]] = $2 } END {
      for (r in n) { m = n[r]; printf "| %s | %d | %.0f | %.0f |\n", r, m, v[r, int((m + 1) / 2)] / 1048576, v[r, m] / 1048576 }
    }'
  awk '$2 == "host" { if (min == "" || $3 < min) min = $3 } END { printf "\nleast memory available on the host: %.1f GiB\n", min/1073741824 }' "$out/stats.txt"
  awk '$2 == "load" && $3 > max { max = $3 } END { printf "highest 1-minute load average: %s (on %d CPUs)\n", max, '"$(nproc)"' }' "$out/stats.txt"
  if ((${#beyond[@]})); then
    echo
    echo "More at once (BENCH_SCALE_BEYOND), until one fails:"
    echo
    echo "| at once | passed | wall | exit code | least host memory available | highest load |"
    echo "|---|---|---|---|---|---|"
    for b in "${beyond[@]}"; do
      read -r n pn nn wn rc mem <<<"$b"
      load=$(awk '$2 == "load" && $3 > max { max = $3 } END { print max }' "$out/stats-$n.txt")
      printf '| %s | %s of %s | %.1f s | %s | %s GiB | %s |\n' "$n" "$pn" "$n" "$wn" "$rc" "$mem" "$load"
    done
  fi
} >"$out/results.md"
cat "$out/results.md"
