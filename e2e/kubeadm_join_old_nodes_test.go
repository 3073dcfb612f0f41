//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's spec: a worker of the old version joins the upgraded control
// plane with the new kubeadm, here from our own node image.
var _ = Describe("When a worker joins during an upgrade with the control plane's kubeadm", Label(specs.LabelClusterClass), func() {
	specs.KubeadmJoinOldNodesSpec(func() specs.KubeadmJoinOldNodesSpecInput {
		return specs.KubeadmJoinOldNodesSpecInput{CommonInput: commonInput()}
	})
})
