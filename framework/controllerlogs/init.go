package controllerlogs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // GinkgoWriter, as upstream's helpers log to it
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL, as upstream's helpers use it

	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

// logf prints as upstream's framework log does ("INFO: ...").
func logf(format string, args ...any) {
	fmt.Fprintf(GinkgoWriter, "INFO: "+format+"\n", args...)
}

// InitAndWatch does what upstream's
// clusterctl.InitManagementClusterAndWatchControllerLogs does, with the same
// input, defaults and folders, but streams the controllers' logs with Watch: it runs
// clusterctl init unless the cluster already has provider controllers, waits
// for every controller Deployment to be Available (intervals, as upstream's),
// then streams their logs into <LogFolder>/logs/<namespace>/ and, unless
// DisableMetricsCollection, dumps their metrics into
// <LogFolder>/metrics/<namespace>/ (upstream's framework.WatchPodMetrics),
// both until ctx ends. Failures are Gomega failures, as upstream's.
func InitAndWatch(ctx context.Context, in clusterctl.InitManagementClusterAndWatchControllerLogsInput, intervals ...any) {
	Expect(ctx).NotTo(BeNil(), "ctx is required for InitAndWatch")
	Expect(in.ClusterProxy).NotTo(BeNil(), "InitAndWatch: ClusterProxy is nil")
	Expect(in.ClusterctlConfigPath).To(BeAnExistingFile(), "InitAndWatch: ClusterctlConfigPath must be an existing file")
	Expect(in.InfrastructureProviders).NotTo(BeEmpty(), "InitAndWatch: InfrastructureProviders is empty")
	Expect(os.MkdirAll(in.LogFolder, 0o750)).To(Succeed(), "InitAndWatch: LogFolder %q cannot be created", in.LogFolder)

	if in.CoreProvider == "" {
		in.CoreProvider = config.ClusterAPIProviderName
	}
	if len(in.BootstrapProviders) == 0 {
		in.BootstrapProviders = []string{config.KubeadmBootstrapProviderName}
	}
	if len(in.ControlPlaneProviders) == 0 {
		in.ControlPlaneProviders = []string{config.KubeadmControlPlaneProviderName}
	}
	c := in.ClusterProxy.GetClient()
	if len(framework.GetControllerDeployments(ctx, framework.GetControllerDeploymentsInput{Lister: c})) == 0 {
		init := clusterctl.InitInput{
			KubeconfigPath:            in.ClusterProxy.GetKubeconfigPath(),
			ClusterctlConfigPath:      in.ClusterctlConfigPath,
			CoreProvider:              in.CoreProvider,
			BootstrapProviders:        in.BootstrapProviders,
			ControlPlaneProviders:     in.ControlPlaneProviders,
			InfrastructureProviders:   in.InfrastructureProviders,
			IPAMProviders:             in.IPAMProviders,
			RuntimeExtensionProviders: in.RuntimeExtensionProviders,
			AddonProviders:            in.AddonProviders,
			LogFolder:                 in.LogFolder,
		}
		if in.ClusterctlBinaryPath != "" {
			clusterctl.InitWithBinary(ctx, in.ClusterctlBinaryPath, init)
		} else {
			clusterctl.Init(ctx, init)
		}
	}

	logf("Waiting for provider controllers to be running")
	deployments := framework.GetControllerDeployments(ctx, framework.GetControllerDeploymentsInput{Lister: c})
	Expect(deployments).NotTo(BeEmpty(), "InitAndWatch: no controller Deployments after clusterctl init")
	for _, d := range deployments {
		framework.WaitForDeploymentsAvailable(ctx, framework.WaitForDeploymentsAvailableInput{Getter: c, Deployment: d}, intervals...)
		Expect(Watch(ctx, Input{
			ClientSet:  in.ClusterProxy.GetClientSet(),
			Deployment: d,
			LogPath:    filepath.Join(in.LogFolder, "logs", d.Namespace),
			Logf:       logf,
		})).To(Succeed())
		if !in.DisableMetricsCollection {
			framework.WatchPodMetrics(ctx, framework.WatchPodMetricsInput{
				GetLister:   c,
				ClientSet:   in.ClusterProxy.GetClientSet(),
				Deployment:  d,
				MetricsPath: filepath.Join(in.LogFolder, "metrics", d.Namespace),
			})
		}
	}
}
