package specs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/snapshot"
	"github.com/capd-e2e/capd-e2e/framework/summary"
)

// clusterExists reports whether the Cluster object exists in the cluster
// that holds it now. It is false when it was never created or its holder is
// unknown.
func (r *run) clusterExists(ctx context.Context) bool {
	if r.mgmt == nil || !(r.namespaceCreated || r.adopted) {
		return false
	}
	err := r.mgmt.GetClient().Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, &clusterv1.Cluster{})
	return err == nil
}

// clusterCleanup collects everything worth keeping, then deletes the
// cluster. Collection is best effort; deletion failing fails the spec.
// The container snapshot and the machines' logs (this module's code,
// through the runtime) are taken while upstream's dumps read the API
// servers: the two share nothing.
func (r *run) clusterCleanup(ctx SpecContext) {
	exists := r.clusterExists(ctx)
	// A kept cluster that passed keeps its logs in its machines, which go
	// on running: they are collected only when the spec failed.
	collectLogs := !r.adopted || CurrentSpecReport().Failed()
	collected := map[string]bool{} // the containers whose logs were collected
	var containers sync.WaitGroup
	containers.Go(func() {
		// The snapshot first: it records the containers as the spec left
		// them, before the log collection.
		n := 0
		r.asyncStep("cleanup: container snapshot", func() error {
			s, err := snapshot.Take(ctx, r.in.Runtime, snapshot.Filter{Cluster: r.clusterName})
			n = len(s.Containers)
			if serr := s.Save(r.clusterDir()); serr != nil {
				err = errors.Join(err, serr)
			}
			var table strings.Builder
			_ = s.WriteTable(&table) // into a strings.Builder, which does not fail
			r.summary.SetSnapshot(summary.Snapshot{Path: filepath.Join("clusters", r.clusterName, snapshot.TableFile), Table: table.String(), Containers: summaryContainers(s)})
			return err
		})
		if n > 0 && collectLogs {
			r.asyncStep("cleanup: collect machine logs", func() error {
				return r.collector.CollectClusterExcept(ctx, r.clusterName, r.clusterDir(), collected)
			})
		}
	})
	if exists {
		r.tryStep("cleanup: describe cluster", func() error {
			framework.DescribeCluster(ctx, framework.DescribeClusterInput{
				ClusterctlConfigPath: r.in.ClusterctlConfigPath,
				LogFolder:            r.clusterDir(),
				KubeConfigPath:       r.mgmt.GetKubeconfigPath(),
				Namespace:            r.namespace,
				Name:                 r.clusterName,
			})
			return nil
		})
		r.tryStep("cleanup: record conditions", func() error {
			r.summary.SetObjects(r.conditions(ctx))
			return nil
		})
	}
	if (r.namespaceCreated || r.adopted) && r.mgmt != nil {
		r.tryStep("cleanup: dump management resources", func() error {
			framework.DumpAllResources(ctx, framework.DumpAllResourcesInput{
				Lister:               r.mgmt.GetClient(),
				KubeConfigPath:       r.mgmt.GetKubeconfigPath(),
				ClusterctlConfigPath: r.in.ClusterctlConfigPath,
				Namespace:            r.namespace,
				LogPath:              filepath.Join(r.bootstrapDir(), "resources"),
			})
			return nil
		})
	}
	if exists {
		r.tryStep("cleanup: dump workload pods and nodes", func() error {
			wl := r.mgmt.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
			defer wl.Dispose(ctx)
			// Upstream's dump retries for half a minute against an API
			// server that is not there yet (a spec that failed or was
			// interrupted before the control plane came up): ask once,
			// briefly, first.
			if err := apiServerAnswers(ctx, wl.GetRESTConfig()); err != nil {
				return fmt.Errorf("not dumped: the workload cluster's API server does not answer: %w", err)
			}
			framework.DumpResourcesForCluster(ctx, framework.DumpResourcesForClusterInput{
				Lister:  wl.GetClient(),
				LogPath: filepath.Join(r.clusterDir(), "resources"),
				Resources: []framework.DumpNamespaceAndGVK{
					{GVK: corev1.SchemeGroupVersion.WithKind("Pod")},
					{GVK: corev1.SchemeGroupVersion.WithKind("Node")},
				},
			})
			return nil
		})
	}
	containers.Wait()
	if exists && collectLogs {
		// CAPD goes on creating machines until the cluster is deleted: a
		// spec that failed or was interrupted while one was being provisioned
		// may find its container only now. Its logs would go with it.
		r.collectLateMachines(ctx, collected, false, "cleanup: collect logs of late machines")
	}

	if r.in.SkipCleanup || !exists || r.adopted {
		return
	}
	// Owner references and finalizers once more, as the deletion will find
	// them, unless the spec failed already. A failure fails the spec after
	// the deletion, which must happen whatever they are.
	var ownership error
	if r.created && !CurrentSpecReport().Failed() {
		By("cleanup: check owner references and finalizers before the deletion")
		done := r.summary.Phase("cleanup: check owner references and finalizers before the deletion")
		ownership = InterceptGomegaFailure(func() { r.checkOwnership(ctx, r.mgmt, r.topology) })
		done(ownership)
	}
	r.step("cleanup: delete cluster", func() {
		// CAPD may still create a machine's container while the cluster is
		// deleted (the Machines go last); catch its logs before it goes.
		defer r.catchLateMachines(ctx, collected)()
		for _, f := range r.beforeDelete {
			f(ctx)
		}
		c := r.mgmt.GetClient()
		cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: r.clusterName}}
		Expect(client.IgnoreNotFound(c.Delete(ctx, cluster))).To(Succeed(), "delete Cluster %s/%s", r.namespace, r.clusterName)
		if r.whileDeleting != nil {
			r.whileDeleting(ctx)
		}
		Expect(r.waitForClusterGone(ctx, watchClient(r.mgmt))).To(Succeed())
	})
	if r.in.CloudControllerManager != nil {
		r.step("cleanup: uninstall the cloud controller manager", func() {
			removed, err := r.in.CloudControllerManager.Uninstall(ctx, r.clusterName)
			Expect(err).ToNot(HaveOccurred())
			if len(removed) > 0 {
				// Services of type LoadBalancer the spec did not delete.
				r.summary.Set("load balancers removed with the cluster", strings.Join(removed, ", "))
			}
		})
	}
	Expect(ownership).ToNot(HaveOccurred(), "owner references and finalizers before the deletion")
}

