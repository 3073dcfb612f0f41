//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's in-place update spec on the in-memory backend.
var _ = Describe("When updating a cluster's Machines in place", Label(specs.LabelClusterClass, specs.LabelInMemory), func() {
	specs.ClusterInPlaceUpdateSpec(func() specs.ClusterInPlaceUpdateSpecInput {
		return specs.ClusterInPlaceUpdateSpecInput{CommonInput: commonInput()}
	})
})
