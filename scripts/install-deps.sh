#!/usr/bin/env bash
# Installs the host packages the tests and the image build need, from
# Debian's archive. Idempotent: installs only what is missing.
#   busybox-static  the test image's userland (framework/runtime/runtimetest)
#   debootstrap     Debian root filesystems for the node images (make images)
#   gcc, libc6-dev  the static pause binary (make images)
#   libseccomp-dev, pkg-config
#                   runc, built with seccomp and linked statically (make
#                   images, containerRuntime.source modules)
#   make, bzip2     BusyBox, for the conformance tests' busybox image (make
#                   images; bzip2 for its unit test)
# With --browser, also:
#   chromium        the run report's test in a real headless browser
#                   (framework/report), and report.png (scripts/ci-e2e.sh)
# With --kubectl, when no kubectl is on the PATH:
#   kubernetes-client  kubectl, for make up, make iterate and docs/explore.md
set -o errexit -o nounset -o pipefail

pkgs=(busybox-static debootstrap gcc libc6-dev libseccomp-dev pkg-config make bzip2)
for arg in "$@"; do
  case $arg in
  --browser) pkgs+=(chromium) ;;
  # Debian's kubectl, unless one is on the PATH already.
  --kubectl) command -v kubectl >/dev/null || pkgs+=(kubernetes-client) ;;
  *) echo "install-deps: unknown argument $arg" >&2; exit 2 ;;
  esac
done
need=()
for pkg in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "install-deps: installing ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
