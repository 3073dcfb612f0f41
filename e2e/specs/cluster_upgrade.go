package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

// The upgrade specs' names, and their facts.
var (
	specK8sUpgrade = declare(specFacts{
		name: "k8s-upgrade", label: LabelK8sUpgrade,
		variables: []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo},
		waits:     upgradeWaits,
		files:     []string{"cluster_upgrade.go"},
	})
	specUpgradeConformance = declare(specFacts{
		name: LabelUpgradeConformance, label: LabelUpgradeConformance,
		variables:   []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo, varKubetestConfiguration},
		conformance: varKubernetesVersionUpgradeTo,
		// The upgrade's waits, the suite's run, the cluster still
		// healthy.
		waits: slices.Concat(upgradeWaits, []string{"wait-conformance"}, healthWaits),
		files: []string{"cluster_upgrade.go", "conformance.go", "kubetest.go"},
	})
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

	// ControlPlanePreDrainHook is the annotation of a pre-drain hook that
	// the flavor puts on every control-plane Machine (the "kcp-pre-drain"
	// flavor: pre-drain.delete.hook.machine.cluster.x-k8s.io/kcp-ready-check).
	// While the control plane is upgraded, the spec removes it from the
	// Machine being deleted only once every Node and every kube-proxy Pod
	// of the workload cluster is Ready, and checks that each old Machine
	// waited for it: as upstream's HA upgrade test, a control plane that
	// only becomes healthy once every Machine is upgraded fails here.
	// If empty, no hook is expected.
	ControlPlanePreDrainHook string
}

// ClusterUpgradeSpec creates a cluster at KUBERNETES_VERSION_UPGRADE_FROM
// and upgrades it to KUBERNETES_VERSION_UPGRADE_TO, then checks every Node
// is Ready at the new version and the Cluster Available.
//
// A Cluster of a ClusterClass (Flavor "topology") is upgraded through
// spec.topology.version, with etcd's and CoreDNS's image tags through its
// etcdImageTag and coreDNSImageTag variables when
// ETCD_VERSION_UPGRADE_TO / COREDNS_VERSION_UPGRADE_TO are set, as
// upstream's UpgradeClusterTopologyAndWaitForUpgrade does: the control
// plane's Machines, kube-proxy, CoreDNS and etcd, then every
// MachineDeployment's Machines and every MachinePool's instances at the
// new version. Any other cluster is upgraded object by object: the
// KubeadmControlPlane (with the same image tags), then every
// MachineDeployment.
//
// Spec name: "k8s-upgrade". Intervals: those of the quick-start, plus
// wait-machine-upgrade (control-plane Machines, kube-proxy, CoreDNS, etcd),
// wait-control-plane-upgrade (a topology's control plane),
// wait-machine-deployment-upgrade, wait-machine-pool-upgrade (a topology's
// MachinePools) and wait-nodes-ready. ClusterUpgradeConformanceSpec runs
// Kubernetes' conformance suite after it.
func ClusterUpgradeSpec(inputGetter func() ClusterUpgradeSpecInput) {
	It("upgrades the control plane, then the workers, to the new Kubernetes version",
		Label(LabelK8sUpgrade, LabelSlow),
		func(specCtx SpecContext) {
			in := inputGetter()
			upgradeCluster(specCtx, specK8sUpgrade, in, nil)
		})
}

// ClusterUpgradeConformanceSpecInput is the input of
// ClusterUpgradeConformanceSpec.
type ClusterUpgradeConformanceSpecInput struct {
	ClusterUpgradeSpecInput

	// Conformance says how the conformance suite runs.
	Conformance ConformanceInput
}

// ClusterUpgradeConformanceSpec is ClusterUpgradeSpec followed by
// Kubernetes' conformance suite of KUBERNETES_VERSION_UPGRADE_TO against
// the upgraded cluster (upstream's ClusterUpgradeConformanceSpec, whose
// SkipConformanceTests is ClusterUpgradeSpec here). The machines preload
// that version's e2e test images, the upgraded ones too.
//
// Spec name: "k8s-upgrade-and-conformance". Variables and intervals:
// ClusterUpgradeSpec's, KUBETEST_CONFIGURATION, KUBETEST_GINKGO_NODES
// (optional) and wait-conformance.
func ClusterUpgradeConformanceSpec(inputGetter func() ClusterUpgradeConformanceSpecInput) {
	It("upgrades the cluster, then passes Kubernetes' conformance tests at the new version",
		Label(LabelK8sUpgrade, LabelConformance, LabelUpgradeConformance, LabelSlow),
		func(specCtx SpecContext) {
			in := inputGetter()
			upgradeCluster(specCtx, specUpgradeConformance, in.ClusterUpgradeSpecInput, &in.Conformance)
		})
}

