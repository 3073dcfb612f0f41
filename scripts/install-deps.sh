#!/usr/bin/env bash
# Installs the host packages the tests and the image build need, from
# Debian's archive. Idempotent: installs only what is missing.
#   busybox-static  the test image's userland (framework/runtime/runtimetest)
#   debootstrap     Debian root filesystems for the node images (make images)
#   gcc, libc6-dev  the static pause binary (make images)
set -o errexit -o nounset -o pipefail

need=()
for pkg in busybox-static debootstrap gcc libc6-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "install-deps: installing ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
