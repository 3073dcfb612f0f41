#!/usr/bin/env bash
# `make test-examples`: runs examples/provider-e2e for real, the way a
# provider runs its own suite on capd-e2e, outside this repository:
#   1. "CAPD as a provider" is assembled in a work directory (default: a new
#      temporary one; WORK_DIR to choose) from the module proxy
#      (scripts/fixtures/capd-provider.sh);
#   2. examples/ is copied into it at infrastructure/docker/e2e-capd, its
#      go.mod pointing at this checkout of capd-e2e;
#   3. `make images` with the provider's config builds the provider's
#      manager from that directory (and whatever else is missing);
#   4. scripts/ci-e2e.sh runs the provider's suite (GINKGO_LABEL_FILTER,
#      default "PR-Blocking"), with its own config and management cluster.
# ARTIFACTS defaults to _artifacts/examples.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)

work=${WORK_DIR:-$(mktemp -d /tmp/capd-e2e-provider.XXXXXX)}
provider=$work/capd-as-a-provider
suite=$provider/infrastructure/docker/e2e-capd
if [[ ! -d $provider ]]; then
  "$REPO_ROOT/scripts/fixtures/capd-provider.sh" "$provider"
fi
rm -rf "$suite"
cp -R "$REPO_ROOT/examples" "$suite"
# capd-e2e is three modules: the harness, its container runtime and the
# cloud provider's names.
(cd "$suite" && go mod edit -replace "github.com/capd-e2e/capd-e2e=$REPO_ROOT" \
  -replace "github.com/capd-e2e/capd-e2e/framework/runtime=$REPO_ROOT/framework/runtime" \
  -replace "github.com/capd-e2e/capd-e2e/cloudprovider/names=$REPO_ROOT/cloudprovider/names")
echo "test-examples: the provider's suite is $suite/provider-e2e ($(wc -l <"$suite/provider-e2e/suite_test.go") lines)"

export E2E_CONFIG=$suite/provider-e2e/config/e2e.yaml
export E2E_SUITE_DIR=$suite/provider-e2e
export ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts/examples}
export GINKGO_LABEL_FILTER=${GINKGO_LABEL_FILTER:-PR-Blocking}
exec "$REPO_ROOT/scripts/ci-e2e.sh"
