package specs

import (
	"slices"

	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/mod/semver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
)

// specRuntimeSDK is the runtime SDK spec's name (upstream's), and its
// facts.
var specRuntimeSDK = declare(specFacts{
	name: "k8s-upgrade-with-runtimesdk", label: LabelRuntimeSDK,
	variables:     []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo},
	testExtension: true,
	waits:         runtimeSDKWaits(1, 1),
	// BeforeClusterDelete, while the Cluster is deleted.
	cleanupWaits: slices.Concat([]string{"wait-delete-cluster"}, hookWaits),
	// hooks.go's pass is called once per hook: waits lists its waits per
	// call.
	files:        []string{"runtime_sdk.go", "hooks.go"},
	cleanupFiles: []string{"hooks.go"},
})

// RuntimeSDKSpecInput is the input of RuntimeSDKSpec.
type RuntimeSDKSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of the spec's waits
	// at the config's intervals.
	Timeout time.Duration

	// Flavor is the cluster template flavor; its Cluster must be of a
	// ClusterClass. If unset, "topology".
	Flavor *string

	// ControlPlaneMachineCount is the number of control-plane machines. If
	// unset, 1.
	ControlPlaneMachineCount *int64

	// WorkerMachineCount is the number of machines of each
	// MachineDeployment. If unset, 1.
	WorkerMachineCount *int64

	// ExtensionServiceNamespace and ExtensionServiceName are the test
	// extension's webhook Service, whose serving certificate is the Secret
	// "<name>-cert" in that namespace. If unset, the test extension's own:
	// "test-extension-system" and "test-extension-webhook-service".
	ExtensionServiceNamespace, ExtensionServiceName string
}

// RuntimeSDKSpec checks that Cluster API calls the lifecycle hooks of a
// runtime extension and honours their answers while it creates, upgrades
// and deletes a Cluster of a ClusterClass: the behaviour upstream's
// ClusterUpgradeWithRuntimeSDKSpec checks, with Cluster API's test
// extension installed as the RuntimeExtensionProvider "test-extension"
// (build.clusterAPI.images.testExtension; EXP_RUNTIME_SDK "true").
//
// An ExtensionConfig that selects only the spec's namespace makes every
// blocking hook block by default. For each of BeforeClusterCreate,
// BeforeClusterUpgrade, BeforeControlPlaneUpgrade, AfterControlPlaneUpgrade,
// BeforeWorkersUpgrade, AfterWorkersUpgrade, AfterClusterUpgrade and
// BeforeClusterDelete it checks that the hook was called, that the
// Cluster's TopologyReconciled condition names it, that the Cluster did not
// go on while it blocked (nothing created; no version changed; the next
// hook not called; no next upgrade accepted; nothing deleted), then lets
// it pass and checks the Cluster went on. AfterControlPlaneInitialized,
// which cannot block, must have been called. The upgrade is one minor,
// KUBERNETES_VERSION_UPGRADE_FROM to KUBERNETES_VERSION_UPGRADE_TO.
//
// Spec name: "k8s-upgrade-with-runtimesdk" (upstream's). Intervals: the
// quick-start's, wait-extension (the extension discovered), wait-hook-called,
// check-hook-blocks (the window in which a blocking hook must hold the
// Cluster), wait-hook-unblocked, wait-control-plane-upgrade,
// wait-machine-deployment-upgrade, those of upstream's topology upgrade
// helper and wait-nodes-ready.
func RuntimeSDKSpec(inputGetter func() RuntimeSDKSpecInput) {
	It("calls a runtime extension's lifecycle hooks and honours their answers while it creates, upgrades and deletes a cluster",
		Label(LabelRuntimeSDK, LabelK8sUpgrade),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := begin(specCtx, specRuntimeSDK, in.CommonInput, in.Timeout)
			from := r.variable(varKubernetesVersionUpgradeFrom)
			to := r.variable(varKubernetesVersionUpgradeTo)
			r.runtimeSDK(ctx, in, upgradePlan{from: from, to: to, controlPlane: []string{to}, workers: []string{to}})
		})
}

