//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

var _ = Describe("When upgrading a cluster's Kubernetes version", func() {
	specs.ClusterUpgradeSpec(func() specs.ClusterUpgradeSpecInput {
		return specs.ClusterUpgradeSpecInput{CommonInput: commonInput()}
	})
})
