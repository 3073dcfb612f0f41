#!/usr/bin/env bash
# `make bench-thp`: a cold Go build with the kernel's transparent huge
# pages (THP) at "madvise" (Debian's default; the Go runtime advises none)
# and at "always", rounds interleaved (ROUNDS, default 3), each from an
# empty build cache of its own: wall, user and system time of each, and
# the medians. The build is the cert-manager substitute's (584 packages,
# client-go and controller-runtime among them), as capd-e2e compiles it.
# Needs root (it writes /sys/kernel/mm/transparent_hugepage/enabled) and
# puts the setting back as it found it. Results:
# $ARTIFACTS/bench-thp/results.md.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO_ROOT"
OUT=${ARTIFACTS:-$REPO_ROOT/_artifacts}/bench-thp
ROUNDS=${ROUNDS:-3}
THP=/sys/kernel/mm/transparent_hugepage/enabled
[[ -w $THP ]] || { echo "bench-thp: cannot write $THP (run as root)" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT"
was=$(sed 's/.*\[\(.*\)\].*/\1/' "$THP")
work=$(mktemp -d)
trap 'echo "$was" >"$THP"; rm -rf "$work"' EXIT
go mod download
TIMEFORMAT='%R %U %S'
for round in $(seq "$ROUNDS"); do
  for mode in madvise always; do
    echo "$mode" >"$THP"
    rm -rf "$work/cache"
    t=$( { time GOCACHE=$work/cache GOGC=400 CGO_ENABLED=0 go build -gcflags=all=-dwarf=false \
      -o "$work/bin" ./cmd/cert-manager-substitute >/dev/null 2>&1; } 2>&1)
    echo "$mode $t" | tee -a "$OUT/samples.txt"
  done
done
median() { sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
{
  echo "# cold build of ./cmd/cert-manager-substitute, THP madvise vs always, $ROUNDS rounds, $(date -u +%FT%TZ), $(nproc) CPUs, $(uname -r)"
  echo
  echo "| THP | wall (median) | user (median) | system (median) |"
  echo "|---|---|---|---|"
  for mode in madvise always; do
    printf '| %s | %ss | %ss | %ss |\n' "$mode" \
      "$(awk -v m=$mode '$1==m{print $2}' "$OUT/samples.txt" | median)" \
      "$(awk -v m=$mode '$1==m{print $3}' "$OUT/samples.txt" | median)" \
      "$(awk -v m=$mode '$1==m{print $4}' "$OUT/samples.txt" | median)"
  done
} >"$OUT/results.md"
cat "$OUT/results.md"
