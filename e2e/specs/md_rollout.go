package specs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// specMDRollout is the MachineDeployment rollout spec's name, and its
// facts.
var specMDRollout = declare(specFacts{
	name: "md-rollout", label: LabelMDRollout,
	variables: []string{varKubernetesVersion},
	waits: slices.Concat(
		// Creating its cluster; on an existing one, its health checked
		// first instead (fewer waits).
		creationWaits,
		// The new Machines with Nodes, the old MachineSets gone, the old
		// Nodes and containers gone; with a cloud-controller-manager,
		// every Node initialised.
		[]string{"wait-machine-rollout", "wait-machine-rollout", "wait-machine-rollout", "wait-nodes-ready"},
		healthWaits),
	files: []string{"md_rollout.go"},
})

// MachineDeploymentRolloutSpecInput is the input of
// MachineDeploymentRolloutSpec.
type MachineDeploymentRolloutSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of the spec's waits
	// at the config's intervals.
	Timeout time.Duration

	// Flavor is the template flavor of the cluster the spec creates. If
	// unset, "topology" (a Cluster of the ClusterClass quick-start, with a
	// MachineDeployment and a MachinePool).
	Flavor *string

	// ControlPlaneMachineCount is the number of control-plane machines of
	// the cluster the spec creates. If unset, 1.
	ControlPlaneMachineCount *int64

	// WorkerMachineCount is the number of worker machines of the cluster
	// the spec creates. If unset, 1.
	WorkerMachineCount *int64

	// ExistingCluster, if set, names a Cluster of the management cluster
	// that the spec rolls out instead of creating one (Flavor and the
	// machine counts are then unused): it checks the Cluster is healthy,
	// rolls it out, checks it again and leaves it running, with its new
	// Machines. It deletes nothing, checks no leaks and, when the spec
	// passes, collects no machine logs (the machines keep them). `make
	// iterate` runs the spec this way on the cluster `make up` kept. If
	// unset, the spec creates its cluster and deletes it.
	ExistingCluster *types.NamespacedName
}

// MachineDeploymentRolloutSpec rolls out every MachineDeployment of a
// workload cluster, as `clusterctl alpha rollout restart` does, by setting
// its rollout.after to now (a Cluster of a ClusterClass: its topology's,
// which the topology controller hands down). It checks that each
// MachineDeployment ends with only new Machines, as many as its replicas,
// each with a Node; that the old MachineSets, Machines, their Nodes and
// their containers are gone; with a CloudControllerManager, that it initialised
// the new Nodes; and that the Cluster is Available with every Machine
// Ready. Every controller takes part: Cluster API's core makes a
// MachineSet and Machines and drains and deletes the old ones, the kubeadm
// bootstrap provider a join configuration, CAPD the containers, the
// topology controller the rollout's trigger.
//
// It creates its cluster as the quick-start does, or works on an existing
// one (ExistingCluster): the check of a controller change on a cluster
// that is up already, with nothing to create first.
//
// Spec name: "md-rollout". Intervals: those of the quick-start's
// creation, wait-machine-rollout (the new Machines; the old MachineSets
// gone; the old Nodes and containers gone),
// and with a CloudControllerManager wait-nodes-ready.
// Variables: KUBERNETES_VERSION (only when it creates the cluster).
func MachineDeploymentRolloutSpec(inputGetter func() MachineDeploymentRolloutSpecInput) {
	It("rolls out every MachineDeployment: new Machines with Ready Nodes replace the old ones, whose Nodes and containers go",
		Label(LabelMDRollout),
		func(specCtx SpecContext) {
			in := inputGetter()
			var (
				r   *run
				ctx context.Context
			)
			if in.ExistingCluster != nil {
				r, ctx = adopt(specCtx, specMDRollout, in.CommonInput, in.Timeout, *in.ExistingCluster)
				r.verifyClusterHealthy(ctx, r.mgmt)
			} else {
				r, ctx = begin(specCtx, specMDRollout, in.CommonInput, in.Timeout)
				r.createCluster(ctx, createOptions{
					flavor:            deref(in.Flavor, "topology"),
					kubernetesVersion: r.variable(varKubernetesVersion),
					controlPlaneCount: deref(in.ControlPlaneMachineCount, 1),
					workerCount:       deref(in.WorkerMachineCount, 1),
				})
			}
			r.rollOutMachineDeployments(ctx)
			if in.CloudControllerManager != nil {
				wl := r.mgmt.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
				DeferCleanup(wl.Dispose)
				r.checkNodesInitialised(ctx, wl)
			}
			r.verifyClusterHealthy(ctx, r.mgmt)
		})
}