// apiServerAnswerTimeout bounds the probe of apiServerAnswers.
const apiServerAnswerTimeout = 5 * time.Second

// apiServerAnswers asks the API server of cfg for its version, waiting at
// most apiServerAnswerTimeout.
func apiServerAnswers(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = apiServerAnswerTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, apiServerAnswerTimeout)
	defer cancel()
	_, err = cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	return err
}

// collectLateMachines collects the logs of the cluster's containers that
// appeared after the first collection (collected names those it covered;
// it is updated). With running, only running containers count (one that is
// only created has nothing to collect yet). It records a phase only when
// there are such containers. It does not assert, so it may run beside the
// spec's goroutine.
func (r *run) collectLateMachines(ctx context.Context, collected map[string]bool, running bool, phase string) {
	list, err := r.in.Runtime.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelCluster: r.clusterName}, Running: running})
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(GinkgoWriter, "%s: list the cluster's containers: %v\n", phase, err)
		}
		return
	}
	var late []string
	for _, c := range list {
		if !collected[c.Name] {
			late = append(late, c.Name)
		}
	}
	if len(late) == 0 {
		return
	}
	fmt.Fprintf(GinkgoWriter, "%s: %s\n", phase, strings.Join(late, ", "))
	r.asyncStep(phase, func() error {
		return r.collector.CollectClusterExcept(ctx, r.clusterName, r.clusterDir(), collected)
	})
}

// lateMachinePoll is how often the engine is asked for new containers of
// the cluster while it is deleted. The engine is local and the list
// filtered by label: cheap.
const lateMachinePoll = 500 * time.Millisecond