// upgradeCluster is the body of both upgrade specs; with conformance set,
// the suite runs after the upgrade.
func upgradeCluster(specCtx SpecContext, spec string, in ClusterUpgradeSpecInput, conformance *ConformanceInput) {
	r, ctx := begin(specCtx, spec, in.CommonInput, in.Timeout)
	from := r.variable(varKubernetesVersionUpgradeFrom)
	to := r.variable(varKubernetesVersionUpgradeTo)
	etcdTag := r.in.E2EConfig.GetVariableOrEmpty(varEtcdVersionUpgradeTo)
	dnsTag := r.in.E2EConfig.GetVariableOrEmpty(varCoreDNSVersionUpgradeTo)
	r.summary.Set("upgrade", fmt.Sprintf("%s -> %s", from, to))

	preload := r.in.E2EConfig.GetVariableOrEmpty(varDockerPreloadImages)
	if conformance != nil {
		preload = r.testImages(to)
	}
	// Until the control plane is upgraded a new Machine runs the old
	// version's kube-proxy (the KubeadmControlPlane updates the
	// DaemonSet's image only then), and after it an old Machine runs the
	// new one's; a node image holds its own version's only. Where no
	// registry is reachable, both are preloaded from the engine.
	if proxies := r.engineImages(ctx, kubeProxyImage(from), kubeProxyImage(to)); len(proxies) > 0 {
		preload = preloadWith(preload, proxies...)
		r.summary.Set("kube-proxy images preloaded", strings.Join(proxies, ", "))
	}
	vars := map[string]string{varDockerPreloadImages: preload}
	res := r.createCluster(ctx, createOptions{
		flavor:                  deref(in.Flavor, "upgrades"),
		kubernetesVersion:       from,
		controlPlaneCount:       deref(in.ControlPlaneMachineCount, 1),
		workerCount:             deref(in.WorkerMachineCount, 2),
		variables:               vars,
		waiters:                 in.ControlPlaneWaiters,
		postMachinesProvisioned: in.PostMachinesProvisioned,
	})
	proxy := r.in.BootstrapClusterProxy

	if res.Cluster.Spec.Topology.IsDefined() {
		r.upgradeTopology(ctx, in, res, to, etcdTag, dnsTag)
	} else {
		r.upgradeClassic(ctx, in, res, to, etcdTag, dnsTag)
	}

	r.summary.Set("node images after the upgrade", r.nodeImages(ctx, proxy.GetClient()))
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
	if conformance != nil {
		r.runConformance(ctx, r.withKubetestConfiguration(*conformance), to, int(res.ExpectedWorkerNodes()))
		r.verifyClusterHealthy(ctx, proxy)
	}
}

