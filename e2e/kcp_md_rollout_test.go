//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's KCP and MachineDeployment rollout, with its taints, on the
// kcp-md-taints flavor.
var _ = Describe("When changing a control plane's and a MachineDeployment's Machines in place and rolling them out", func() {
	specs.KCPAndMachineDeploymentRolloutSpec(func() specs.KCPAndMachineDeploymentRolloutSpecInput {
		return specs.KCPAndMachineDeploymentRolloutSpecInput{CommonInput: commonInput()}
	})
})