// runtimeSDKWaits lists the waits of a runtime SDK spec whose upgrade
// takes the control plane through cpSteps versions and the workers through
// workerSteps.
func runtimeSDKWaits(cpSteps, workerSteps int) []string {
	waits := slices.Concat(
		// The extension discovered; BeforeClusterCreate, before the
		// creation's waits end; AfterControlPlaneInitialized called;
		// BeforeClusterUpgrade.
		[]string{"wait-extension"}, hookWaits, creationWaits, []string{"wait-hook-called"}, hookWaits)
	for range cpSteps {
		// BeforeControlPlaneUpgrade, the control plane's Machines,
		// AfterControlPlaneUpgrade.
		waits = slices.Concat(waits, hookWaits, []string{"wait-control-plane-upgrade"}, hookWaits)
	}
	for range workerSteps {
		// BeforeWorkersUpgrade, the workers' Machines, AfterWorkersUpgrade.
		waits = slices.Concat(waits, hookWaits, []string{"wait-machine-deployment-upgrade"}, hookWaits)
	}
	// Upstream's helper's own checks (control plane, kube-proxy,
	// MachineDeployment, MachinePool); AfterClusterUpgrade; every Node
	// Ready; the cluster's health.
	return slices.Concat(waits,
		[]string{"wait-control-plane-upgrade", "wait-machine-upgrade", "wait-machine-deployment-upgrade", "wait-machine-pool-upgrade"},
		hookWaits, []string{"wait-nodes-ready"}, healthWaits)
}

// upgradePlan is the way of a topology upgrade from one Kubernetes
// version to another: the versions the control plane goes through, in
// order, and those of them the workers go through.
type upgradePlan struct {
	from, to              string
	controlPlane, workers []string
	// classVersions, if set, are written to the ClusterClass's
	// spec.kubernetesVersions before the upgrade: Cluster API plans a
	// chained upgrade by them.
	classVersions []string
}

// String returns the plan as the summary records it, e.g.
// "v1.35.4 -> v1.37.2; control plane v1.36.3, v1.37.2; workers v1.37.2".
func (p upgradePlan) String() string {
	s := p.from + " -> " + p.to
	if len(p.controlPlane) > 1 || len(p.workers) > 1 {
		s += fmt.Sprintf("; control plane %s; workers %s", strings.Join(p.controlPlane, ", "), strings.Join(p.workers, ", "))
	}
	return s
}

