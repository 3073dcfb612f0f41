#!/usr/bin/env bash
# Checks that a Docker-API engine answers at DOCKER_HOST (default: the local
# socket) and, with --privileged-nesting, that it can run the privileged
# containers kind and CAPD create. By default it only checks and explains:
# what is wrong and the exact command that would fix it. It changes the host
# only when CAPD_E2E_FIX_ENGINE=true (this project's CI sets it; see
# docs/reliability.md, "The engine", for exactly what that changes):
#   - fs.inotify limits below kind's recommendation (512 instances, 524288
#     watches): raise them with sysctl -w, until reboot (with
#     --privileged-nesting; without the opt-in it only warns);
#   - transparent huge pages not at "always": set them so, until reboot
#     (cold Go builds are 1.6 times faster here; without the opt-in it
#     only warns);
#   - no engine answers, dockerd is installed: start dockerd (its pid in
#     /run/capd-e2e-dockerd.pid, its log in /var/log/capd-e2e-dockerd.log);
#   - Docker < 23 on a host whose capability bounding set lacks
#     CAP_SYS_RESOURCE (privileged containers fail with "unable to apply
#     caps"): install Debian trixie's docker.io, pinned so nothing else comes
#     from trixie, and restart the dockerd this script started (by pid) —
#     never one it did not start, unless CAPD_E2E_FIX_ENGINE=replace: then
#     also the running dockerd named by its own pid file /var/run/docker.pid
#     (by pid, never by name; for CI machines whose platform starts dockerd).
set -o errexit -o nounset -o pipefail

privileged=false
[[ "${1:-}" == "--privileged-nesting" ]] && privileged=true
fix=false
replace=false
# Booleans as Go's strconv.ParseBool spells them, as everywhere.
case "${CAPD_E2E_FIX_ENGINE:-}" in
  "" | 0 | f | F | false | FALSE | False) ;;
  1 | t | T | true | TRUE | True) fix=true ;;
  replace) fix=true replace=true ;;
  *) echo "ensure-engine: CAPD_E2E_FIX_ENGINE=$CAPD_E2E_FIX_ENGINE: want true, false or replace" >&2; exit 2 ;;
esac

PIDFILE=/run/capd-e2e-dockerd.pid
LOGFILE=/var/log/capd-e2e-dockerd.log

log() { printf 'ensure-engine: %s\n' "$*" >&2; }
# Transparent huge pages for every process, before anything compiles: the
# Go runtime advises none, so at Debian's default ("madvise") the compilers'
# heaps use 4 KiB pages, and on a VM of this project's kind a cold Go build
# took 1.6 times the wall time and 1.6 times the CPU of the same build at
# "always" (make bench-thp: 151 s against 93 s, three rounds; the system
# time 75 s against 30 s). A cold make test-e2e is that: compiles.
THP=/sys/kernel/mm/transparent_hugepage/enabled
if [[ -r $THP ]] && ! grep -q '\[always\]' "$THP"; then
  if $fix && [[ -w $THP ]]; then
    log "setting transparent huge pages to always (were $(sed 's/.*\[\(.*\)\].*/\1/' "$THP"); until reboot): the Go builds take about 0.6 times the time"
    echo always >"$THP"
  else
    log "warning: transparent huge pages are '$(sed 's/.*\[\(.*\)\].*/\1/' "$THP")': cold Go builds (make images) take about 1.6 times the time they take at 'always' on a VM of this project's kind; fix: echo always >$THP (or rerun with CAPD_E2E_FIX_ENGINE=true)"
  fi
fi

# The engine is asked through our runtime (capd-e2e engine), not the
# docker CLI: it tells Podman from Docker by the components the engine
# lists, where Podman's version (4.3.1) would read as a Docker older than 23.
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOL=$REPO_ROOT/hack/tools/bin/capd-e2e
# As the other tools (gobuild.HarnessEnv and HarnessFlags).
(cd "$REPO_ROOT" && GOGC=${GOGC:-400} CGO_ENABLED=0 go build -gcflags=all=-dwarf=false -o "$TOOL" ./cmd/capd-e2e)
engine_up() { timeout 10 "$TOOL" engine version >/dev/null 2>&1; }
SYSTEM_PIDFILE=/var/run/docker.pid
system_dockerd() { [[ -f $SYSTEM_PIDFILE ]] && kill -0 "$(cat "$SYSTEM_PIDFILE")" 2>/dev/null && [[ $(cat "/proc/$(cat "$SYSTEM_PIDFILE")/comm" 2>/dev/null) == dockerd ]]; }
our_dockerd() { [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && [[ $(cat "/proc/$(cat "$PIDFILE")/comm" 2>/dev/null) == dockerd ]]; }

start_dockerd() {
  setsid nohup dockerd >>"$LOGFILE" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 60); do engine_up && return 0; sleep 1; done
  log "dockerd (pid $(cat "$PIDFILE")) did not answer within 60s; its log ends with:"
  tail -20 "$LOGFILE" >&2
  return 1
}

# stop_dockerd PIDFILE: stops the dockerd whose pid that file holds.
stop_dockerd() {
  local pid; pid=$(cat "$1")
  kill "$pid"
  for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || { rm -f "$1"; return 0; }; sleep 1; done
  log "dockerd (pid $pid) did not stop within 60s"
  return 1
}

