//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's "When upgrading a workload cluster using ClusterClass with
// RuntimeSDK", on the topology flavor with Cluster API's test extension.
var _ = Describe("When upgrading a workload cluster using ClusterClass with the runtime SDK", Label(specs.LabelClusterClass), func() {
	specs.RuntimeSDKSpec(func() specs.RuntimeSDKSpecInput {
		return specs.RuntimeSDKSpecInput{CommonInput: commonInput()}
	})
})
