//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's KCP remediation, its Machines held in bootstrap, on the
// kcp-remediation-bootstrap flavor.
var _ = Describe("When a control plane remediates Machines stuck in bootstrap", func() {
	specs.KCPRemediationSpec(func() specs.KCPRemediationSpecInput {
		return specs.KCPRemediationSpecInput{CommonInput: commonInput()}
	})
})
