//go:build e2e

package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

var _ = Describe("When moving a cluster's management into itself", func() {
	specs.SelfHostedSpec(func() specs.SelfHostedSpecInput {
		return specs.SelfHostedSpecInput{
			CommonInput: commonInput(),
			// The clusterctl config marks cert-manager externally provisioned,
			// so the self-hosted cluster needs the CRDs and our substitute
			// before clusterctl init, as the management cluster did.
			PreClusterctlInit: func(ctx context.Context, proxy framework.ClusterProxy) {
				Expect(e2eSuite.Environment().InstallCertManager(ctx, proxy)).To(Succeed())
			},
		}
	})
})
