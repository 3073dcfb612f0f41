//go:build e2e

// Package e2e is capd-e2e's own suite: it wires the reusable specs of
// e2e/specs to a kind management cluster built from our node image, with
// Cluster API's controllers (v1.14.2, built locally) installed by clusterctl
// and our cert-manager substitute. Run it with `make test-e2e`.
package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/component-base/logs"
	logsv1 "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	"sigs.k8s.io/cluster-api/test/framework/ginkgoextensions"

	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/config/upstream"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	capdlogs "github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/snapshot"
)

// Flags, compatible with upstream's suite (sigs.k8s.io/cluster-api/test/e2e).
var (
	configPath         string
	artifactFolder     string
	clusterctlConfig   string
	useExistingCluster bool
	skipCleanup        bool
	alsoLogToFile      bool
	logOptions         = logs.NewOptions()
)

// Suite state, set up once per Ginkgo process.
var (
	ctx                   = ctrl.SetupSignalHandler()
	watchesCtx, cancelW   = context.WithCancel(ctx)
	cfg                   *config.Config
	e2eConfig             *clusterctl.E2EConfig
	clusterctlConfigPath  string
	bootstrapClusterProxy framework.ClusterProxy
	kindCluster           *bootstrap.KindCluster
	rt                    runtime.Runtime
	// suiteRunID labels what this suite run creates besides CAPD's own
	// containers, for the leak check at the end.
	suiteRunID = runtime.NewRunID()
)

func init() {
	flag.StringVar(&configPath, "e2e.config", "../config/e2e.yaml", "path to the e2e config file")
	flag.StringVar(&artifactFolder, "e2e.artifacts-folder", "../_artifacts", "folder for test artifacts; the ARTIFACTS environment variable takes precedence")
	flag.BoolVar(&alsoLogToFile, "e2e.also-log-to-file", true, "also write Ginkgo's output, with timestamps, to ginkgo-log.txt in the artifacts folder")
	flag.BoolVar(&skipCleanup, "e2e.skip-resource-cleanup", false, "keep clusters, namespaces and the kind management cluster after the tests")
	flag.StringVar(&clusterctlConfig, "e2e.clusterctl-config", "", "clusterctl config to use; if empty, a local repository with its config is created in the artifacts folder")
	flag.BoolVar(&useExistingCluster, "e2e.use-existing-cluster", false, "use the cluster of the current kubeconfig instead of creating a kind cluster")
	logsv1.AddGoFlags(logOptions, flag.CommandLine)
}

func TestE2E(t *testing.T) {
	g := NewWithT(t)
	g.Expect(logsv1.ValidateAndApply(logOptions, nil)).To(Succeed())
	ctrl.SetLogger(klog.Background())
	if a, ok := os.LookupEnv("ARTIFACTS"); ok && a != "" {
		artifactFolder = a
	}
	var err error
	artifactFolder, err = filepath.Abs(artifactFolder)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(os.MkdirAll(artifactFolder, 0o755)).To(Succeed(), "cannot create the artifacts folder %q", artifactFolder)
	RegisterFailHandler(Fail)
	if alsoLogToFile {
		w, err := ginkgoextensions.EnableFileLogging(filepath.Join(artifactFolder, "ginkgo-log.txt"))
		g.Expect(err).ToNot(HaveOccurred())
		defer w.Close()
	}
	RunSpecs(t, "capd-e2e")
}

// suiteData is what node 1 hands the other Ginkgo processes.
type suiteData struct {
	ArtifactFolder       string
	ConfigPath           string
	ClusterctlConfigPath string
	KubeconfigPath       string
	RunID                string
}

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	loadConfig()
	connectRuntime()

	if clusterctlConfig == "" {
		By("Creating a local clusterctl repository in " + filepath.Join(artifactFolder, "repository"))
		cniPath := cfg.ResolvePath(e2eConfig.MustGetVariable("CNI"))
		Expect(cniPath).To(BeAnExistingFile(), "the CNI manifest %s is missing: run make images", cniPath)
		in := clusterctl.CreateRepositoryInput{E2EConfig: e2eConfig, RepositoryFolder: filepath.Join(artifactFolder, "repository")}
		in.RegisterClusterResourceSetConfigMapTransformation(cniPath, "CNI_RESOURCES")
		clusterctlConfigPath = clusterctl.CreateRepository(ctx, in)
		Expect(bootstrap.UseExternalCertManager(clusterctlConfigPath)).To(Succeed())
	} else {
		clusterctlConfigPath = clusterctlConfig
	}

	kubeconfigPath := ""
	if !useExistingCluster {
		version := e2eConfig.MustGetVariable("KUBERNETES_VERSION_MANAGEMENT")
		k8s, err := cfg.Build.KubernetesVersion(version)
		Expect(err).ToNot(HaveOccurred(), "KUBERNETES_VERSION_MANAGEMENT")
		By(fmt.Sprintf("Creating the kind management cluster %q from %s", e2eConfig.ManagementClusterName, k8s.NodeImage))
		kindCluster, err = bootstrap.CreateKind(ctx, bootstrap.KindOptions{
			Name:              e2eConfig.ManagementClusterName,
			NodeImage:         k8s.NodeImage,
			MountDockerSocket: true,
			KubeconfigPath:    filepath.Join(artifactFolder, "kind", "kubeconfig"),
			LogFolder:         filepath.Join(artifactFolder, "kind"),
			Runtime:           rt,
			EnableOwnerReferencesPermissionEnforcement: true,
		})
		Expect(err).ToNot(HaveOccurred())
		kubeconfigPath = kindCluster.KubeconfigPath

		By("Loading the provider images into every kind node")
		loadImages(ctx)
	}
	bootstrapClusterProxy = newBootstrapProxy(kubeconfigPath)

	By("Installing cert-manager's CRDs and our substitute controller")
	installCertManager(ctx, bootstrapClusterProxy)

	By("Running clusterctl init")
	clusterctl.InitManagementClusterAndWatchControllerLogs(watchesCtx, clusterctl.InitManagementClusterAndWatchControllerLogsInput{
		ClusterProxy:            bootstrapClusterProxy,
		ClusterctlConfigPath:    clusterctlConfigPath,
		InfrastructureProviders: e2eConfig.InfrastructureProviders(),
		LogFolder:               filepath.Join(artifactFolder, "clusters", bootstrapClusterProxy.GetName()),
	}, e2eConfig.GetIntervals(bootstrapClusterProxy.GetName(), "wait-controllers")...)

	By("Checking that the providers' webhooks serve certificates their caBundles trust")
	checkWebhooks(ctx, bootstrapClusterProxy)

	data, err := json.Marshal(suiteData{
		ArtifactFolder: artifactFolder, ConfigPath: configPath, ClusterctlConfigPath: clusterctlConfigPath,
		KubeconfigPath: bootstrapClusterProxy.GetKubeconfigPath(), RunID: suiteRunID,
	})
	Expect(err).ToNot(HaveOccurred())
	return data
}, func(data []byte) {
	var d suiteData
	Expect(json.Unmarshal(data, &d)).To(Succeed())
	artifactFolder, configPath, clusterctlConfigPath, suiteRunID = d.ArtifactFolder, d.ConfigPath, d.ClusterctlConfigPath, d.RunID
	if cfg == nil { // processes other than 1
		loadConfig()
		connectRuntime()
		bootstrapClusterProxy = newBootstrapProxy(d.KubeconfigPath)
	}
}, NodeTimeout(45*time.Minute))