// runtimeSDK is the runtime SDK specs' body: the cluster created through
// its hooks, upgraded by plan through them, checked, and deleted through
// BeforeClusterDelete in the cleanup.
func (r *run) runtimeSDK(ctx context.Context, in RuntimeSDKSpecInput, plan upgradePlan) {
	r.summary.Set("upgrade", plan.String())
	c := r.in.BootstrapClusterProxy.GetClient()
	h := &lifecycleHooks{r: r, c: c, extensionConfig: r.namespace}
	// The extension creates it, without an owner.
	r.ownerless = map[string]bool{"ConfigMap/" + h.configMap().Name: true}

	r.step("register the test extension for the spec's namespace", func() {
		ns, svc := in.ExtensionServiceNamespace, in.ExtensionServiceName
		if ns == "" {
			ns = testExtensionNamespace
		}
		if svc == "" {
			svc = testExtensionService
		}
		h.createExtensionConfig(ctx, ns, svc)
	})
	// A spec that fails before its end must not leave its Cluster's
	// deletion to hooks that block: the ExtensionConfig goes first.
	r.beforeDelete = append(r.beforeDelete, func(ctx context.Context) {
		if r.whileDeleting == nil || CurrentSpecReport().Failed() {
			r.whileDeleting = nil
			Expect(h.deleteExtensionConfig(ctx)).To(Succeed(), "delete ExtensionConfig %s", h.extensionConfig)
		}
	})
	r.finally = append(r.finally, func(ctx context.Context) {
		r.step("cleanup: delete the ExtensionConfig", func() {
			Expect(h.deleteExtensionConfig(ctx)).To(Succeed(), "delete ExtensionConfig %s", h.extensionConfig)
		})
	})
	r.step("wait for the extension's handlers to be discovered", func() {
		r.summary.Set("extension handlers", strings.Join(h.waitDiscovered(ctx), ", "))
	})

	res := r.createCluster(ctx, createOptions{
		flavor:            deref(in.Flavor, "topology"),
		kubernetesVersion: plan.from,
		controlPlaneCount: deref(in.ControlPlaneMachineCount, 1),
		workerCount:       deref(in.WorkerMachineCount, 1),
		applied: func() {
			h.pass(ctx, "BeforeClusterCreate", nil, func(ctx context.Context) error {
				cluster := &clusterv1.Cluster{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, cluster); err != nil {
					return err
				}
				if cluster.Spec.InfrastructureRef.IsDefined() || cluster.Spec.ControlPlaneRef.IsDefined() {
					return errors.New("the topology controller created the infrastructure or control plane")
				}
				return nil
			})
		},
		controlPlaneInitialized: func() {
			r.step("hook AfterControlPlaneInitialized: called", func() {
				timeout, poll := r.durations("wait-hook-called")
				Eventually(h.answered).WithContext(ctx).WithArguments(hookKey("AfterControlPlaneInitialized")).
					WithTimeout(timeout).WithPolling(poll).Should(Equal(hookSuccess), "hook AfterControlPlaneInitialized called")
			})
		},
	})
	if !res.Cluster.Spec.Topology.IsDefined() {
		Fail(fmt.Sprintf("flavor %q: the Cluster has no topology; lifecycle hooks need a ClusterClass", deref(in.Flavor, "topology")))
	}
	if len(plan.classVersions) > 0 {
		r.step("list the chain's versions in the ClusterClass (spec.kubernetesVersions)", func() {
			current := &clusterv1.ClusterClass{}
			Expect(c.Get(ctx, res.Cluster.GetClassKey(), current)).To(Succeed(), "get the Cluster's ClusterClass %s", res.Cluster.GetClassKey())
			class := current.DeepCopy()
			class.Spec.KubernetesVersions = plan.classVersions
			Expect(c.Patch(ctx, class, client.MergeFrom(current))).To(Succeed(),
				"set spec.kubernetesVersions of ClusterClass %s/%s to %v", class.Namespace, class.Name, plan.classVersions)
		})
	}

	r.step("upgrade the topology through its lifecycle hooks", func() {
		framework.UpgradeClusterTopologyAndWaitForUpgrade(ctx, framework.UpgradeClusterTopologyAndWaitForUpgradeInput{
			ClusterProxy:             r.in.BootstrapClusterProxy,
			Cluster:                  res.Cluster,
			ControlPlane:             res.ControlPlane,
			MachineDeployments:       res.MachineDeployments,
			MachinePools:             res.MachinePools,
			KubernetesUpgradeVersion: plan.to,
			PreWaitForControlPlaneToBeUpgraded: func() {
				h.upgradeStepByStep(ctx, plan)
			},
			// After upgradeStepByStep saw every Machine upgraded:
			// the control plane's status, kube-proxy, the
			// MachineDeployments' and MachinePools' own checks.
			// (No etcd or CoreDNS tag: those waits are skipped.)
			WaitForControlPlaneToBeUpgraded:      r.intervals("wait-control-plane-upgrade"),
			WaitForKubeProxyUpgrade:              r.intervals("wait-machine-upgrade"),
			WaitForMachineDeploymentToBeUpgraded: r.intervals("wait-machine-deployment-upgrade"),
			WaitForMachinePoolToBeUpgraded:       r.intervals("wait-machine-pool-upgrade"),
		})
	})
	h.pass(ctx, "AfterClusterUpgrade", []string{plan.to}, func(ctx context.Context) error {
		return h.nextUpgradeRefused(ctx, plan.to)
	})
	r.summary.Set("node images after the upgrade", r.nodeImages(ctx, c))
	r.step("wait for every node to be Ready at the new version", func() {
		wl := r.in.BootstrapClusterProxy.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
		defer wl.Dispose(ctx)
		framework.WaitForNodesReady(ctx, framework.WaitForNodesReadyInput{
			Lister:            wl.GetClient(),
			KubernetesVersion: plan.to,
			Count:             int(res.ExpectedTotalNodes()),
			WaitForNodesReady: r.intervals("wait-nodes-ready"),
		})
	})
	r.verifyClusterHealthy(ctx, r.in.BootstrapClusterProxy)

	// The deletion is the cleanup's; BeforeClusterDelete is checked
	// there, while the Cluster is being deleted.
	r.whileDeleting = func(ctx context.Context) {
		h.pass(ctx, "BeforeClusterDelete", nil, func(ctx context.Context) error {
			return h.deletionHeld(ctx)
		})
		r.step("every lifecycle hook was called and passed", func() {
			want := map[string]string{hookKey("AfterControlPlaneInitialized"): hookSuccess}
			for _, k := range plan.hookKeys() {
				want[k] = hookPassed
			}
			h.expectAnswers(ctx, want)
		})
	}
}

