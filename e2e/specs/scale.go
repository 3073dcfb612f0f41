package specs

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	. "github.com/onsi/gomega"

	. "github.com/onsi/ginkgo/v2"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"

	capie2e "sigs.k8s.io/cluster-api/test/e2e"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	"sigs.k8s.io/cluster-api/test/infrastructure/kind"
)

// specScale is upstream's ScaleSpec (scale), and its facts. Its clusters
// are in-memory: no node image, no load balancer.
var specScale = declare(specFacts{
	name: "scale", label: LabelInMemoryScale,
	variables: []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo, varEtcdVersionUpgradeTo, varCoreDNSVersionUpgradeTo},
	inMemory:  true, testExtension: true,
	// Upstream's, per cluster (the clusters are created, upgraded and
	// deleted Concurrency at a time, each worker bounded by these): the
	// cluster, its control plane, its workers; the upgrade of the control
	// plane, the MachineDeployments, the MachinePools, kube-proxy, CoreDNS
	// and etcd; the deletion.
	waits: []string{"wait-cluster", "wait-control-plane", "wait-worker-nodes",
		"wait-control-plane-upgrade", "wait-machine-deployment-upgrade", "wait-machine-pool-upgrade",
		"wait-machine-upgrade", "wait-machine-upgrade", "wait-machine-upgrade", "wait-delete-cluster"},
	files:    []string{"scale.go", "in_memory.go"},
	upstream: "e2e/scale.go",
})

// ScaleSpecInput is the input of ScaleSpec. Each count may be overridden
// by its upstream variable, in the environment or the config, as
// upstream's: CAPI_SCALE_CLUSTER_COUNT, CAPI_SCALE_CONCURRENCY,
// CAPI_SCALE_CONTROL_PLANE_MACHINE_COUNT, CAPI_SCALE_MACHINE_DEPLOYMENT_COUNT,
// CAPI_SCALE_WORKER_PER_MACHINE_DEPLOYMENT_COUNT,
// CAPI_SCALE_ADDITIONAL_CLUSTER_CLASS_COUNT,
// CAPI_SCALE_DEPLOY_CLUSTER_IN_SEPARATE_NAMESPACES,
// CAPI_SCALE_USE_CROSS_NAMESPACE_CLUSTER_CLASS.
type ScaleSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor, of ClusterClass
	// ClusterClassName. If unset, "in-memory-scale" (data/).
	Flavor *string
	// ClusterClassName is the class the flavor's Cluster names. If unset,
	// "in-memory".
	ClusterClassName string
	// ClusterCount clusters are created, Concurrency at a time. If unset,
	// upstream's suite's: 10 and 5.
	ClusterCount, Concurrency *int64
	// Each cluster has ControlPlaneMachineCount control-plane Machines and
	// MachineDeploymentCount MachineDeployments of
	// WorkerPerMachineDeploymentCount Machines. If unset, upstream's
	// suite's: 1, 1 and 3.
	ControlPlaneMachineCount, MachineDeploymentCount, WorkerPerMachineDeploymentCount *int64
	// AdditionalClusterClassCount copies of the class are created beside
	// it (for the topology controller's load). If unset, upstream's
	// suite's: 4.
	AdditionalClusterClassCount *int64
	// DeployClusterInSeparateNamespaces: one namespace per cluster;
	// UseCrossNamespaceClusterClass: the class in the spec's namespace,
	// the clusters in theirs. If unset, false.
	DeployClusterInSeparateNamespaces, UseCrossNamespaceClusterClass *bool
	// SkipUpgrade leaves out the upgrade from
	// KUBERNETES_VERSION_UPGRADE_FROM to KUBERNETES_VERSION_UPGRADE_TO.
	SkipUpgrade bool
	// ExtensionServiceNamespace and ExtensionServiceName are the test
	// runtime extension's webhook Service, which the class's patches call.
	// If unset, the test extension's: "test-extension-system" and
	// "test-extension-webhook-service".
	ExtensionServiceNamespace, ExtensionServiceName string
}

