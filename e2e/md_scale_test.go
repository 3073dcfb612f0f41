//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's md-scale on the default template, as upstream's suite runs it.
var _ = Describe("When scaling a MachineDeployment", func() {
	specs.MachineDeploymentScaleSpec(func() specs.MachineDeploymentScaleSpecInput {
		return specs.MachineDeploymentScaleSpecInput{CommonInput: commonInput()}
	})
})