// hookKeys returns the keys of every blocking hook a cluster upgraded by
// p is created, upgraded and deleted through, as upstream's spec lists
// them: one BeforeControlPlaneUpgrade and AfterControlPlaneUpgrade per
// control-plane step, one BeforeWorkersUpgrade and AfterWorkersUpgrade per
// workers' step.
func (p upgradePlan) hookKeys() []string {
	keys := []string{
		hookKey("BeforeClusterCreate"),
		hookKey("BeforeClusterUpgrade", p.from, p.to),
		hookKey("AfterClusterUpgrade", p.to),
		hookKey("BeforeClusterDelete"),
	}
	prev := p.from
	for _, v := range p.controlPlane {
		keys = append(keys, hookKey("BeforeControlPlaneUpgrade", prev, v), hookKey("AfterControlPlaneUpgrade", v))
		prev = v
	}
	prev = p.from
	for _, v := range p.workers {
		keys = append(keys, hookKey("BeforeWorkersUpgrade", prev, v), hookKey("AfterWorkersUpgrade", v))
		prev = v
	}
	return keys
}

// upgradeStepByStep takes a topology upgrade through its hooks by plan,
// as upstream's spec does once the version is patched. BeforeClusterUpgrade
// holds every version at from. Then, for each version of the control
// plane's plan: BeforeControlPlaneUpgrade holds the control plane at its
// last version; its Machines upgrade; AfterControlPlaneUpgrade holds the
// workers and what comes next (the workers' upgrade, the control plane's
// next step or AfterClusterUpgrade). Where the workers' plan has that
// version too: BeforeWorkersUpgrade holds them; their Machines upgrade;
// AfterWorkersUpgrade holds what comes next.
func (h *lifecycleHooks) upgradeStepByStep(ctx context.Context, p upgradePlan) {
	r := h.r
	h.pass(ctx, "BeforeClusterUpgrade", []string{p.from, p.to}, func(ctx context.Context) error {
		return errors.Join(h.at(ctx, p.from, p.from), h.notCalled(ctx, hookKey("BeforeControlPlaneUpgrade", p.from, p.controlPlane[0])))
	})
	// The hooks' checks run within h.pass: they read workers as it is
	// then.
	workers := p.from
	for i, v := range p.controlPlane {
		prev := p.from
		if i > 0 {
			prev = p.controlPlane[i-1]
		}
		// next is the hook that follows once the workers are done with v.
		next := hookKey("AfterClusterUpgrade", p.to)
		if i+1 < len(p.controlPlane) {
			next = hookKey("BeforeControlPlaneUpgrade", v, p.controlPlane[i+1])
		}
		workersToo := slices.Contains(p.workers, v)
		h.pass(ctx, "BeforeControlPlaneUpgrade", []string{prev, v}, func(ctx context.Context) error {
			return h.at(ctx, prev, workers)
		})
		r.step("wait for the control plane's Machines at "+v, func() {
			timeout, poll := r.durations("wait-control-plane-upgrade")
			Eventually(func() error {
				return errors.Join(h.controlPlaneAt(ctx, v), h.machinesAt(ctx, true, v))
			}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the control plane at %s", v)
		})
		afterCP := next
		if workersToo {
			afterCP = hookKey("BeforeWorkersUpgrade", workers, v)
		}
		h.pass(ctx, "AfterControlPlaneUpgrade", []string{v}, func(ctx context.Context) error {
			return errors.Join(h.at(ctx, v, workers), h.notCalled(ctx, afterCP))
		})
		if !workersToo {
			continue
		}
		h.pass(ctx, "BeforeWorkersUpgrade", []string{workers, v}, func(ctx context.Context) error {
			return h.at(ctx, v, workers)
		})
		r.step("wait for the workers' Machines at "+v, func() {
			timeout, poll := r.durations("wait-machine-deployment-upgrade")
			Eventually(func() error {
				return errors.Join(h.at(ctx, v, v), h.machinesAt(ctx, false, v))
			}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the workers at %s", v)
		})
		workers = v
		h.pass(ctx, "AfterWorkersUpgrade", []string{v}, func(ctx context.Context) error {
			return h.notCalled(ctx, next)
		})
	}
}

// controlPlaneAt returns nil when the KubeadmControlPlane reports version
// as its own (status.version: every Machine at it).
func (h *lifecycleHooks) controlPlaneAt(ctx context.Context, version string) error {
	kcps := &controlplanev1.KubeadmControlPlaneList{}
	if err := h.c.List(ctx, kcps, client.InNamespace(h.r.namespace), h.r.clusterLabels()); err != nil {
		return err
	}
	for _, k := range kcps.Items {
		if k.Status.Version != version {
			return fmt.Errorf("KubeadmControlPlane %s reports version %q, want %s", k.Name, k.Status.Version, version)
		}
	}
	return nil
}

// nextUpgradeRefused returns nil when Cluster API refuses an upgrade to
// the next minor because AfterClusterUpgrade still blocks (a dry run).
func (h *lifecycleHooks) nextUpgradeRefused(ctx context.Context, to string) error {
	cluster := &clusterv1.Cluster{}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.r.namespace, Name: h.r.clusterName}, cluster); err != nil {
		return err
	}
	next := nextMinor(to)
	patched := cluster.DeepCopy()
	patched.Spec.Topology.Version = next
	err := h.c.Patch(ctx, patched, client.MergeFrom(cluster), client.DryRunAll)
	if err != nil && apierrors.IsInvalid(err) && strings.Contains(err.Error(), `"AfterClusterUpgrade" hook is still blocking`) {
		return nil
	}
	return fmt.Errorf("a dry-run upgrade to %s was not refused for AfterClusterUpgrade: %v", next, err)
}

