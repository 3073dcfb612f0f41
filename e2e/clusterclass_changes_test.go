//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's clusterclass-changes on the quick-start class, with CAPD's
// docker backend.
var _ = Describe("When changing a ClusterClass", Label(specs.LabelClusterClass), func() {
	specs.ClusterClassChangesSpec(func() specs.ClusterClassChangesSpecInput {
		return specs.ClusterClassChangesSpecInput{CommonInput: commonInput()}
	})
})
