#!/usr/bin/env bash
# Makes Podman's Docker-API service ready for the E2E on this host, and
# prints the DOCKER_HOST that reaches it. Rootful Podman only (CAPD's
# machines are privileged containers that nest containers).
#   scripts/ensure-podman.sh           install Debian's podman if missing,
#                                      check (or, under the opt-in, apply)
#                                      the host settings, start the
#                                      service unless one answers
#   scripts/ensure-podman.sh --check   only check the settings (what
#                                      ensure-engine.sh runs when
#                                      DOCKER_HOST is a Podman service)
#   scripts/ensure-podman.sh --stop    stop the service this script started
#
# The host settings (docs/podman.md says why each is needed here) go in
# one drop-in, $CONF, written only when CAPD_E2E_FIX_ENGINE is set (this
# project's CI sets it); without it the script says what to write:
#   - default_ulimits: nofile at this host's hard limit, nproc 4096.
#     Podman's defaults (nofile 1048576) exceed the hard limits of these
#     VMs, which lack CAP_SYS_RESOURCE, so every container that sets none
#     (kind's nodes, CAPD's machines and load balancers) fails with
#     "error setting rlimit type 7".
#   - pids_limit = 0: Podman caps each container at 2048 pids by default;
#     a kind node running a management cluster's controllers, or a CAPD
#     machine, counts every thread against it.
#   - cgroup_manager = "cgroupfs", events_logger = "file": the defaults
#     assume systemd, which this host (and most CI containers) does not
#     run as PID 1.
# and, outside that file, an empty /lib/modules where the host has none
# (check_modules says why).
# The service runs at unix://$SOCKET (rootful Podman's standard path), its
# pid in $PIDFILE, its log in $LOGFILE.
set -o errexit -o nounset -o pipefail

CONF=/etc/containers/containers.conf.d/50-capd-e2e.conf
SOCKET=/run/podman/podman.sock
PIDFILE=/run/capd-e2e-podman.pid
LOGFILE=/var/log/capd-e2e-podman.log
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
log() { printf 'ensure-podman: %s\n' "$*" >&2; }
fix=false
case "${CAPD_E2E_FIX_ENGINE:-}" in
  "" | 0 | f | F | false | FALSE | False) ;;
  1 | t | T | true | TRUE | True | replace) fix=true ;;
  *) log "CAPD_E2E_FIX_ENGINE=$CAPD_E2E_FIX_ENGINE: want true, false or replace"; exit 2 ;;
esac

want_conf() {
  local nofile; nofile=$(ulimit -Hn)
  [[ $nofile == unlimited ]] && nofile=1048576
  cat <<CONF
# Written by capd-e2e's scripts/ensure-podman.sh (CAPD_E2E_FIX_ENGINE);
# docs/podman.md says why. Remove this file to undo.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=4096:4096"]
pids_limit = 0

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
}

our_service() { [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && [[ $(cat "/proc/$(cat "$PIDFILE")/comm" 2>/dev/null) == podman ]]; }

stop_service() {
  our_service || return 0
  local pid; pid=$(cat "$PIDFILE")
  kill "$pid"
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; return 0; }; sleep 1; done
  log "the Podman service (pid $pid) did not stop within 30s"
  return 1
}

# check_modules: kind's nodes and CAPD's machines bind-mount /lib/modules
# read-only. Docker creates a missing bind source; Podman refuses it
# ("statfs /lib/modules: no such file or directory"), and hosts that boot
# a kernel from outside (VMs, CI sandboxes; this one) have none. An empty
# directory is what Docker would have made.
check_modules() {
  [[ -d /lib/modules ]] && return 0
  if ! $fix; then
    log "/lib/modules does not exist: Podman will not bind-mount it into kind's nodes and CAPD's machines (Docker creates it); create it (mkdir -p /lib/modules), or rerun with CAPD_E2E_FIX_ENGINE=true"
    return 1
  fi
  mkdir -p /lib/modules
  log "created an empty /lib/modules, as Docker would for the bind mount (CAPD_E2E_FIX_ENGINE)"
}

# check_conf: 0 when the settings are in place (or were put there now).
# Sets conf_changed when it wrote them.
conf_changed=false
check_conf() {
  if [[ -f $CONF ]] && diff -q <(want_conf) "$CONF" >/dev/null; then
    return 0
  fi
  if ! $fix; then
    log "Podman here needs these settings in $CONF (docs/podman.md; then restart the service):"
    want_conf | sed 's/^/    /' >&2
    log "write them yourself, or rerun with CAPD_E2E_FIX_ENGINE=true to have this script do it"
    return 1
  fi
  mkdir -p "$(dirname "$CONF")"
  want_conf >"$CONF"
  conf_changed=true
  log "wrote $CONF (CAPD_E2E_FIX_ENGINE)"
}

case "${1:-}" in
  --stop) stop_service; exit ;;
  --check)
    ok=true
    check_modules || ok=false
    check_conf || ok=false
    $ok || exit 1
    if $conf_changed; then
      log "restart the Podman service for them (scripts/ensure-podman.sh --stop, then scripts/ensure-podman.sh restarts the one it started)"
      exit 1
    fi
    exit 0 ;;
  "") ;;
  *) log "unknown argument $1"; exit 2 ;;
esac

if ! command -v podman >/dev/null; then
  log "installing Debian's podman"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman >/dev/null
fi
if [[ $(id -u) != 0 ]]; then
  log "run as root: the E2E needs rootful Podman (a rootless one cannot run CAPD's privileged, nested machines here)"
  exit 1
fi
# Both checks, so that one run names everything to change.
ok=true
check_modules || ok=false
check_conf || ok=false
$ok || exit 1
cd "$REPO_ROOT"
go build -o hack/tools/bin/capd-e2e ./cmd/capd-e2e
answers() { DOCKER_HOST=unix://$SOCKET timeout 10 hack/tools/bin/capd-e2e engine version 2>/dev/null; }
if $conf_changed && our_service; then
  log "restarting the Podman service this script started, for the new settings"
  stop_service
fi
if ! line=$(answers); then
  mkdir -p "$(dirname "$SOCKET")"
  rm -f "$SOCKET"
  setsid nohup podman system service --time=0 "unix://$SOCKET" >>"$LOGFILE" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 30); do line=$(answers) && break; sleep 1; done
  [[ -n ${line:-} ]] || { log "the Podman service (pid $(cat "$PIDFILE")) did not answer at unix://$SOCKET within 30s; its log ends with:"; tail -20 "$LOGFILE" >&2; exit 1; }
  log "started the Podman service (pid $(cat "$PIDFILE"), log $LOGFILE)"
elif $conf_changed; then
  log "warning: a Podman service this script did not start answers at unix://$SOCKET: restart it for the new settings"
fi
[[ $line == podman\ * ]] || { log "unix://$SOCKET answers as \"$line\", not Podman"; exit 1; }
log "${line% *} at unix://$SOCKET"
echo "unix://$SOCKET"