// nextMinor returns v1.<minor+1>.0 of a version v1.<minor>.<patch>.
func nextMinor(v string) string {
	var major, minor int
	if _, err := fmt.Sscanf(semver.MajorMinor(v), "v%d.%d", &major, &minor); err != nil {
		return v
	}
	return fmt.Sprintf("v%d.%d.0", major, minor+1)
}

// deletionHeld returns nil while BeforeClusterDelete holds the deletion:
// the Cluster exists without Cluster API's ok-to-delete annotation and its
// control plane is not being deleted.
func (h *lifecycleHooks) deletionHeld(ctx context.Context) error {
	cluster := &clusterv1.Cluster{}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.r.namespace, Name: h.r.clusterName}, cluster); err != nil {
		return err
	}
	if _, ok := cluster.Annotations[runtimev1.OkToDeleteAnnotation]; ok {
		return fmt.Errorf("the Cluster is annotated %s", runtimev1.OkToDeleteAnnotation)
	}
	kcps := &controlplanev1.KubeadmControlPlaneList{}
	if err := h.c.List(ctx, kcps, client.InNamespace(h.r.namespace), h.r.clusterLabels()); err != nil {
		return err
	}
	for _, k := range kcps.Items {
		if !k.DeletionTimestamp.IsZero() {
			return fmt.Errorf("KubeadmControlPlane %s is being deleted", k.Name)
		}
	}
	return nil
}
