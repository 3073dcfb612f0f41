//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// A KubeadmControlPlane adopting a standalone control-plane Machine, on
// the kcp-adoption flavor, as upstream's suite runs it.
var _ = Describe("When a KubeadmControlPlane adopts existing control-plane Machines", func() {
	specs.KCPAdoptionSpec(func() specs.KCPAdoptionSpecInput {
		return specs.KCPAdoptionSpecInput{CommonInput: commonInput()}
	})
})
