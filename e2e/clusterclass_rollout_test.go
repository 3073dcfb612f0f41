//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's clusterclass-rollout on the quick-start class, with CAPD's
// docker backend (upstream's suite runs it on the in-memory backend).
var _ = Describe("When rolling out a ClusterClass's changes", Label(specs.LabelClusterClass), func() {
	specs.ClusterClassRolloutSpec(func() specs.ClusterClassRolloutSpecInput {
		return specs.ClusterClassRolloutSpecInput{CommonInput: commonInput()}
	})
})
