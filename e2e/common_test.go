//go:build e2e

package e2e

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"sigs.k8s.io/cluster-api/test/framework"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
	"github.com/capd-e2e/capd-e2e/framework/certmanager/manifests"
	"github.com/capd-e2e/capd-e2e/framework/certmanager/webhookcheck"
)

// initScheme returns a scheme with Cluster API's types and CAPD's.
func initScheme() *apiruntime.Scheme {
	sc := apiruntime.NewScheme()
	framework.TryAddDefaultSchemes(sc)
	Expect(clientgoscheme.AddToScheme(sc)).To(Succeed()) // EndpointSlices, for the webhook check
	Expect(infrav1.AddToScheme(sc)).To(Succeed())
	return sc
}

// installCertManager installs cert-manager's CRDs and our substitute
// controller into the cluster of proxy, waiting (within the
// "<cluster>/wait-controllers" interval) until the CRDs are Established and
// the controller is Available.
func installCertManager(ctx context.Context, proxy framework.ClusterProxy) {
	intervals := e2eConfig.GetIntervals(proxy.GetName(), "wait-controllers")
	timeout, err := time.ParseDuration(intervals[0].(string))
	Expect(err).ToNot(HaveOccurred())
	poll, err := time.ParseDuration(intervals[1].(string))
	Expect(err).ToNot(HaveOccurred())
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	Expect(manifests.Install(ctx, manifests.InstallInput{Client: proxy.GetClient(), Config: cfg, Poll: poll})).To(Succeed(),
		"install cert-manager CRDs and the substitute into cluster %q", proxy.GetName())
}

// checkWebhooks proves the providers' webhooks serve certificates their
// caBundles (injected by our cert-manager substitute) verify.
func checkWebhooks(ctx context.Context, proxy framework.ClusterProxy) {
	Expect(webhookcheck.Check(ctx, webhookcheck.Input{
		Client: proxy.GetClient(),
		Dial:   webhookcheck.PortForward(proxy.GetRESTConfig()),
	})).To(Succeed(), "webhook caBundles in cluster %q", proxy.GetName())
}

// commonInput is what every spec of this suite gets.
func commonInput() specs.CommonInput {
	return specs.CommonInput{
		E2EConfig:             e2eConfig,
		ClusterctlConfigPath:  clusterctlConfigPath,
		BootstrapClusterProxy: bootstrapClusterProxy,
		ArtifactFolder:        artifactFolder,
		Runtime:               rt,
		SkipCleanup:           skipCleanup,
	}
}
