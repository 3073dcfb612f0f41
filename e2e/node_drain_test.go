//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's node-drain on the quick-start class, with the volume
// detachment check, as upstream's suite runs it.
var _ = Describe("When a Node is drained before its Machine is deleted", Label(specs.LabelClusterClass), func() {
	specs.NodeDrainTimeoutSpec(func() specs.NodeDrainTimeoutSpecInput {
		return specs.NodeDrainTimeoutSpecInput{CommonInput: commonInput(), VerifyNodeVolumeDetach: true}
	})
})