// mdRollout is one MachineDeployment's rollout: its replicas, and its
// Machines before it, with their Nodes.
type mdRollout struct {
	name     string
	replicas int32
	// old maps each Machine of the MachineDeployment before the rollout to
	// its Node.
	old map[string]string
	// oldSets are its MachineSets before the rollout.
	oldSets []string
}

// rollOutMachineDeployments rolls out every MachineDeployment of the
// cluster and waits for it to end (MachineDeploymentRolloutSpec).
func (r *run) rollOutMachineDeployments(ctx context.Context) {
	c := r.mgmt.GetClient()
	var rollouts []mdRollout
	r.step("record the MachineDeployments and their Machines", func() {
		mds := &clusterv1.MachineDeploymentList{}
		Expect(c.List(ctx, mds, client.InNamespace(r.namespace), r.clusterLabels())).To(Succeed())
		Expect(mds.Items).ToNot(BeEmpty(), "cluster %s/%s has no MachineDeployment to roll out", r.namespace, r.clusterName)
		for _, md := range mds.Items {
			ro := mdRollout{name: md.Name, replicas: ptr.Deref(md.Spec.Replicas, 0), old: map[string]string{}}
			Expect(ro.replicas).To(BeNumerically(">", 0), "MachineDeployment %s has no replicas: nothing to roll out", md.Name)
			machines := &clusterv1.MachineList{}
			Expect(c.List(ctx, machines, client.InNamespace(r.namespace), mdLabels(r.clusterName, md.Name))).To(Succeed())
			for _, m := range machines.Items {
				ro.old[m.Name] = m.Status.NodeRef.Name
			}
			sets := &clusterv1.MachineSetList{}
			Expect(c.List(ctx, sets, client.InNamespace(r.namespace), mdLabels(r.clusterName, md.Name))).To(Succeed())
			for _, ms := range sets.Items {
				ro.oldSets = append(ro.oldSets, ms.Name)
			}
			rollouts = append(rollouts, ro)
		}
		fmt.Fprintf(GinkgoWriter, "rolling out %s\n", describeRollouts(rollouts))
	})

	start := time.Now()
	r.step("set rollout.after on every MachineDeployment", func() {
		after := metav1.NewTime(start)
		cluster := &clusterv1.Cluster{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, cluster)).To(Succeed())
		if cluster.Spec.Topology.IsDefined() {
			// The topology controller owns its MachineDeployments' specs:
			// the rollout goes through the Cluster.
			patched := cluster.DeepCopy()
			for i := range patched.Spec.Topology.Workers.MachineDeployments {
				patched.Spec.Topology.Workers.MachineDeployments[i].Rollout.After = after
			}
			Expect(c.Patch(ctx, patched, client.MergeFrom(cluster))).To(Succeed(), "set rollout.after in the topology of Cluster %s", r.clusterName)
			return
		}
		for _, ro := range rollouts {
			md := &clusterv1.MachineDeployment{}
			Expect(c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: ro.name}, md)).To(Succeed())
			patched := md.DeepCopy()
			patched.Spec.Rollout.After = after
			Expect(c.Patch(ctx, patched, client.MergeFrom(md))).To(Succeed(), "set rollout.after on MachineDeployment %s", ro.name)
		}
	})

	wc := watchClient(r.mgmt)
	r.step("wait for new Machines with Nodes to replace the old ones", func() {
		err := r.wait(wc, "wait-machine-rollout", "the MachineDeployments of "+r.clusterName+" rolled out", &clusterv1.MachineList{}, r.clusterLabels()).Until(ctx, func(ctx context.Context) (bool, string) {
			var missing []string
			for _, ro := range rollouts {
				machines := &clusterv1.MachineList{}
				if err := wc.List(ctx, machines, client.InNamespace(r.namespace), mdLabels(r.clusterName, ro.name)); err != nil {
					return false, err.Error()
				}
				if m := rolledOut(ro, machines.Items); m != "" {
					missing = append(missing, m)
				}
			}
			return len(missing) == 0, strings.Join(missing, "; ")
		})
		Expect(err).ToNot(HaveOccurred())
	})
	took := time.Since(start)

	r.step("wait for the old MachineSets to be deleted", func() {
		// The MachineDeployment deletes a MachineSet it scaled to zero;
		// until it is gone its finalizers are being removed, and the
		// rollout is not over.
		err := r.wait(wc, "wait-machine-rollout", "the old MachineSets of "+r.clusterName+" deleted", &clusterv1.MachineSetList{}, r.clusterLabels()).Until(ctx, func(ctx context.Context) (bool, string) {
			var left []string
			for _, ro := range rollouts {
				for _, name := range ro.oldSets {
					err := wc.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, &clusterv1.MachineSet{})
					switch {
					case err == nil:
						left = append(left, name)
					case !apierrors.IsNotFound(err):
						return false, err.Error()
					}
				}
			}
			return len(left) == 0, "MachineSets " + strings.Join(left, ", ") + " still there"
		})
		Expect(err).ToNot(HaveOccurred())
	})

	r.step("check the old Machines' Nodes and containers are gone", func() {
		wl := r.mgmt.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
		defer wl.Dispose(ctx)
		nodes := watchClient(wl)
		err := r.wait(nodes, "wait-machine-rollout", "the old Nodes and containers of "+r.clusterName+" gone", &corev1.NodeList{}).Until(ctx, func(ctx context.Context) (bool, string) {
			var left []string
			for _, ro := range rollouts {
				for _, machine := range slices.Sorted(maps.Keys(ro.old)) {
					if node := ro.old[machine]; node != "" {
						err := nodes.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
						switch {
						case err == nil:
							left = append(left, "Node "+node)
						case !apierrors.IsNotFound(err):
							return false, err.Error()
						}
					}
					name := logs.ContainerName(r.clusterName, machine)
					_, err := r.in.Runtime.InspectContainer(ctx, name)
					switch {
					case err == nil:
						left = append(left, "container "+name)
					case !errors.Is(err, runtime.ErrNotFound):
						return false, err.Error()
					}
				}
			}
			return len(left) == 0, strings.Join(left, ", ") + " still there"
		})
		Expect(err).ToNot(HaveOccurred())
	})
	r.summary.Set("rollout", fmt.Sprintf("%s: new Machines with Nodes after %s", describeRollouts(rollouts), took.Round(100*time.Millisecond)))
}

