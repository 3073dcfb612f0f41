//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's cluster-deletion on a Cluster of a ClusterClass with three
// control plane Machines, as upstream's suite runs it.
var _ = Describe("When deleting a cluster with ClusterClass", Label(specs.LabelClusterClass), func() {
	specs.ClusterDeletionSpec(func() specs.ClusterDeletionSpecInput {
		return specs.ClusterDeletionSpecInput{CommonInput: commonInput()}
	})
})
