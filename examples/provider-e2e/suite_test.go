//go:build e2e

package providere2e

import (
	"flag"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
	capdruntime "github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// The provider's own flags: its config, its clusterctl config, and the
// kubeconfig of a management cluster it already has.
var (
	configPath           = flag.String("e2e.config", "my-e2e.yaml", "the provider's e2e config (upstream format)")
	clusterctlConfigPath = flag.String("e2e.clusterctl-config", "", "clusterctl config with the provider's repository")
	kubeconfigPath       = flag.String("e2e.kubeconfig", os.Getenv("KUBECONFIG"), "management cluster")
	artifactFolder       = flag.String("e2e.artifacts-folder", "_artifacts", "artifacts")
)

var (
	ctx       = ctrl.SetupSignalHandler()
	e2eConfig *clusterctl.E2EConfig
	proxy     framework.ClusterProxy
	rt        capdruntime.Runtime
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "my-provider-e2e")
}

var _ = BeforeSuite(func() {
	e2eConfig = clusterctl.LoadE2EConfig(ctx, clusterctl.LoadE2EConfigInput{ConfigPath: *configPath})
	scheme := runtime.NewScheme()
	framework.TryAddDefaultSchemes(scheme)
	proxy = framework.NewClusterProxy("bootstrap", *kubeconfigPath, scheme)
	var err error
	rt, err = moby.New(moby.Config{}) // DOCKER_HOST, or Podman's socket
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(rt.Close)
})

var _ = Describe("My provider", func() {
	specs.QuickStartSpec(func() specs.QuickStartSpecInput {
		return specs.QuickStartSpecInput{CommonInput: specs.CommonInput{
			E2EConfig:             e2eConfig,
			ClusterctlConfigPath:  *clusterctlConfigPath,
			BootstrapClusterProxy: proxy,
			ArtifactFolder:        *artifactFolder,
			Runtime:               rt,
		}}
	})
})
