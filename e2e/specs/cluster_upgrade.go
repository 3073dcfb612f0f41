package specs

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

// ClusterUpgradeSpecInput is the input of ClusterUpgradeSpec.
type ClusterUpgradeSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of the spec's waits
	// at the config's intervals (see Intervals below): each wait is bounded
	// by its interval already, so this is a backstop.
	Timeout time.Duration

	// Flavor is the cluster template flavor. If unset, "upgrades"
	// (cluster-template-upgrades.yaml).
	Flavor *string

	// ControlPlaneMachineCount is the number of control-plane machines. If
	// unset, 1.
	ControlPlaneMachineCount *int64

	// WorkerMachineCount is the number of worker machines. If unset, 2 (as
	// upstream: a rolling upgrade with more than one machine).
	WorkerMachineCount *int64

	// ControlPlaneMachineTemplateUpgradeTo names the infrastructure machine
	// template the KubeadmControlPlane switches to when it is upgraded. If
	// unset, "<current template>-upgrade-to" when such a template exists in
	// the spec's namespace (the "upgrades" flavor has one), else the
	// current template is kept (right for providers that pick the machine
	// image from the version).
	ControlPlaneMachineTemplateUpgradeTo *string

	// WorkersMachineTemplateUpgradeTo names the infrastructure machine
	// template every MachineDeployment switches to. If unset, for each
	// MachineDeployment "<its current template>-upgrade-to" when it exists,
	// else its current template.
	WorkersMachineTemplateUpgradeTo *string

	// ControlPlaneWaiters replace the waits for the control plane at
	// creation, as upstream's. If unset, the KubeadmControlPlane waits.
	ControlPlaneWaiters clusterctl.ControlPlaneWaiters

	// PostMachinesProvisioned is called once the cluster is created, before
	// the upgrade. If unset, nothing is called.
	PostMachinesProvisioned func(managementClusterProxy framework.ClusterProxy, workloadClusterNamespace, workloadClusterName string)

	// PreWaitForControlPlaneToBeUpgraded is called right after the
	// KubeadmControlPlane is patched, before waiting for its Machines. If
	// unset, nothing is called.
	PreWaitForControlPlaneToBeUpgraded func()
}

// ClusterUpgradeSpec creates a cluster at KUBERNETES_VERSION_UPGRADE_FROM
// and upgrades it to KUBERNETES_VERSION_UPGRADE_TO: first the
// KubeadmControlPlane (with etcd's and CoreDNS's image tags when
// ETCD_VERSION_UPGRADE_TO / COREDNS_VERSION_UPGRADE_TO are set), waiting for
// every control-plane Machine, kube-proxy, CoreDNS and etcd to run the new
// versions; then every MachineDeployment; then it checks every Node is Ready
// at the new version and the Cluster Available. It runs no conformance
// tests.
//
// Spec name: "k8s-upgrade". Intervals: those of the quick-start, plus
// wait-machine-upgrade (control-plane Machines, kube-proxy, CoreDNS, etcd),
// wait-machine-deployment-upgrade and wait-nodes-ready.
func ClusterUpgradeSpec(inputGetter func() ClusterUpgradeSpecInput) {
	It("upgrades the control plane, then the workers, to the new Kubernetes version",
		Label(LabelUpgrade, LabelSlow),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := begin(specCtx, "k8s-upgrade", in.CommonInput, in.Timeout)
			from := r.variable(varKubernetesVersionUpgradeFrom)
			to := r.variable(varKubernetesVersionUpgradeTo)
			etcdTag := r.in.E2EConfig.GetVariableOrEmpty(varEtcdVersionUpgradeTo)
			dnsTag := r.in.E2EConfig.GetVariableOrEmpty(varCoreDNSVersionUpgradeTo)
			r.summary.Set("upgrade", fmt.Sprintf("%s -> %s", from, to))

			res := r.createCluster(ctx, createOptions{
				flavor:                  deref(in.Flavor, "upgrades"),
				kubernetesVersion:       from,
				controlPlaneCount:       deref(in.ControlPlaneMachineCount, 1),
				workerCount:             deref(in.WorkerMachineCount, 2),
				waiters:                 in.ControlPlaneWaiters,
				postMachinesProvisioned: in.PostMachinesProvisioned,
			})
			proxy := r.in.BootstrapClusterProxy

			r.step("upgrade control plane", func() {
				cpTemplate := in.ControlPlaneMachineTemplateUpgradeTo
				if cpTemplate == nil {
					ref := res.ControlPlane.Spec.MachineTemplate.Spec.InfrastructureRef
					cpTemplate = r.templateIfExists(ctx, ref, ref.Name+"-upgrade-to")
				}
				framework.UpgradeControlPlaneAndWaitForUpgrade(ctx, framework.UpgradeControlPlaneAndWaitForUpgradeInput{
					ClusterProxy:                       proxy,
					Cluster:                            res.Cluster,
					ControlPlane:                       res.ControlPlane,
					KubernetesUpgradeVersion:           to,
					UpgradeMachineTemplate:             cpTemplate,
					EtcdImageTag:                       etcdTag,
					DNSImageTag:                        dnsTag,
					WaitForMachinesToBeUpgraded:        r.intervals("wait-machine-upgrade"),
					WaitForKubeProxyUpgrade:            r.intervals("wait-machine-upgrade"),
					WaitForDNSUpgrade:                  r.intervals("wait-machine-upgrade"),
					WaitForEtcdUpgrade:                 r.intervals("wait-machine-upgrade"),
					PreWaitForControlPlaneToBeUpgraded: in.PreWaitForControlPlaneToBeUpgraded,
				})
			})

			for _, md := range res.MachineDeployments {
				r.step(fmt.Sprintf("upgrade MachineDeployment %s", md.Name), func() {
					template := in.WorkersMachineTemplateUpgradeTo
					if template == nil {
						ref := md.Spec.Template.Spec.InfrastructureRef
						template = r.templateIfExists(ctx, ref, ref.Name+"-upgrade-to")
					}
					framework.UpgradeMachineDeploymentsAndWait(ctx, framework.UpgradeMachineDeploymentsAndWaitInput{
						ClusterProxy:                proxy,
						Cluster:                     res.Cluster,
						UpgradeVersion:              to,
						UpgradeMachineTemplate:      template,
						MachineDeployments:          []*clusterv1.MachineDeployment{md},
						WaitForMachinesToBeUpgraded: r.intervals("wait-machine-deployment-upgrade"),
					})
				})
			}

			r.step("wait for every node to be Ready at the new version", func() {
				wl := proxy.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
				defer wl.Dispose(ctx)
				framework.WaitForNodesReady(ctx, framework.WaitForNodesReadyInput{
					Lister:            wl.GetClient(),
					KubernetesVersion: to,
					Count:             int(res.ExpectedTotalNodes()),
					WaitForNodesReady: r.intervals("wait-nodes-ready"),
				})
			})
			r.verifyClusterHealthy(ctx, proxy)
		})
}
