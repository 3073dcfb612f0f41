package specs

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

// The remediation specs' names, and their facts.
var (
	specMDRemediation = declare(specFacts{
		name: "md-remediation", label: LabelRemediation,
		variables: []string{varKubernetesVersion},
		waits:     remediationWaits,
		files:     []string{"machine_health_check.go"},
	})
	specKCPRemediation = declare(specFacts{
		name: "kcp-remediation", label: LabelRemediation,
		variables: []string{varKubernetesVersion},
		waits:     remediationWaits,
		files:     []string{"machine_health_check.go"},
	})
)

// RemediationMode says which Machines the machine-health-check spec breaks.
type RemediationMode string

const (
	// WorkerRemediation breaks a MachineDeployment's Machine; its
	// MachineSet replaces it.
	WorkerRemediation RemediationMode = "worker"
	// ControlPlaneRemediation breaks one of three control-plane Machines;
	// the KubeadmControlPlane replaces it without losing etcd quorum.
	ControlPlaneRemediation RemediationMode = "control-plane"
)

// Fault is how the machine-health-check spec makes a Machine unhealthy.
type Fault string

const (
	// FaultStopContainer stops the machine's container at once (no grace
	// period), as a machine that loses power: the kubelet stops reporting
	// and the node controller turns the Node Ready=Unknown after its grace
	// period. This is what a real provider's machine failure looks like.
	FaultStopContainer Fault = "stop-container"
	// FaultDisconnectNetwork cuts the machine's container off every network
	// it is attached to: the machine keeps running but nobody hears from
	// it, so the Node turns Ready=Unknown as above.
	FaultDisconnectNetwork Fault = "disconnect-network"
	// FaultRemoveContainer removes the machine's container, as a cloud
	// instance terminated out of band. With a cloud controller manager,
	// its node-lifecycle controller deletes the Node (the instance is
	// gone), and the MachineHealthCheck remediates the Machine whose Node
	// went; without one, the Node turns Ready=Unknown as above.
	FaultRemoveContainer Fault = "remove-container"
	// FaultNodeCondition sets the first non-Ready condition the
	// MachineHealthCheck watches (e2e.remediation.condition in our
	// templates) to its unhealthy status on the Node, as upstream's
	// md-remediation spec does. It is faster (no grace period) but the
	// machine itself stays healthy.
	FaultNodeCondition Fault = "node-condition"
)

// MachineHealthCheckSpecInput is the input of MachineHealthCheckSpec.
type MachineHealthCheckSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of the spec's waits
	// at the config's intervals (see Intervals below): each wait is bounded
	// by its interval already, so this is a backstop.
	Timeout time.Duration

	// Mode says which Machines are broken. If unset, WorkerRemediation.
	Mode RemediationMode

	// Fault is how the Machine is made unhealthy. If unset,
	// FaultStopContainer.
	Fault Fault

	// Flavor is the cluster template flavor; it must include a
	// MachineHealthCheck that selects the Machines of Mode. If unset,
	// "md-remediation" for workers, "kcp-remediation" for the control
	// plane.
	Flavor *string

	// ControlPlaneMachineCount is the number of control-plane machines. If
	// unset, 1 for workers, 3 for the control plane (the fewest with which
	// the KubeadmControlPlane remediates).
	ControlPlaneMachineCount *int64

	// WorkerMachineCount is the number of worker machines. If unset, 1 for
	// workers, 0 for the control plane.
	WorkerMachineCount *int64

	// ControlPlaneWaiters replace the waits for the control plane at
	// creation, as upstream's. If unset, the KubeadmControlPlane waits.
	ControlPlaneWaiters clusterctl.ControlPlaneWaiters

	// PostMachinesProvisioned is called once the cluster is created, before
	// the fault. If unset, nothing is called.
	PostMachinesProvisioned func(managementClusterProxy framework.ClusterProxy, workloadClusterNamespace, workloadClusterName string)
}

// MachineHealthCheckSpec creates a cluster with a MachineHealthCheck, makes
// one of the Machines it watches unhealthy (by default for real: its
// container is stopped through the runtime), and checks the whole
// remediation: the Machine is marked unhealthy, it is deleted, its Node and
// container are gone, and a new Machine (different name and UID) with a new,
// Ready Node takes its place; the Cluster is Available again at the end.
// Upstream's md-remediation spec only waited for the Machine count to be
// back, which a Machine that was never replaced also satisfies.
//
// Spec name: "md-remediation" (WorkerRemediation) or "kcp-remediation"
// (ControlPlaneRemediation), as upstream's. Intervals: those of the
// quick-start, plus wait-machine-remediation (each of: marked unhealthy,
// deleted, replaced).
func MachineHealthCheckSpec(inputGetter func() MachineHealthCheckSpecInput) {
	It("replaces an unhealthy Machine with a new Machine and a new Node",
		Label(LabelRemediation),
		func(specCtx SpecContext) {
			in := inputGetter()
			mode := in.Mode
			if mode == "" {
				mode = WorkerRemediation
			}
			fault := in.Fault
			if fault == "" {
				fault = FaultStopContainer
			}
			spec, flavor, cp, workers := specMDRemediation, "md-remediation", int64(1), int64(1)
			switch mode {
			case WorkerRemediation:
			case ControlPlaneRemediation:
				spec, flavor, cp, workers = specKCPRemediation, "kcp-remediation", 3, 0
			default:
				Fail(fmt.Sprintf("MachineHealthCheckSpec: unknown Mode %q", mode))
			}
			Expect([]Fault{FaultStopContainer, FaultDisconnectNetwork, FaultRemoveContainer, FaultNodeCondition}).To(ContainElement(fault), "MachineHealthCheckSpec: unknown Fault")

			r, ctx := begin(specCtx, spec, in.CommonInput, in.Timeout)
			r.summary.Set("mode", string(mode))
			r.summary.Set("fault", string(fault))
			res := r.createCluster(ctx, createOptions{
				flavor:                  deref(in.Flavor, flavor),
				kubernetesVersion:       r.variable(varKubernetesVersion),
				controlPlaneCount:       deref(in.ControlPlaneMachineCount, cp),
				workerCount:             deref(in.WorkerMachineCount, workers),
				waiters:                 in.ControlPlaneWaiters,
				postMachinesProvisioned: in.PostMachinesProvisioned,
			})
			m := &mhcRun{run: r, mode: mode, fault: fault, cluster: res.Cluster}
			m.pickTarget(ctx)
			m.injectFault(ctx)
			m.waitCloudControllerManager(ctx)
			m.waitUnhealthy(ctx)
			m.waitDeleted(ctx)
			m.waitReplaced(ctx)
			r.verifyClusterHealthy(ctx, r.in.BootstrapClusterProxy)
		})
}
