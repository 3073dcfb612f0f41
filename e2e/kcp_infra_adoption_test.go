//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's kcp-infra-adoption on the quick-start class, with its
// rollout after the adoption.
var _ = Describe("When a KubeadmControlPlane adopts the machines of a re-created Cluster", Label(specs.LabelClusterClass), func() {
	specs.KCPInfraAdoptionSpec(func() specs.KCPInfraAdoptionSpecInput {
		return specs.KCPInfraAdoptionSpecInput{CommonInput: commonInput()}
	})
})
