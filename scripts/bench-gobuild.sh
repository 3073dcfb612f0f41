#!/usr/bin/env bash
# Two cold Go builds one after the other, then the same two at once, then
# one after the other with the compiler's garbage collector relaxed
# (GOGC=BENCH_GOGC, default 400), in one run: the wall time and the CPU time
# (user + system, of every process the builds ran) of each side. It answers whether `make images` gains from
# running Go builds side by side on this machine, or loses to
# oversubscription: each go command already runs as many compilers as there
# are CPUs.
#
# Usage: scripts/bench-gobuild.sh [WRAPPER_DIR WRAPPER_DIR]
#
# A wrapper dir is one of the image builder's Go build modules under
# ~/.cache/capd-e2e/gobuild (made by `make images`); the build replayed is
# the `go build` command in its newest log, writing to a temporary folder.
# Default: the etcd v3.6.8 and v3.7.0 builds. Each side gets an empty Go
# build cache of its own, shared by its two builds as in `make images` (the module cache is shared and warm: downloads are not
# measured). Results go to $ARTIFACTS/bench-gobuild/results.md.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

cache=${CAPD_E2E_GOBUILD_CACHE:-$HOME/.cache/capd-e2e/gobuild}
gogc=${BENCH_GOGC:-400}
if (($# == 0)); then
  set -- "$cache"/go.etcd.io_etcd_server_v3@v3.6.8-* "$cache"/go.etcd.io_etcd_server_v3@v3.7.0-*
fi
(($# == 2)) || { echo "bench-gobuild: want two wrapper dirs, got $#" >&2; exit 2; }
for d in "$@"; do
  [[ -f $d/go.mod ]] || { echo "bench-gobuild: $d is not a build module (no go.mod); run make images first" >&2; exit 2; }
done

out=${ARTIFACTS:-$PWD/_artifacts}/bench-gobuild
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# command DIR: the logged go build command of DIR, writing into $tmp/bin.
command_of() {
  local log
  log=$(ls -t "$1"/logs/*.log | head -1)
  grep -m1 '^# go build ' "$log" | sed -e 's/^# //' -e "s| -o [^ ]* | -o $tmp/bin/ |"
}

# build SIDE DIR: replays DIR's build with SIDE's empty caches.
build() {
  local cmd
  cmd=$(command_of "$2")
  mkdir -p "$tmp/bin"
  (cd "$2" && export GOCACHE=$tmp/$1/gocache GOFLAGS= GOWORK=off GOTOOLCHAIN=local && eval "$cmd") >"$out/$1-$(basename "$2").log" 2>&1
}

TIMEFORMAT='%R %U %S'
side() { # NAME: prints "wall user sys"
  { time "$@" 2>/dev/null; } 2>&1 | tail -1
}
one_after_other() { build sequential "$1" && build sequential "$2"; }
one_after_other_gogc() { (export GOGC=$gogc && build sequential-gogc "$1" && build sequential-gogc "$2"); }
at_once() {
  build at-once "$1" & local a=$!
  build at-once "$2" & local b=$!
  wait "$a" && wait "$b"
}

echo "bench-gobuild: one after the other: $(basename "$1"), $(basename "$2")" >&2
read -r sw su ss < <(side one_after_other "$1" "$2")
echo "bench-gobuild: both at once" >&2
read -r pw pu ps < <(side at_once "$1" "$2")
echo "bench-gobuild: one after the other, GOGC=$gogc" >&2
read -r gw gu gs < <(side one_after_other_gogc "$1" "$2")

{
  echo "# two cold Go builds, $(date -u +%FT%TZ), $(nproc) CPUs, $(go env GOVERSION)"
  echo
  echo "builds: $(basename "$1"), $(basename "$2")"
  echo
  echo "| side | wall | CPU user | CPU system | CPU total |"
  echo "|---|---|---|---|---|"
  awk -v w="$sw" -v u="$su" -v s="$ss" 'BEGIN{printf "| one after the other | %.1f s | %.1f s | %.1f s | %.1f s |\n", w, u, s, u+s}'
  awk -v w="$pw" -v u="$pu" -v s="$ps" 'BEGIN{printf "| both at once | %.1f s | %.1f s | %.1f s | %.1f s |\n", w, u, s, u+s}'
  awk -v w="$gw" -v u="$gu" -v s="$gs" -v g="$gogc" 'BEGIN{printf "| one after the other, GOGC=%s | %.1f s | %.1f s | %.1f s | %.1f s |\n", g, w, u, s, u+s}'
  awk -v a="$sw" -v b="$pw" -v c="$su" -v d="$ss" -v e="$pu" -v f="$ps" \
    'BEGIN{printf "\nat once / one after the other: wall %.2f, CPU %.2f\n", b/a, (e+f)/(c+d)}'
  awk -v a="$sw" -v b="$gw" -v c="$su" -v d="$ss" -v e="$gu" -v f="$gs" -v g="$gogc" \
    'BEGIN{printf "GOGC=%s / default: wall %.2f, CPU %.2f\n", g, b/a, (e+f)/(c+d)}'
} >"$out/results.md"
cat "$out/results.md"