// ScaleSpec is upstream's ScaleSpec (sigs.k8s.io/cluster-api/test/e2e),
// called as it is in capd-e2e's environment (upstream.go): ClusterCount
// Clusters of a ClusterClass on CAPD's in-memory backend created
// Concurrency at a time, each upgraded from KUBERNETES_VERSION_UPGRADE_FROM
// to KUBERNETES_VERSION_UPGRADE_TO, then all deleted; the class's patches
// and upgrade plan come from the test runtime extension
// (build.clusterAPI.images.testExtension). Their Machines are fake: CAPD
// serves each cluster's API server and etcd from its own pod, so what is
// measured is Cluster API's controllers, not machines.
//
// capd-e2e adds: each Cluster tracked before it is created, and the check,
// at the end, that none has anything in the container engine. Resources
// are dumped (upstream's DumpResources). Labelled in-memory-scale; a
// suite adds ClusterClass and in-memory. It runs in the namespace "scale",
// so two cannot run at once. Ginkgo cannot cancel its steps (see
// MachineDeploymentScaleSpec).
func ScaleSpec(inputGetter func() ScaleSpecInput) {
	Context("scale", Label(LabelInMemoryScale), func() {
		var (
			proxy *inMemoryProxy
			e2e   *clusterctl.E2EConfig
		)
		BeforeEach(func() {
			in := inputGetter()
			proxy = newInMemoryProxy(in.CommonInput)
			proxy.checkNothingInEngine()
			e2e = in.E2EConfig
			if e2e == nil || in.SkipUpgrade {
				return // upstream's spec says what is missing
			}
			to := e2e.MustGetVariable(varKubernetesVersionUpgradeTo)
			target, err := testExtensionUpgradeTarget(to, kind.GetKubernetesVersions())
			Expect(err).ToNot(HaveOccurred())
			if target != to {
				_, inEnv := os.LookupEnv(varKubernetesVersionUpgradeTo)
				Expect(inEnv).To(BeFalse(), "%s=%s is set in the environment: the test extension's upgrade plan cannot reach it (it knows %s); unset it, or set it to %s",
					varKubernetesVersionUpgradeTo, to, strings.Join(kind.GetKubernetesVersions(), ", "), target)
				By(fmt.Sprintf("upgrade the in-memory clusters to %s, the newest %s release the test extension's upgrade plan knows (not %s)", target, minorOf(to), to))
				e2e = e2e.DeepCopy()
				e2e.Variables[varKubernetesVersionUpgradeTo] = target
			}
		})
		capie2e.ScaleSpec(context.Background(), func() capie2e.ScaleSpecInput {
			in := inputGetter()
			return capie2e.ScaleSpecInput{
				E2EConfig:                         e2e,
				ClusterctlConfigPath:              in.ClusterctlConfigPath,
				BootstrapClusterProxy:             proxy,
				ArtifactFolder:                    in.ArtifactFolder,
				SkipCleanup:                       in.SkipCleanup,
				InfrastructureProvider:            in.InfrastructureProvider,
				Flavor:                            ptr.To(deref(in.Flavor, "in-memory-scale")),
				ClusterClassName:                  cmp.Or(in.ClusterClassName, "in-memory"),
				ClusterCount:                      ptr.To(deref(in.ClusterCount, 10)),
				Concurrency:                       ptr.To(deref(in.Concurrency, 5)),
				ControlPlaneMachineCount:          ptr.To(deref(in.ControlPlaneMachineCount, 1)),
				MachineDeploymentCount:            ptr.To(deref(in.MachineDeploymentCount, 1)),
				WorkerPerMachineDeploymentCount:   ptr.To(deref(in.WorkerPerMachineDeploymentCount, 3)),
				AdditionalClusterClassCount:       ptr.To(deref(in.AdditionalClusterClassCount, 4)),
				DeployClusterInSeparateNamespaces: ptr.To(deref(in.DeployClusterInSeparateNamespaces, false)),
				UseCrossNamespaceClusterClass:     ptr.To(deref(in.UseCrossNamespaceClusterClass, false)),
				SkipUpgrade:                       in.SkipUpgrade,
				DumpResources:                     true,
				ExtensionServiceNamespace:         cmp.Or(in.ExtensionServiceNamespace, testExtensionNamespace),
				ExtensionServiceName:              cmp.Or(in.ExtensionServiceName, testExtensionService),
				PostNamespaceCreated:              in.PostNamespaceCreated,
			}
		})
	})
}

// testExtensionUpgradeTarget returns the version an in-memory cluster of
// the in-memory ClusterClass can be upgraded to when to is asked for. The
// class's upgrade plan comes from the test extension, which (v1.14.2,
// handlers/upgradeplan) plans only through known, the versions of kind's
// node-image mapper, and appends to itself only for a minor beyond the
// newest one known: asked for v1.37.2 when it knows v1.37.0, its plan ends
// at v1.37.0 and Cluster API rejects it ("control plane upgrade plan must
// end with version v1.37.2, ends with v1.37.0 instead"). So: to itself if
// known or of a newer minor, else the newest known release of to's minor.
// An in-memory cluster runs no image, so the patch release changes nothing
// of what the spec checks.
func testExtensionUpgradeTarget(to string, known []string) (string, error) {
	want, err := version.ParseSemantic(to)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", varKubernetesVersionUpgradeTo, to, err)
	}
	var newestMinor uint
	var best *version.Version
	for _, k := range known {
		v, err := version.ParseSemantic(k)
		if err != nil {
			return "", fmt.Errorf("a version the test extension knows, %q: %w", k, err)
		}
		newestMinor = max(newestMinor, v.Minor())
		if v.Major() != want.Major() || v.Minor() != want.Minor() {
			continue
		}
		if v.EqualTo(want) {
			return to, nil
		}
		if best == nil || v.GreaterThan(best) {
			best = v
		}
	}
	if want.Minor() > newestMinor {
		return to, nil
	}
	if best == nil {
		return "", fmt.Errorf("%s %s: the test extension's upgrade plan knows no v%d.%d release (it knows %s)", varKubernetesVersionUpgradeTo, to, want.Major(), want.Minor(), strings.Join(known, ", "))
	}
	return "v" + best.String(), nil
}

// minorOf returns "v<major>.<minor>" of version v, or v if it is not one.
func minorOf(v string) string {
	sv, err := version.ParseSemantic(v)
	if err != nil {
		return v
	}
	return fmt.Sprintf("v%d.%d", sv.Major(), sv.Minor())
}
