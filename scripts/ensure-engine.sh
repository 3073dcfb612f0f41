#!/usr/bin/env bash
# Makes sure a Docker-API engine answers at DOCKER_HOST (default: the local
# socket), starting the local dockerd if it is installed but not running.
#
# With --privileged-nesting it also makes sure the engine can run the
# privileged containers kind and CAPD create on hosts whose capability
# bounding set lacks CAP_SYS_RESOURCE: Docker < 23 asks for every capability
# and fails there ("unable to apply caps"), Docker >= 23 grants only the ones
# it has. On Debian, an older engine is replaced by Debian trixie's docker.io
# (pinned so nothing else is taken from trixie) and restarted.
set -o errexit -o nounset -o pipefail

privileged=false
[[ "${1:-}" == "--privileged-nesting" ]] && privileged=true

log() { printf 'ensure-engine: %s\n' "$*" >&2; }

engine_up() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_dockerd() {
  if [[ -n "${DOCKER_HOST:-}" && "${DOCKER_HOST}" != unix:///var/run/docker.sock ]]; then
    log "no engine answers at DOCKER_HOST=${DOCKER_HOST}; not starting a local one"
    return 1
  fi
  command -v dockerd >/dev/null || { log "no engine answers and dockerd is not installed"; return 1; }
  log "starting dockerd (log: /var/log/capd-e2e-dockerd.log)"
  setsid nohup dockerd >>/var/log/capd-e2e-dockerd.log 2>&1 </dev/null &
  for _ in $(seq 60); do engine_up && return 0; sleep 1; done
  log "dockerd did not answer within 60s; its log ends with:"; tail -20 /var/log/capd-e2e-dockerd.log >&2
  return 1
}

stop_dockerd() {
  local pids; pids=$(pgrep -x dockerd || true)
  [[ -z "$pids" ]] && return 0
  kill $pids
  for _ in $(seq 60); do pgrep -x dockerd >/dev/null || return 0; sleep 1; done
  log "dockerd did not stop"; return 1
}

engine_up || start_dockerd
version=$(docker version --format '{{.Server.Version}}')
log "engine $version at ${DOCKER_HOST:-unix:///var/run/docker.sock}"
$privileged || exit 0

major=${version%%.*}
capbnd=$(awk '/^CapBnd/ {print $2}' /proc/self/status)
has_sys_resource=$(( (16#$capbnd >> 24) & 1 ))
if (( major >= 23 )) || (( has_sys_resource == 1 )); then
  exit 0
fi
log "engine $version is older than 23 and CapBnd=$capbnd lacks CAP_SYS_RESOURCE: privileged containers would fail"
[[ -f /etc/debian_version ]] || { log "not Debian: install Docker >= 23 yourself"; exit 1; }
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
stop_dockerd
start_dockerd
log "engine now $(docker version --format '{{.Server.Version}}')"