var _ = SynchronizedAfterSuite(func() {
	cancelW()
}, func(ctx SpecContext) {
	if bootstrapClusterProxy == nil || rt == nil {
		return // setup failed before there was anything to clean up
	}
	if kindCluster != nil {
		By("Collecting the kind nodes' logs")
		dir := filepath.Join(artifactFolder, "clusters", bootstrapClusterProxy.GetName(), "machines")
		if err := kindCluster.CollectLogs(ctx, dir); err != nil {
			fmt.Fprintf(GinkgoWriter, "collecting kind node logs: %v\n", err)
		}
		if s, err := snapshot.Take(ctx, rt, snapshot.Filter{Cluster: kindCluster.Name}); err == nil {
			_ = s.Save(filepath.Join(artifactFolder, "clusters", bootstrapClusterProxy.GetName()))
		}
	}
	if skipCleanup {
		return
	}
	bootstrapClusterProxy.Dispose(ctx)
	if kindCluster != nil {
		By("Deleting the kind management cluster")
		Expect(kindCluster.Delete(ctx)).To(Succeed())
		rep, err := leak.Check(ctx, rt, leak.Selector{Cluster: kindCluster.Name})
		Expect(err).ToNot(HaveOccurred())
		Expect(rep.Err()).ToNot(HaveOccurred(), "the management cluster left containers behind")
	}
	rep, err := leak.Check(ctx, rt, leak.Selector{RunID: suiteRunID})
	Expect(err).ToNot(HaveOccurred())
	Expect(rep.Err()).ToNot(HaveOccurred(), "the suite left objects behind")
	Expect(rt.Close()).To(Succeed())
}, NodeTimeout(15*time.Minute))

func loadConfig() {
	Expect(configPath).To(BeAnExistingFile(), "-e2e.config must name an existing file")
	var err error
	cfg, err = config.Load(configPath)
	Expect(err).ToNot(HaveOccurred())
	e2eConfig, err = upstream.E2EConfig(cfg)
	Expect(err).ToNot(HaveOccurred())
}

func connectRuntime() {
	var err error
	rt, err = moby.New(moby.Config{})
	Expect(err).ToNot(HaveOccurred())
}

func newBootstrapProxy(kubeconfigPath string) framework.ClusterProxy {
	return framework.NewClusterProxy("bootstrap", kubeconfigPath, initScheme(),
		framework.WithMachineLogCollector(&capdlogs.Collector{Runtime: rt}))
}

// loadImages loads the config's images into every kind node: mustLoad
// images must be in the engine, tryLoad ones are skipped with a note when
// they are not.
func loadImages(ctx context.Context) {
	nodes, err := kindCluster.Nodes(ctx)
	Expect(err).ToNot(HaveOccurred())
	var refs []string
	for _, img := range e2eConfig.Images {
		if _, err := rt.InspectImage(ctx, img.Name); err != nil {
			if img.LoadBehavior == clusterctl.TryLoadImage {
				fmt.Fprintf(GinkgoWriter, "skipping image %s (tryLoad): %v\n", img.Name, err)
				continue
			}
			Expect(err).ToNot(HaveOccurred(), "image %s (mustLoad) is not in the engine: run make images", img.Name)
		}
		refs = append(refs, img.Name)
	}
	start := time.Now()
	Expect(bootstrap.LoadImages(ctx, rt, nodes, refs)).To(Succeed())
	fmt.Fprintf(GinkgoWriter, "loaded %d images into %d nodes in %s\n", len(refs), len(nodes), time.Since(start).Round(time.Millisecond))
}