// upgradeClassic upgrades a cluster without a ClusterClass as upstream's
// ClusterUpgradeConformanceSpec does: the KubeadmControlPlane (to the
// "-upgrade-to" machine template when the flavor has one), then each
// MachineDeployment.
func (r *run) upgradeClassic(ctx context.Context, in ClusterUpgradeSpecInput, res *clusterctl.ApplyClusterTemplateAndWaitResult, to, etcdTag, dnsTag string) {
	proxy := r.in.BootstrapClusterProxy
	r.step("upgrade control plane", func() {
		cpTemplate := in.ControlPlaneMachineTemplateUpgradeTo
		if cpTemplate == nil {
			ref := res.ControlPlane.Spec.MachineTemplate.Spec.InfrastructureRef
			cpTemplate = r.templateIfExists(ctx, ref, ref.Name+"-upgrade-to")
		}
		framework.UpgradeControlPlaneAndWaitForUpgrade(ctx, framework.UpgradeControlPlaneAndWaitForUpgradeInput{
			ClusterProxy:                proxy,
			Cluster:                     res.Cluster,
			ControlPlane:                res.ControlPlane,
			KubernetesUpgradeVersion:    to,
			UpgradeMachineTemplate:      cpTemplate,
			EtcdImageTag:                etcdTag,
			DNSImageTag:                 dnsTag,
			WaitForMachinesToBeUpgraded: r.intervals("wait-machine-upgrade"),
			WaitForKubeProxyUpgrade:     r.intervals("wait-machine-upgrade"),
			WaitForDNSUpgrade:           r.intervals("wait-machine-upgrade"),
			WaitForEtcdUpgrade:          r.intervals("wait-machine-upgrade"),
			PreWaitForControlPlaneToBeUpgraded: func() {
				if in.PreWaitForControlPlaneToBeUpgraded != nil {
					in.PreWaitForControlPlaneToBeUpgraded()
				}
				r.watchControlPlaneRollout(ctx, in.ControlPlanePreDrainHook, to, res)
			},
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
}

// upgradeTopology upgrades a Cluster of a ClusterClass through
// spec.topology.version (and its etcdImageTag and coreDNSImageTag
// variables), with upstream's UpgradeClusterTopologyAndWaitForUpgrade: the
// control plane's Machines, kube-proxy, CoreDNS and etcd, then every
// MachineDeployment's Machines and every MachinePool's instances at the
// new version. The ClusterClass derives each node image from the version,
// so nothing else changes. The two halves are phases of the summary.
func (r *run) upgradeTopology(ctx context.Context, in ClusterUpgradeSpecInput, res *clusterctl.ApplyClusterTemplateAndWaitResult, to, etcdTag, dnsTag string) {
	var controlPlaneDone, workersDone func(error)
	end := func(done *func(error)) {
		if *done != nil {
			(*done)(nil)
			*done = nil
		}
	}
	r.step("upgrade the topology", func() {
		framework.UpgradeClusterTopologyAndWaitForUpgrade(ctx, framework.UpgradeClusterTopologyAndWaitForUpgradeInput{
			ClusterProxy:             r.in.BootstrapClusterProxy,
			Cluster:                  res.Cluster,
			ControlPlane:             res.ControlPlane,
			EtcdImageTag:             etcdTag,
			DNSImageTag:              dnsTag,
			MachineDeployments:       res.MachineDeployments,
			MachinePools:             res.MachinePools,
			KubernetesUpgradeVersion: to,
			PreWaitForControlPlaneToBeUpgraded: func() {
				controlPlaneDone = r.summary.Phase("topology upgrade: the control plane, kube-proxy, CoreDNS, etcd")
				if in.PreWaitForControlPlaneToBeUpgraded != nil {
					in.PreWaitForControlPlaneToBeUpgraded()
				}
				r.watchControlPlaneRollout(ctx, in.ControlPlanePreDrainHook, to, res)
			},
			PreWaitForWorkersToBeUpgraded: func() {
				end(&controlPlaneDone)
				workersDone = r.summary.Phase("topology upgrade: the MachineDeployments and MachinePools")
			},
			// The waits of upgradeClassic, which a topology cluster makes
			// instead.
			WaitForControlPlaneToBeUpgraded:      r.intervals("wait-control-plane-upgrade"),
			WaitForKubeProxyUpgrade:              r.intervals("wait-machine-upgrade"),            // replaces a wait
			WaitForDNSUpgrade:                    r.intervals("wait-machine-upgrade"),            // replaces a wait
			WaitForEtcdUpgrade:                   r.intervals("wait-machine-upgrade"),            // replaces a wait
			WaitForMachineDeploymentToBeUpgraded: r.intervals("wait-machine-deployment-upgrade"), // replaces a wait
			WaitForMachinePoolToBeUpgraded:       r.intervals("wait-machine-pool-upgrade"),
		})
		end(&workersDone)
	})
}

// watchControlPlaneRollout follows the control plane's rollout to version,
// from a watch on its Machines: it waits for every control-plane Machine to
// be at version with a healthy Node, and checks that the rollout never had
// more Machines than the KubeadmControlPlane's replicas plus its maxSurge
// (1 unless the flavor sets it; "0": one deleted before its replacement is
// created). With hook set it also does what the hook's owner does: it
// removes hook from the Machine being deleted only while every Node and
// kube-proxy Pod of the workload cluster is Ready (upstream's HA upgrade
// test, the PreWaitForControlPlaneToBeUpgraded of its kcp-pre-drain case),
// and checks that every old Machine waited for it.
func (r *run) watchControlPlaneRollout(ctx context.Context, hook, version string, res *clusterctl.ApplyClusterTemplateAndWaitResult) {
	if res.ControlPlane == nil || res.ControlPlane.Spec.Replicas == nil {
		return // not a KubeadmControlPlane: upstream's waits alone
	}
	want := int(*res.ControlPlane.Spec.Replicas)
	surge := intstr.FromInt32(1)
	if s := res.ControlPlane.Spec.Rollout.Strategy.RollingUpdate.MaxSurge; s != nil {
		surge = *s
	}
	maxSurge, err := intstr.GetScaledValueFromIntOrPercent(&surge, want, true)
	Expect(err).ToNot(HaveOccurred(), "the KubeadmControlPlane's maxSurge")
	r.step(fmt.Sprintf("follow the control plane's rollout: at most %d+%d Machines, each at %s with a healthy Node", want, maxSurge, version), func() {
		mgmt := r.in.BootstrapClusterProxy
		c := watchClient(mgmt)
		wl := mgmt.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
		defer wl.Dispose(ctx)
		released := map[string]bool{}
		most := 0
		controlPlane := client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName, clusterv1.MachineControlPlaneLabel: ""}
		what := fmt.Sprintf("%d control-plane Machines at %s", want, version)
		if hook != "" {
			what += ", each old one released from pre-drain hook " + hook
		}
		err := r.wait(c, "wait-machine-upgrade", what, &clusterv1.MachineList{}, controlPlane).Until(ctx, func(ctx context.Context) (bool, string) {
			machines := &clusterv1.MachineList{}
			if err := c.List(ctx, machines, client.InNamespace(r.namespace), controlPlane); err != nil {
				return false, err.Error()
			}
			most = max(most, len(machines.Items))
			var deleting []*clusterv1.Machine
			upgraded := 0
			for i := range machines.Items {
				m := &machines.Items[i]
				switch {
				case !m.DeletionTimestamp.IsZero():
					if !released[m.Name] {
						deleting = append(deleting, m)
					}
				case m.Spec.Version == version && meta.IsStatusConditionTrue(m.Status.Conditions, clusterv1.MachineNodeHealthyCondition):
					upgraded++
				}
			}
			if hook != "" && len(deleting) > 0 {
				if len(deleting) > 1 {
					return false, fmt.Sprintf("%d control-plane Machines deleted at once, expected one at a time", len(deleting))
				}
				m := deleting[0]
				if m.Annotations[hook] != "true" {
					return false, fmt.Sprintf("Machine %s is being deleted without pre-drain hook %s", m.Name, hook)
				}
				if problem := workloadUnsettled(ctx, wl.GetClient()); problem != "" {
					return false, "holding Machine " + m.Name + "'s pre-drain hook: " + problem
				}
				base := m.DeepCopy()
				delete(m.Annotations, hook)
				if err := c.Patch(ctx, m, client.MergeFrom(base)); err != nil {
					return false, fmt.Sprintf("removing the hook from Machine %s: %v", m.Name, err)
				}
				released[m.Name] = true
				return false, fmt.Sprintf("released Machine %s", m.Name)
			}
			if n := len(machines.Items); upgraded != want || n != want {
				return false, fmt.Sprintf("%d of %d control-plane Machines at %s with a healthy Node", upgraded, n, version)
			}
			return true, ""
		})
		Expect(err).ToNot(HaveOccurred())
		r.summary.Set("control-plane Machines during the rollout", fmt.Sprintf("at most %d (replicas %d, maxSurge %s)", most, want, surge.String()))
		Expect(most).To(BeNumerically("<=", want+maxSurge), "control-plane Machines at once during the rollout: replicas %d plus maxSurge %s", want, surge.String())
		if hook != "" {
			Expect(released).To(HaveLen(want), "every old control-plane Machine waits for the pre-drain hook")
		}
	})
}

// workloadUnsettled says why the workload cluster is not yet fit to lose a
// control-plane Machine: a Node not Ready, a Node without a Ready
// kube-proxy Pod; "" when it is.
func workloadUnsettled(ctx context.Context, c client.Client) string {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return "listing Nodes: " + err.Error()
	}
	proxies := &corev1.PodList{}
	if err := c.List(ctx, proxies, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{"k8s-app": "kube-proxy"}); err != nil {
		return "listing kube-proxy Pods: " + err.Error()
	}
	var problems []string
	for _, n := range nodes.Items {
		if !nodeReady(n) {
			problems = append(problems, "Node "+n.Name+" not Ready")
		}
	}
	if len(proxies.Items) != len(nodes.Items) {
		problems = append(problems, fmt.Sprintf("%d kube-proxy Pods for %d Nodes", len(proxies.Items), len(nodes.Items)))
	}
	for _, p := range proxies.Items {
		if !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}) {
			problems = append(problems, "kube-proxy Pod "+p.Name+" not Ready")
		}
	}
	return strings.Join(problems, "; ")
}

// kubeProxyImage is kubeadm's kube-proxy image of a Kubernetes version, in
// kubeadm's default repository.
func kubeProxyImage(version string) string {
	return "registry.k8s.io/kube-proxy:" + version
}

// engineImages returns those of refs the engine holds; none when it cannot
// say.
func (r *run) engineImages(ctx context.Context, refs ...string) []string {
	images, ok := r.in.Runtime.(imageInspector)
	if !ok {
		return nil
	}
	var held []string
	for _, ref := range refs {
		if _, err := images.InspectImage(ctx, ref); err == nil {
			held = append(held, ref)
		}
	}
	return held
}
