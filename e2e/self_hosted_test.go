//go:build e2e

package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// The clusterctl config marks cert-manager externally provisioned, so the
// self-hosted cluster needs the CRDs and our substitute before clusterctl
// init, as the management cluster did.
func installCertManager(ctx context.Context, proxy framework.ClusterProxy) {
	Expect(e2eSuite.Environment().InstallCertManager(ctx, proxy)).To(Succeed())
}

var _ = Describe("When moving a cluster's management into itself", func() {
	specs.SelfHostedSpec(func() specs.SelfHostedSpecInput {
		return specs.SelfHostedSpecInput{CommonInput: commonInput(), PreClusterctlInit: installCertManager}
	})
})

// As upstream runs it: a Cluster of a ClusterClass, moved with its class
// and templates.
var _ = Describe("When moving a ClusterClass cluster's management into itself", Label(specs.LabelClusterClass), func() {
	specs.SelfHostedSpec(func() specs.SelfHostedSpecInput {
		return specs.SelfHostedSpecInput{CommonInput: commonInput(), PreClusterctlInit: installCertManager, Flavor: ptr.To("topology-self-hosted")}
	})
})

// Upstream's HA case: three control-plane machines, every one of them
// running CAPD's machines through the engine's socket once moved.
var _ = Describe("When moving a ClusterClass cluster with a HA control plane into itself", Label(specs.LabelClusterClass), func() {
	specs.SelfHostedSpec(func() specs.SelfHostedSpecInput {
		return specs.SelfHostedSpecInput{CommonInput: commonInput(), PreClusterctlInit: installCertManager,
			Flavor: ptr.To("topology-self-hosted"), ControlPlaneMachineCount: ptr.To[int64](3)}
	})
})

// Upstream's single-node case: no workers, and a control plane without
// its NoSchedule taint, so the moved controllers run on its only node.
var _ = Describe("When moving a single-node ClusterClass cluster into itself", Label(specs.LabelClusterClass), func() {
	specs.SelfHostedSpec(func() specs.SelfHostedSpecInput {
		return specs.SelfHostedSpecInput{CommonInput: commonInput(), PreClusterctlInit: installCertManager,
			Flavor: ptr.To("topology-self-hosted-no-workers"), WorkerMachineCount: ptr.To[int64](0)}
	})
})
