//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Kubernetes' conformance suite on a new cluster of the default flavor
// (KUBETEST_CONFIGURATION chooses the tests: conformance-fast.yaml by
// default, conformance.yaml for all of them). Serial: in a parallel run it
// waits for the other specs and runs alone.
var _ = Describe("When testing Kubernetes conformance", Serial, func() {
	specs.K8SConformanceSpec(func() specs.K8SConformanceSpecInput {
		return specs.K8SConformanceSpecInput{CommonInput: commonInput()}
	})
})
