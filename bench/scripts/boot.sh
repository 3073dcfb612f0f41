#!/usr/bin/env bash
# `make bench-boot`: how long a machine takes from `docker create` to a
# running containerd, for one or more node images in one run, rounds
# interleaved so that both sides see the same machine.
#
# Each round creates a container the way CAPD v1.14 does (privileged, a
# private cgroup namespace, tmpfs /tmp and /run, an anonymous volume at /var,
# /lib/modules read-only, a tty for systemd's status lines), and times:
#   create      docker create (the engine copies the image's /var into the
#               volume here)
#   start       docker start
#   multi-user  until the container's output says "Reached target ...
#               Multi-User System" (CAPD's check before it bootstraps)
#   crictl      until `crictl ps` answers (CAPD's second check)
#   unpack      `ctr images mount` of the kube-apiserver and etcd images, the
#               first unpack of the two a control plane starts first
#   net unpack  then of the kube-proxy and kube-router images, which every
#               node starts first (their DaemonSets; the node is NotReady
#               until kube-router runs)
# and the size of the /var volume then. Prints the median of each per image.
#
# IMAGES: the images (default: the node image of KUBERNETES_VERSION in
# config/e2e.yaml, built by `make images`); ROUNDS (default 5). Uses the
# docker CLI: it measures the engine, not our runtime.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/../.."

rounds=${ROUNDS:-5}
version=$(awk '/^  KUBERNETES_VERSION:/ {gsub(/"/, "", $2); print $2; exit}' config/e2e.yaml)
images=${IMAGES:-kindest/node:$version}
run_id=bench-boot-$$
label=e2e.capd.x-k8s.io/run-id=$run_id
out=$(mktemp -d)
cleanup() {
  ids=$(docker ps -aq --filter "label=$label")
  [ -z "$ids" ] || docker rm -f -v $ids >/dev/null
  rm -rf "$out"
}
trap cleanup EXIT

for img in $images; do
  docker image inspect "$img" >/dev/null || { echo "bench-boot: no image $img (make images)" >&2; exit 1; }
done
apiserver="registry.k8s.io/kube-apiserver:$version"
proxy="registry.k8s.io/kube-proxy:$version"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }
# wait_for <seconds> <command...>: run the command every 100 ms until it
# succeeds; fail after the deadline.
wait_for() {
  local deadline=$(($(date +%s) + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "bench-boot: timed out: $*" >&2; return 1; }
    sleep 0.1
  done
}
# first_image <pattern>: the first image machine $n's containerd lists that
# matches (awk reads the whole list: grep -m1 could end the pipe early and
# fail it under pipefail).
first_image() { docker exec "$n" ctr -n k8s.io images list -q | awk -v p="$1" '$0 ~ p && !f {print; f = 1}'; }
booted() { docker logs "$1" 2>&1 | grep -q 'Reached target .*Multi-User System'; }

round() { # <image> <n>
  local img=$1 n=capd-e2e-bench-boot-$$-$2 t0 t1 t2 t3 t4 t5 t6 etcd router
  t0=$(now)
  docker create -t --name "$n" --label "$label" --privileged --cgroupns=private \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    --tmpfs /tmp --tmpfs /run -v /var -v /lib/modules:/lib/modules:ro --hostname "$n" "$img" >/dev/null
  t1=$(now)
  docker start "$n" >/dev/null
  t2=$(now)
  wait_for 120 booted "$n"
  t3=$(now)
  wait_for 60 docker exec "$n" crictl ps
  t4=$(now)
  etcd=$(first_image '^registry.k8s.io/etcd:')
  docker exec "$n" sh -c "mkdir -p /tmp/a /tmp/e && ctr -n k8s.io images mount $apiserver /tmp/a && ctr -n k8s.io images mount $etcd /tmp/e" >/dev/null
  t5=$(now)
  router=$(first_image '/kube-router:')
  docker exec "$n" sh -c "mkdir -p /tmp/p /tmp/r && ctr -n k8s.io images mount $proxy /tmp/p && ctr -n k8s.io images mount $router /tmp/r" >/dev/null
  t6=$(now)
  echo "$img $(since "$t0" "$t1") $(since "$t1" "$t2") $(since "$t2" "$t3") $(since "$t3" "$t4") $(since "$t4" "$t5") $(since "$t5" "$t6") $(docker exec "$n" du -sxm /var | cut -f1)" | tee -a "$out/rows"
  docker rm -f -v "$n" >/dev/null
}

echo "bench-boot: $rounds rounds of: $images" >&2
for i in $(seq "$rounds"); do
  for img in $images; do round "$img" "$i"; done
done

median() { sort -n | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.2f\n", (v[NR/2]+v[NR/2+1])/2}'; }
echo
echo "| image (median of $rounds) | create s | start s | multi-user s | crictl s | unpack s | net unpack s | /var MB |"
echo "|---|---|---|---|---|---|---|---|"
for img in $images; do
  row="| $img"
  for col in 2 3 4 5 6 7 8; do
    row="$row | $(awk -v i="$img" -v c="$col" '$1 == i {print $c}' "$out/rows" | median)"
  done
  echo "$row |"
done
