package specs

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capie2e "sigs.k8s.io/cluster-api/test/e2e"
	"sigs.k8s.io/cluster-api/test/framework"
)

// specKCPInfraAdoption is upstream's KCPInfraAdoptionSpec
// (kcp-infra-adoption), and its facts.
var specKCPInfraAdoption = declare(specFacts{
	name: "kcp-infra-adoption", label: LabelKCPInfraAdoption,
	variables: []string{varKubernetesVersion},
	// Upstream's: the cluster, its control plane, its workers (none); the
	// rollout after the adoption, and the control plane available after
	// it.
	waits:    []string{"wait-cluster", "wait-control-plane", "wait-worker-nodes", "wait-control-plane", "wait-control-plane"},
	files:    []string{"kcp_infra_adoption.go", "upstream.go"},
	upstream: "e2e/kcp_infra_adoption.go",
})

// KCPInfraAdoptionSpecInput is the input of KCPInfraAdoptionSpec.
type KCPInfraAdoptionSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor, of a ClusterClass with a
	// KubeadmControlPlane. If unset, "topology" (upstream's default).
	Flavor *string
	// ControlPlaneMachineCount sizes the control plane. If unset, 1.
	ControlPlaneMachineCount *int64
	// SkipRollout skips the control plane rollout after the adoption.
	SkipRollout bool
}

// KCPInfraAdoptionSpec is upstream's KCPInfraAdoptionSpec
// (sigs.k8s.io/cluster-api/test/e2e), called as it is in capd-e2e's
// environment: a Cluster of a ClusterClass is paused, then all its Cluster
// API objects are force-deleted, leaving its machines' containers running;
// the Cluster is created again with a paused control plane, its control
// plane Machines (and their bootstrap and infrastructure objects) too, and
// the new KubeadmControlPlane must adopt them without replacing one, then
// roll them out. Labelled kcp-infra-adoption; a suite adds ClusterClass.
//
// Upstream's input for it takes no control plane waiters (upstream.go),
// so capd-e2e hooks in where it can: the cluster gets a known name, which
// is tracked for the leak check before it is created, and, while the spec
// runs, the cloud-controller-manager is installed for each Cluster of
// that name that appears: for the one the spec creates and for the one it
// creates again (the manager, owned by the first, is deleted with it). A
// leak check and the load balancers' removal follow upstream's cleanup.
//
// CommonInput's ClusterctlVariables and CleanupTimeout are not used, and
// Ginkgo cannot cancel its steps (see MachineDeploymentScaleSpec).
func KCPInfraAdoptionSpec(inputGetter func() KCPInfraAdoptionSpecInput) {
	Context("kcp-infra-adoption", Label(LabelKCPInfraAdoption), func() {
		capie2e.KCPInfraAdoptionSpec(context.Background(), func() capie2e.KCPInfraAdoptionSpecInput {
			in := inputGetter()
			cluster := specKCPInfraAdoption + "-" + rand.String(6)
			return capie2e.KCPInfraAdoptionSpecInput{
				E2EConfig:                in.E2EConfig,
				ClusterctlConfigPath:     in.ClusterctlConfigPath,
				BootstrapClusterProxy:    in.BootstrapClusterProxy,
				ArtifactFolder:           in.ArtifactFolder,
				SkipCleanup:              in.SkipCleanup,
				InfrastructureProvider:   in.InfrastructureProvider,
				ClusterName:              ptr.To(cluster),
				Flavor:                   ptr.To(deref(in.Flavor, "topology")),
				ControlPlaneMachineCount: in.ControlPlaneMachineCount,
				SkipRollout:              in.SkipRollout,
				PostNamespaceCreated: func(proxy framework.ClusterProxy, namespace string) {
					followCluster(in.CommonInput, specKCPInfraAdoption, proxy, namespace, cluster)
					if in.PostNamespaceCreated != nil {
						in.PostNamespaceCreated(proxy, namespace)
					}
				},
			}
		})
	})
}

// followCluster does for a cluster of an upstream spec that takes no
// control plane waiters what upstreamWaiters does: records it (before it
// exists), registers the cleanup that follows upstream's, and, until the
// spec's cleanup begins, installs the cloud-controller-manager for every
// Cluster of that name it has not been installed for (a new UID).
func followCluster(in CommonInput, spec string, proxy framework.ClusterProxy, namespace, cluster string) {
	trackUpstreamCluster(context.Background(), in, cluster)
	if in.CloudControllerManager == nil {
		return
	}
	poll := 10 * time.Second
	if iv := in.E2EConfig.GetIntervals(spec, "wait-cluster"); len(iv) == 2 {
		if s, ok := iv[1].(string); ok {
			d, err := time.ParseDuration(s)
			Expect(err).ToNot(HaveOccurred(), "the poll of %s/wait-cluster", spec)
			poll = d
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		installForEachCluster(ctx, in.CloudControllerManager, proxy.GetClient(), namespace, cluster, poll)
	}()
	// Registered after the leak check's cleanup, so run before it.
	DeferCleanup(func() { cancel(); <-done })
}

// installForEachCluster installs m for the Cluster namespace/cluster each
// time one exists, not being deleted, with a UID it has not been installed
// for; it returns when ctx ends. A failed install is logged and retried.
func installForEachCluster(ctx context.Context, m CloudControllerManager, c client.Client, namespace, cluster string, poll time.Duration) {
	var installed types.UID
	// Returns only when ctx ends (the condition never is true): its error is
	// that ctx ended, which is how the spec stops it.
	_ = wait.PollUntilContextCancel(ctx, poll, true, func(ctx context.Context) (bool, error) {
		cl := &clusterv1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster}, cl); err != nil || cl.UID == installed || !cl.DeletionTimestamp.IsZero() {
			return false, nil
		}
		if err := m.Install(ctx, c, namespace, cluster); err != nil {
			fmt.Fprintf(GinkgoWriter, "install the cloud controller manager of %s (Cluster %s), will retry: %v\n", cluster, cl.UID, err)
			return false, nil
		}
		fmt.Fprintf(GinkgoWriter, "installed the cloud controller manager of %s (Cluster %s)\n", cluster, cl.UID)
		installed = cl.UID
		return false, nil
	})
}
