package specs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// The machine-health-check spec's steps: pick the Machine, break it, and
// follow its remediation to a new Machine with a new Node.

// mhcRun is the state of one machine-health-check spec run.
type mhcRun struct {
	*run
	mode    RemediationMode
	fault   Fault
	cluster *clusterv1.Cluster

	mhc *clusterv1.MachineHealthCheck
	// before are the names of the Machines the MachineHealthCheck selected
	// before the fault.
	before []string
	// target is the Machine made unhealthy; its node and container names
	// are kept to check they are gone.
	target    clusterv1.Machine
	node      string
	container string
	// faultAt is when the fault was injected.
	faultAt time.Time
}

// selected lists the Machines of the mode that the MachineHealthCheck
// selects, sorted by name.
func (m *mhcRun) selected(ctx context.Context) []clusterv1.Machine {
	machines := framework.GetMachinesByMachineHealthCheck(ctx, framework.GetMachinesByMachineHealthCheckInput{
		Lister: m.mgmt.GetClient(), ClusterName: m.clusterName, MachineHealthCheck: m.mhc,
	})
	machines = slices.DeleteFunc(machines, func(mc clusterv1.Machine) bool {
		_, cp := mc.Labels[clusterv1.MachineControlPlaneLabel]
		return cp != (m.mode == ControlPlaneRemediation)
	})
	slices.SortFunc(machines, func(a, b clusterv1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return machines
}

func (m *mhcRun) pickTarget(ctx context.Context) {
	m.step("pick a Machine watched by the MachineHealthCheck", func() {
		mhcs := framework.GetMachineHealthChecksForCluster(ctx, framework.GetMachineHealthChecksForClusterInput{
			Lister: m.mgmt.GetClient(), ClusterName: m.clusterName, Namespace: m.namespace,
		})
		Expect(mhcs).ToNot(BeEmpty(), "the template must include a MachineHealthCheck for the cluster")
		for _, mhc := range mhcs {
			m.mhc = mhc
			if machines := m.selected(ctx); len(machines) > 0 {
				break
			}
		}
		machines := m.selected(ctx)
		Expect(machines).ToNot(BeEmpty(), "no MachineHealthCheck of the cluster selects a %s Machine", m.mode)
		for _, mc := range machines {
			m.before = append(m.before, mc.Name)
		}
		m.target = machines[0]
		Expect(m.target.Status.NodeRef.IsDefined()).To(BeTrue(), "Machine %s has no Node", m.target.Name)
		m.node = m.target.Status.NodeRef.Name
		m.container = logs.ContainerName(m.clusterName, m.target.Name)
		m.summary.Set("unhealthy machine", fmt.Sprintf("%s (uid %s, node %s, container %s)", m.target.Name, m.target.UID, m.node, m.container))
		fmt.Fprintf(GinkgoWriter, "MachineHealthCheck %s selects %v; breaking %s\n", m.mhc.Name, m.before, m.target.Name)
	})
}

func (m *mhcRun) injectFault(ctx context.Context) {
	m.step(fmt.Sprintf("make Machine unhealthy (%s)", m.fault), func() {
		m.faultAt = time.Now()
		switch m.fault {
		case FaultRemoveContainer:
			// The instance is terminated: the machine and its disk are gone.
			Expect(m.in.Runtime.RemoveContainer(ctx, m.container)).To(Succeed())
		case FaultStopContainer:
			// No grace period: the machine dies as if it lost power.
			Expect(m.in.Runtime.Stop(ctx, m.container, 0)).To(Succeed())
		case FaultDisconnectNetwork:
			d, err := m.in.Runtime.InspectContainer(ctx, m.container)
			Expect(err).ToNot(HaveOccurred())
			Expect(d.Networks).ToNot(BeEmpty(), "container %s is attached to no network", m.container)
			for network := range d.Networks {
				Expect(m.in.Runtime.DisconnectNetwork(ctx, network, m.container)).To(Succeed())
			}
		case FaultNodeCondition:
			var cond *clusterv1.UnhealthyNodeCondition
			for i, c := range m.mhc.Spec.Checks.UnhealthyNodeConditions {
				if c.Type != corev1.NodeReady {
					cond = &m.mhc.Spec.Checks.UnhealthyNodeConditions[i]
					break
				}
			}
			Expect(cond).ToNot(BeNil(), "MachineHealthCheck %s watches no Node condition but Ready: nothing for %s to set", m.mhc.Name, FaultNodeCondition)
			framework.PatchNodeCondition(ctx, framework.PatchNodeConditionInput{
				ClusterProxy: m.mgmt,
				Cluster:      m.cluster,
				Machine:      m.target,
				NodeCondition: corev1.NodeCondition{
					Type: cond.Type, Status: cond.Status, LastTransitionTime: metav1.Now(),
					Reason: "CAPDE2E", Message: "set by capd-e2e's machine-health-check spec",
				},
			})
		}
	})
}

// waitCloudControllerManager checks, with a cloud controller manager, what
// its node-lifecycle controller does to the broken machine's Node: a
// terminated instance's Node is deleted, a stopped one's is tainted as
// shut down once the Node is NotReady (after kube-controller-manager's
// node-monitor-grace-period). The times go to the summary.
func (m *mhcRun) waitCloudControllerManager(ctx context.Context) {
	if m.in.CloudControllerManager == nil {
		return
	}
	switch m.fault {
	case FaultRemoveContainer:
		m.step("wait for the cloud controller manager to delete the terminated machine's Node", func() {
			wl := m.mgmt.GetWorkloadCluster(ctx, m.namespace, m.clusterName)
			defer wl.Dispose(ctx)
			d := m.waitNodeDeleted(ctx, wl, m.node, m.faultAt)
			m.summary.Set("node deleted after", d.Round(time.Second).String()+" (container removed out of band)")
		})
	case FaultStopContainer:
		m.step("wait for the cloud controller manager to taint the stopped machine's Node as shut down", func() {
			wl := m.mgmt.GetWorkloadCluster(ctx, m.namespace, m.clusterName)
			defer wl.Dispose(ctx)
			d := m.waitNodeTaint(ctx, wl, m.node, m.faultAt)
			m.summary.Set("shutdown taint after", d.Round(time.Second).String()+" (container stopped)")
		})
	}
}

// waitUnhealthy waits for the MachineHealthCheck to mark the Machine
// unhealthy (or for the Machine to be gone already: remediation may be
// quicker than a poll).
func (m *mhcRun) waitUnhealthy(ctx context.Context) {
	m.step("wait for the MachineHealthCheck to mark the Machine unhealthy", func() {
		err := m.waitTarget(ctx, watchClient(m.mgmt), "marked unhealthy", func(mc *clusterv1.Machine) (bool, string) {
			unhealthy := slices.ContainsFunc(mc.Status.Conditions, func(c metav1.Condition) bool {
				return c.Type == clusterv1.MachineHealthCheckSucceededCondition && c.Status == metav1.ConditionFalse
			})
			return unhealthy, "Machine " + mc.Name + " is not marked unhealthy"
		})
		Expect(err).ToNot(HaveOccurred())
	})
}

// waitTarget waits, watching the cluster's Machines, until the unhealthy
// Machine is gone (not found, or a Machine of the same name made since) or
// cond holds for it.
func (m *mhcRun) waitTarget(ctx context.Context, c client.WithWatch, what string, cond func(*clusterv1.Machine) (bool, string)) error {
	return m.wait(c, "wait-machine-remediation", "Machine "+m.target.Name+" "+what, &clusterv1.MachineList{}, m.clusterLabels()).
		Until(ctx, func(ctx context.Context) (bool, string) {
			mc := &clusterv1.Machine{}
			err := c.Get(ctx, client.ObjectKeyFromObject(&m.target), mc)
			if apierrors.IsNotFound(err) || (err == nil && mc.UID != m.target.UID) {
				return true, ""
			}
			if err != nil {
				return false, err.Error()
			}
			return cond(mc)
		})
}

func (m *mhcRun) waitDeleted(ctx context.Context) {
	m.step("wait for the unhealthy Machine, its Node and its container to be gone", func() {
		timeout, poll := m.durations("wait-machine-remediation")
		err := m.waitTarget(ctx, watchClient(m.mgmt), "gone", func(mc *clusterv1.Machine) (bool, string) {
			return false, fmt.Sprintf("Machine %s still exists (deleting: %t)", mc.Name, !mc.DeletionTimestamp.IsZero())
		})
		Expect(err).ToNot(HaveOccurred())

		wl := m.mgmt.GetWorkloadCluster(ctx, m.namespace, m.clusterName)
		defer wl.Dispose(ctx)
		m.waitNodeDeleted(ctx, wl, m.node, time.Now())

		// CAPD removes the container before the Machine goes; anything
		// else is a leak of the real provider's kind.
		Eventually(ctx, func() error {
			_, err := m.in.Runtime.InspectContainer(ctx, m.container)
			if errors.Is(err, runtime.ErrNotFound) {
				return nil
			}
			if err == nil {
				return fmt.Errorf("container %s still exists", m.container)
			}
			return err
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	})
}

func (m *mhcRun) waitReplaced(ctx context.Context) {
	m.step("wait for a new Machine with a new, Ready Node", func() {
		wl := m.mgmt.GetWorkloadCluster(ctx, m.namespace, m.clusterName)
		defer wl.Dispose(ctx)
		var replacement clusterv1.Machine
		err := m.wait(watchClient(m.mgmt), "wait-machine-remediation", "a new Machine with a Node replacing "+m.target.Name, &clusterv1.MachineList{}, m.clusterLabels()).
			Until(ctx, func(ctx context.Context) (bool, string) {
				machines := m.selected(ctx)
				if len(machines) != len(m.before) {
					return false, fmt.Sprintf("the MachineHealthCheck selects %d Machines, not %d as before", len(machines), len(m.before))
				}
				var fresh []clusterv1.Machine
				for _, mc := range machines {
					if mc.UID == m.target.UID {
						return false, "the unhealthy Machine is still there"
					}
					if !slices.Contains(m.before, mc.Name) {
						fresh = append(fresh, mc)
					}
				}
				if len(fresh) != 1 {
					return false, fmt.Sprintf("%d new Machines, want exactly 1", len(fresh))
				}
				replacement = fresh[0]
				return replacement.Status.NodeRef.IsDefined(), "new Machine " + replacement.Name + " has no Node yet"
			})
		Expect(err).ToNot(HaveOccurred())
		wc := watchClient(wl)
		node := replacement.Status.NodeRef.Name
		err = m.wait(wc, "wait-machine-remediation", "Node "+node+" Ready", &corev1.NodeList{}).
			Until(ctx, func(ctx context.Context) (bool, string) {
				n := &corev1.Node{}
				if err := wc.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
					return false, err.Error()
				}
				return nodeReady(*n), "Node " + node + " is not Ready"
			})
		Expect(err).ToNot(HaveOccurred())

		Expect(replacement.Name).ToNot(Equal(m.target.Name))
		Expect(replacement.UID).ToNot(Equal(m.target.UID))
		Expect(replacement.Status.NodeRef.Name).ToNot(Equal(m.node), "the new Machine must have a new Node")
		m.summary.Set("replacement machine", fmt.Sprintf("%s (uid %s, node %s)", replacement.Name, replacement.UID, replacement.Status.NodeRef.Name))
		fmt.Fprintf(GinkgoWriter, "Machine %s (node %s) replaced by %s (node %s) at %s\n",
			m.target.Name, m.node, replacement.Name, replacement.Status.NodeRef.Name, time.Now().UTC().Format(time.RFC3339))
	})
}

// waitNodeTaint waits for the cloud-node-lifecycle controller to taint a
// stopped machine's Node as shut down, and returns how long it took from
// since.
func (r *run) waitNodeTaint(ctx context.Context, wl framework.ClusterProxy, node string, since time.Time) time.Duration {
	c := watchClient(wl)
	err := r.wait(c, "wait-machine-remediation", "the shutdown taint on Node "+node, &corev1.NodeList{}).
		Until(ctx, func(ctx context.Context) (bool, string) {
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return apierrors.IsNotFound(err), err.Error() // gone already: remediation was quicker
			}
			return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == taintShutdown }), fmt.Sprintf("%d taints", len(n.Spec.Taints))
		})
	Expect(err).ToNot(HaveOccurred())
	return time.Since(since)
}

// waitNodeDeleted waits for the cloud-node-lifecycle controller to delete
// the Node of a machine whose container is gone, and returns how long it
// took from since.
func (r *run) waitNodeDeleted(ctx context.Context, wl framework.ClusterProxy, node string, since time.Time) time.Duration {
	c := watchClient(wl)
	err := r.wait(c, "wait-machine-remediation", "Node "+node+" deleted", &corev1.NodeList{}).
		Until(ctx, func(ctx context.Context) (bool, string) {
			err := c.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
			if apierrors.IsNotFound(err) {
				return true, ""
			}
			if err != nil {
				return false, err.Error()
			}
			return false, "Node " + node + " exists"
		})
	Expect(err).ToNot(HaveOccurred())
	return time.Since(since)
}