if ! engine_up; then
  if [[ -n "${DOCKER_HOST:-}" && "${DOCKER_HOST}" != unix:///var/run/docker.sock ]]; then
    log "no engine answers at DOCKER_HOST=${DOCKER_HOST}: start it (Podman: scripts/ensure-podman.sh), or unset DOCKER_HOST for the local one"
    exit 1
  fi
  if ! command -v dockerd >/dev/null; then
    log "no engine answers at unix:///var/run/docker.sock and dockerd is not installed: install Docker >= 23 (Debian: apt-get install docker.io)"
    exit 1
  fi
  if ! $fix; then
    log "no engine answers at unix:///var/run/docker.sock: start it (e.g. 'systemctl start docker', or 'dockerd &'), or rerun with CAPD_E2E_FIX_ENGINE=true to have this script start dockerd"
    exit 1
  fi
  log "starting dockerd (CAPD_E2E_FIX_ENGINE; log: $LOGFILE)"
  start_dockerd
fi
read -r product version endpoint < <("$TOOL" engine version)
log "engine: $product $version at $endpoint"
$privileged || exit 0

# Every kind and CAPD node runs containerd and a kubelet, each with inotify
# instances of their own: with the kernel's default of 128 instances per
# user, a second cluster's containerd fails to start its CRI plugin ("failed
# to create fsnotify watcher: too many open files") once a few clusters run
# at once (seen: two concurrent quick-starts). kind's documentation asks for
# these values.
want_instances=512 want_watches=524288
instances=$(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo 0)
watches=$(cat /proc/sys/fs/inotify/max_user_watches 2>/dev/null || echo 0)
if (( instances < want_instances || watches < want_watches )); then
  if $fix; then
    log "raising fs.inotify.max_user_instances to $want_instances and max_user_watches to $want_watches (were $instances and $watches; until reboot)"
    sysctl -q -w fs.inotify.max_user_instances=$(( instances > want_instances ? instances : want_instances )) \
      fs.inotify.max_user_watches=$(( watches > want_watches ? watches : want_watches ))
  else
    log "warning: fs.inotify.max_user_instances=$instances, max_user_watches=$watches: enough for one run, but several clusters at once (GINKGO_NODES>1, concurrent runs) fail with \"too many open files\"; fix: sysctl -w fs.inotify.max_user_instances=$want_instances fs.inotify.max_user_watches=$want_watches (or rerun with CAPD_E2E_FIX_ENGINE=true)"
  fi
fi

# Podman: its own host settings (scripts/ensure-podman.sh, docs/podman.md);
# the Docker version checks below do not apply.
if [[ $product == podman ]]; then
  exec "$REPO_ROOT/scripts/ensure-podman.sh" --check
fi

major=${version%%.*}
capbnd=$(awk '/^CapBnd/ {print $2}' /proc/self/status)
has_sys_resource=$(( (16#$capbnd >> 24) & 1 ))
if (( major >= 23 )) || (( has_sys_resource == 1 )); then
  exit 0
fi
log "engine $version is older than 23 and this host's capability bounding set ($capbnd) lacks CAP_SYS_RESOURCE: privileged containers (kind's and CAPD's nodes) would fail with \"unable to apply caps\""
if ! $fix; then
  log "fix: install Docker >= 23 and restart it; on Debian bookworm, Debian trixie's docker.io works:"
  log "  echo 'deb http://deb.debian.org/debian trixie main' >/etc/apt/sources.list.d/trixie.list"
  log "  printf 'Package: *\\nPin: release n=trixie\\nPin-Priority: 100\\n' >/etc/apt/preferences.d/trixie"
  log "  apt-get update && apt-get install -t trixie docker.io && systemctl restart docker"
  log "or rerun with CAPD_E2E_FIX_ENGINE=true (or =replace, to also restart a dockerd it did not start) to have this script do it (docs/reliability.md, 'The engine')"
  exit 1
fi
[[ -f /etc/debian_version ]] || { log "not Debian: install Docker >= 23 yourself"; exit 1; }
running_pidfile=
if engine_up; then
  if our_dockerd; then
    running_pidfile=$PIDFILE
  elif $replace && system_dockerd; then
    running_pidfile=$SYSTEM_PIDFILE
    log "CAPD_E2E_FIX_ENGINE=replace: will restart the running dockerd (pid $(cat "$SYSTEM_PIDFILE") from $SYSTEM_PIDFILE) after the upgrade"
  else
    log "the running dockerd was not started by this script (no live pid in $PIDFILE): restart it yourself after the upgrade, or rerun with CAPD_E2E_FIX_ENGINE=replace to have this script restart the dockerd named by $SYSTEM_PIDFILE; refusing to kill it"
    exit 1
  fi
fi
cat >/etc/apt/sources.list.d/capd-e2e-trixie.sources <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
cat >/etc/apt/preferences.d/capd-e2e-trixie <<'PIN'
Package: *
Pin: release n=trixie
Pin-Priority: 100
PIN
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t trixie docker.io >/dev/null
[[ -n $running_pidfile ]] && stop_dockerd "$running_pidfile"
start_dockerd
log "engine now: $("$TOOL" engine version)"
