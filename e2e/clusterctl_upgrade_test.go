//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's "When testing clusterctl upgrades using ClusterClass": from
// the previous minor release (build.clusterAPI.previous) to the providers
// under test, on a topology cluster.
var _ = Describe("When upgrading the providers of a management cluster with clusterctl upgrade", Label(specs.LabelClusterClass), func() {
	specs.ClusterctlUpgradeSpec(func() specs.ClusterctlUpgradeSpecInput {
		return specs.ClusterctlUpgradeInputFrom(e2eSuite.Environment())
	})
})
