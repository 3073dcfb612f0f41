#!/usr/bin/env bash
# Cold Go builds, measured side by side in one run: the wall time and the CPU
# time (user + system, of every process the builds ran) of each side.
#
# Sides (SIDES, default "sequential at-once gogc"):
#   sequential  the two builds one after the other, as logged
#   at-once     the same two at once: does `make images` gain from running
#               Go builds side by side, or lose to oversubscription (each go
#               command already runs as many compilers as there are CPUs)?
#   gogc        one after the other with the compiler's garbage collector
#               relaxed (GOGC=BENCH_GOGC, default 400), as make images runs
#   dwarf       as gogc, the compiler writing DWARF (no -dwarf=false)
#   nodwarf     as gogc, with -gcflags=all=-dwarf=false: the binaries are
#               linked with -s -w, which drops DWARF, so the compiler's is
#               wasted work. When both dwarf and nodwarf run, their binaries
#               are compared byte for byte.
#   tags        as gogc, with -tags BENCH_TAGS (default Kubernetes' release
#               tags, selinux,notest,grpcnotrace) in place of any logged ones
#   notags      as gogc, without -tags. When both tags and notags run, their
#               binaries' sizes are listed side by side.
# Ratios are against the first side.
#
# Usage: bench/scripts/gobuild.sh [WRAPPER_DIR [WRAPPER_DIR]]
#
# A wrapper dir is one of the image builder's Go build modules under
# ~/.cache/capd-e2e/gobuild (made by `make images`); the build replayed is
# the `go build` command in its newest log, writing to a temporary folder,
# in the environment logged with it (CGO_ENABLED, GOOS, ...; GOGC is the
# sides' own).
# Default: the etcd v3.6.8 and v3.7.0 builds. Each side gets an empty Go
# build cache of its own, shared by its builds as in `make images` (the
# module cache is shared and warm: downloads are not measured). Results go to
# $ARTIFACTS/bench-gobuild/results.md.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/../.."

cache=${CAPD_E2E_GOBUILD_CACHE:-$HOME/.cache/capd-e2e/gobuild}
gogc=${BENCH_GOGC:-400}
tags=${BENCH_TAGS:-selinux,notest,grpcnotrace}
read -r -a sides <<<"${SIDES:-sequential at-once gogc}"
((${#sides[@]} > 0)) || { echo "bench-gobuild: SIDES is empty" >&2; exit 2; }
for s in "${sides[@]}"; do
  case $s in
    sequential | at-once | gogc | dwarf | nodwarf | tags | notags) ;;
    *) echo "bench-gobuild: unknown side $s in SIDES (sequential, at-once, gogc, dwarf, nodwarf, tags, notags)" >&2; exit 2 ;;
  esac
done
if (($# == 0)); then
  set -- "$cache"/go.etcd.io_etcd_server_v3@v3.6.8-* "$cache"/go.etcd.io_etcd_server_v3@v3.7.0-*
fi
(($# == 1 || $# == 2)) || { echo "bench-gobuild: want one or two wrapper dirs, got $#" >&2; exit 2; }
# newest_log DIR: the log of DIR's last build.
newest_log() { ls -t "$1"/logs/*.log | head -1; }
for d in "$@"; do
  [[ -f $d/go.mod ]] || { echo "bench-gobuild: $d is not a build module (no go.mod); run make images first" >&2; exit 2; }
  grep -q '^# env ' "$(newest_log "$d")" || {
    echo "bench-gobuild: $(newest_log "$d") has no '# env' line (it predates them): build it again with make images" >&2
    exit 2
  }
done
if [[ " ${sides[*]} " == *" at-once "* ]] && (($# != 2)); then
  echo "bench-gobuild: side at-once needs two wrapper dirs" >&2
  exit 2
fi

out=${ARTIFACTS:-$PWD/_artifacts}/bench-gobuild
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# command_of SIDE DIR: the logged go build command of DIR, writing into
# SIDE's bin folder; dwarf and nodwarf first drop the logged -dwarf=false,
# nodwarf then adds it back, so that the two differ in that flag only; tags
# and notags drop the logged -tags, tags then adds BENCH_TAGS.
command_of() {
  local log cmd
  log=$(newest_log "$2")
  cmd=$(grep -m1 '^# go build ' "$log" | sed -e 's/^# //' -e "s| -o [^ ]* | -o $tmp/$1/bin/ |")
  case $1 in
    dwarf | nodwarf) cmd=$(sed -e "s/ -gcflags[ =]'\\{0,1\\}all=-dwarf=false'\\{0,1\\}//" <<<"$cmd") ;;
    tags | notags) cmd=$(sed -e "s/ -tags[ =][^ ]*//" <<<"$cmd") ;;
  esac
  [[ $1 == nodwarf ]] && cmd=${cmd/#go build /go build -gcflags=all=-dwarf=false }
  [[ $1 == tags ]] && cmd=${cmd/#go build /go build -tags=$tags }
  echo "$cmd"
}

# env_of DIR: the settings DIR's logged build ran with, shell-quoted as
# logged, without GOGC.
env_of() {
  grep -m1 '^# env ' "$(newest_log "$1")" | sed -e 's/^# env //' -e 's/\(^\| \)GOGC=[^ ]*//'
}

# build SIDE DIR: replays DIR's build with SIDE's empty caches.
build() {
  local cmd vars
  cmd=$(command_of "$1" "$2")
  vars=$(env_of "$2")
  mkdir -p "$tmp/$1/bin"
  (cd "$2" && eval "export $vars" && export GOCACHE=$tmp/$1/gocache && eval "$cmd") >"$out/$1-$(basename "$2").log" 2>&1
}

TIMEFORMAT='%R %U %S'
measure() { # prints "wall user sys"
  { time "$@" 2>/dev/null; } 2>&1 | tail -1
}
one_after_other() { # SIDE DIR...
  local side=$1 d
  shift
  for d in "$@"; do build "$side" "$d" || return; done
}
run_side() { # SIDE DIR...
  local side=$1
  shift
  case $side in
    sequential) one_after_other sequential "$@" ;;
    at-once)
      build at-once "$1" & local a=$!
      build at-once "$2" & local b=$!
      wait "$a" && wait "$b"
      ;;
    *) (export GOGC=$gogc && one_after_other "$side" "$@") ;;
  esac
}
label() {
  case $1 in
    sequential) echo "one after the other" ;;
    at-once) echo "both at once" ;;
    gogc) echo "one after the other, GOGC=$gogc" ;;
    dwarf) echo "GOGC=$gogc, compiler DWARF on" ;;
    nodwarf) echo "GOGC=$gogc, -gcflags=all=-dwarf=false" ;;
    tags) echo "GOGC=$gogc, -tags=$tags" ;;
    notags) echo "GOGC=$gogc, no build tags" ;;
  esac
}