// rolledOut says what is missing for ro's rollout to be over, given the
// MachineDeployment's Machines now; "" when it is: as many Machines as its
// replicas, none of them an old one, each with a Node.
func rolledOut(ro mdRollout, machines []clusterv1.Machine) string {
	var old, noNode []string
	for _, m := range machines {
		if _, ok := ro.old[m.Name]; ok {
			old = append(old, m.Name)
			continue
		}
		if !m.Status.NodeRef.IsDefined() {
			noNode = append(noNode, m.Name)
		}
	}
	fresh := len(machines) - len(old)
	if len(old) == 0 && len(noNode) == 0 && int32(fresh) == ro.replicas {
		return ""
	}
	s := fmt.Sprintf("%s: %d new Machines of %d", ro.name, fresh, ro.replicas)
	if len(noNode) > 0 {
		slices.Sort(noNode)
		s += ", without a Node: " + strings.Join(noNode, ", ")
	}
	if len(old) > 0 {
		slices.Sort(old)
		s += ", old ones left: " + strings.Join(old, ", ")
	}
	return s
}

// describeRollouts is rollouts for the log and the summary:
// "md-x (1 replicas: machine-a)".
func describeRollouts(rollouts []mdRollout) string {
	var out []string
	for _, ro := range rollouts {
		out = append(out, fmt.Sprintf("%s (%d replicas: %s)", ro.name, ro.replicas, strings.Join(slices.Sorted(maps.Keys(ro.old)), ", ")))
	}
	return strings.Join(out, "; ")
}

// mdLabels selects the Machines of a MachineDeployment of cluster.
func mdLabels(cluster, md string) client.MatchingLabels {
	return client.MatchingLabels{clusterv1.ClusterNameLabel: cluster, clusterv1.MachineDeploymentNameLabel: md}
}