// catchLateMachines collects, while the cluster is deleted, the logs of
// containers that start meanwhile; the returned stop ends it and waits.
// A collection under way when stop is called runs to its end (its own
// timeout bounds it).
func (r *run) catchLateMachines(ctx context.Context, collected map[string]bool) (stop func()) {
	stopped := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lateMachinePoll)
		defer t.Stop()
		for {
			r.collectLateMachines(ctx, collected, true, "cleanup: collect logs of machines started during the deletion")
			select {
			case <-ctx.Done():
				return
			case <-stopped:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(stopped)
		<-done
	}
}

// finalCleanup deletes the namespace, stops the event watch and checks
// that no container of the cluster is left. It runs even when the cluster
// deletion failed, so that leftovers are always reported.
func (r *run) finalCleanup(ctx SpecContext) {
	defer func() {
		if r.cancelWatches != nil {
			r.cancelWatches()
		}
	}()
	defer func() {
		for _, f := range r.last {
			f(ctx)
		}
	}()
	if r.in.SkipCleanup || r.adopted {
		return
	}
	for _, f := range r.finally {
		f(ctx)
	}
	if r.namespaceCreated {
		r.tryStep("cleanup: delete namespace", func() error {
			framework.DeleteNamespace(ctx, framework.DeleteNamespaceInput{
				Deleter: r.in.BootstrapClusterProxy.GetClient(),
				Name:    r.namespace,
			})
			return nil
		})
	}
	r.step("cleanup: leak check", func() {
		Expect(checkLeaks(ctx, r.in.Runtime, r.clusterName)).To(Succeed())
	})
}

// checkLeaks returns an error naming what the clusters left in the engine
// once deleted, after removing it, so that one leak does not cascade into
// the next specs: the spec still fails, naming what was left.
func checkLeaks(ctx context.Context, rt Engine, clusters ...string) error {
	rep, err := leak.Check(ctx, rt, leak.Selector{Clusters: clusters})
	if err != nil {
		return err
	}
	if rep.Empty() {
		return nil
	}
	what := "cluster " + strings.Join(clusters, ", ")
	if len(clusters) > 1 {
		what = "clusters " + strings.Join(clusters, ", ")
	}
	if rerr := leak.Remove(ctx, rt, rep); rerr != nil {
		fmt.Fprintf(GinkgoWriter, "removing leftovers of %s: %v\n", what, rerr)
	}
	return fmt.Errorf("the deletion of %s left objects behind (now removed): %w", what, rep.Err())
}

// writeSummary records the spec's failure, if any, and writes the summary
// file. It runs last, whatever happened before.
func (r *run) writeSummary() {
	if rep := CurrentSpecReport(); rep.Failed() {
		r.summary.Fail(rep.Failure.Message, rep.Failure.Location.String())
	}
	if err := r.summary.Write(); err != nil {
		fmt.Fprintf(GinkgoWriter, "writing the spec summary: %v\n", err)
		return
	}
	fmt.Fprintf(GinkgoWriter, "spec summary: %s\n", filepath.Join(r.summary.Dir(), summary.TextFile))
}

// waitForClusterGone waits for the Cluster to be deleted (upstream:
// WaitForClusterDeleted).
func (r *run) waitForClusterGone(ctx context.Context, c client.WithWatch) error {
	return r.wait(c, "wait-delete-cluster", "Cluster "+r.clusterName+" deleted", &clusterv1.ClusterList{}).Until(ctx, func(ctx context.Context) (bool, string) {
		cluster := &clusterv1.Cluster{}
		err := c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, cluster)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, "phase " + cluster.Status.Phase
	})
}

// summaryContainers is the part of a snapshot a failure report shows.
func summaryContainers(s snapshot.Snapshot) []summary.Container {
	out := make([]summary.Container, 0, len(s.Containers))
	for _, c := range s.Containers {
		out = append(out, summary.Container{Name: c.Name, Role: c.Role, State: c.State, ExitCode: c.ExitCode, OOMKilled: c.OOMKilled, Error: c.Error})
	}
	return out
}