builds=$(for d in "$@"; do basename "$d"; done | paste -sd' ')
declare -A wall user sys
for s in "${sides[@]}"; do
  echo "bench-gobuild: $(label "$s"): $builds" >&2
  read -r wall[$s] user[$s] sys[$s] < <(measure run_side "$s" "$@")
  [[ -n $(ls -A "$tmp/$s/bin") ]] || { echo "bench-gobuild: side $s built nothing; see $out/$s-*.log" >&2; exit 1; }
done

first=${sides[0]}
{
  echo "# cold Go builds, $(date -u +%FT%TZ), $(nproc) CPUs, $(go env GOVERSION)"
  echo
  echo "builds: $builds"
  echo
  echo "environment, as logged (GOGC is each side's): $(env_of "$1")"
  echo
  echo "| side | wall | CPU user | CPU system | CPU total | wall / $first | CPU / $first |"
  echo "|---|---|---|---|---|---|---|"
  for s in "${sides[@]}"; do
    awk -v l="$(label "$s")" -v w="${wall[$s]}" -v u="${user[$s]}" -v s="${sys[$s]}" \
      -v w0="${wall[$first]}" -v u0="${user[$first]}" -v s0="${sys[$first]}" \
      'BEGIN{printf "| %s | %.1f s | %.1f s | %.1f s | %.1f s | %.2f | %.2f |\n", l, w, u, s, u+s, w/w0, (u+s)/(u0+s0)}'
  done
  if [[ -d $tmp/dwarf/bin && -d $tmp/nodwarf/bin ]]; then
    echo
    echo "binaries, compiler DWARF on vs off (sha256):"
    for f in "$tmp"/dwarf/bin/*; do
      a=$(sha256sum <"$f" | cut -c1-16)
      b=$(sha256sum <"$tmp/nodwarf/bin/$(basename "$f")" | cut -c1-16)
      if [[ $a == "$b" ]]; then
        echo "- $(basename "$f"): identical ($a)"
      else
        echo "- $(basename "$f"): DIFFERENT ($a vs $b; $(stat -c %s "$f") vs $(stat -c %s "$tmp/nodwarf/bin/$(basename "$f")") bytes)"
      fi
    done
  fi
  if [[ -d $tmp/tags/bin && -d $tmp/notags/bin ]]; then
    echo
    echo "binaries, -tags=$tags vs no tags (bytes):"
    for f in "$tmp"/tags/bin/*; do
      a=$(stat -c %s "$f")
      b=$(stat -c %s "$tmp/notags/bin/$(basename "$f")")
      awk -v n="$(basename "$f")" -v a="$a" -v b="$b" 'BEGIN{printf "- %s: %d vs %d (%.2f)\n", n, a, b, a/b}'
    done
  fi
} >"$out/results.md"
cat "$out/results.md"
