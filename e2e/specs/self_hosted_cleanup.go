package specs

import (
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

// moveBack runs before the common cleanup: it collects the self-hosted
// cluster's view, then moves the objects back to the bootstrap cluster, so
// that the common cleanup deletes the cluster from there. If the move back
// fails, the Cluster is left where it is (deleting it from inside itself
// would pull the floor from under its own controllers): the common cleanup
// then skips the deletion, and the leak check removes the containers and
// fails the spec.
func (s *selfHostedRun) moveBack(ctx SpecContext) {
	holder := s.proxy
	if !s.moved {
		// The move failed part way: the Cluster is wherever clusterctl left
		// it. Nothing to do if it is still in the bootstrap cluster.
		s.mgmt = s.in.BootstrapClusterProxy
		if s.clusterExists(ctx) {
			return
		}
		s.mgmt = s.proxy
		if !s.clusterExists(ctx) {
			s.mgmt = s.in.BootstrapClusterProxy
			return
		}
	}
	if s.in.PreCleanupSelfHostedCluster != nil {
		s.tryStep("cleanup: pre-cleanup hook on the self-hosted cluster", func() error {
			s.in.PreCleanupSelfHostedCluster(s.proxy)
			return nil
		})
	}
	s.tryStep("cleanup: dump the self-hosted cluster's resources", func() error {
		framework.DumpAllResources(ctx, framework.DumpAllResourcesInput{
			Lister:               s.proxy.GetClient(),
			KubeConfigPath:       s.proxy.GetKubeconfigPath(),
			ClusterctlConfigPath: s.in.ClusterctlConfigPath,
			Namespace:            s.namespace,
			LogPath:              filepath.Join(s.clusterDir(), "resources-self-hosted"),
		})
		return nil
	})

	s.mgmt = nil // unknown until the move back is done
	s.step("cleanup: clusterctl move back to the bootstrap cluster", func() {
		cluster := &clusterv1.Cluster{}
		Expect(holder.GetClient().Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.clusterName}, cluster)).To(Succeed())
		framework.WaitForClusterMachineNodeRefs(ctx, framework.WaitForClusterMachineNodeRefsInput{
			GetLister: holder.GetClient(), Cluster: cluster,
		}, s.intervals("wait-worker-nodes")...)
		clusterctl.Move(ctx, clusterctl.MoveInput{
			LogFolder:            s.clusterDir(),
			ClusterctlConfigPath: s.in.ClusterctlConfigPath,
			FromKubeconfigPath:   holder.GetKubeconfigPath(),
			ToKubeconfigPath:     s.in.BootstrapClusterProxy.GetKubeconfigPath(),
			Namespace:            s.namespace,
		})
		s.mgmt = s.in.BootstrapClusterProxy
		s.moved = false
		framework.DiscoveryAndWaitForCluster(ctx, framework.DiscoveryAndWaitForClusterInput{
			Getter: s.mgmt.GetClient(), Namespace: s.namespace, Name: s.clusterName,
		}, s.intervals("wait-cluster")...)
	})
}

// dispose stops the self-hosted cluster's watches and releases its proxy.
// It runs after the move back, before the common cleanup.
func (s *selfHostedRun) dispose(ctx SpecContext) {
	if s.cancelWatches != nil {
		s.cancelWatches()
	}
	if s.proxy != nil {
		s.proxy.Dispose(ctx)
	}
}
