//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// A rollout of a Cluster of a ClusterClass. With CAPD_E2E_WORKLOAD_CLUSTER
// (make iterate sets it to the cluster make up kept) it rolls out that
// cluster and leaves it running; otherwise it creates its own.
var _ = Describe("When rolling out a MachineDeployment", Label(specs.LabelClusterClass), func() {
	specs.MachineDeploymentRolloutSpec(func() specs.MachineDeploymentRolloutSpecInput {
		existing, err := suite.ExistingWorkloadCluster()
		Expect(err).ToNot(HaveOccurred())
		return specs.MachineDeploymentRolloutSpecInput{CommonInput: commonInput(), ExistingCluster: existing}
	})
})
