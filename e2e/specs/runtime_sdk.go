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
	waits: slices.Concat(
		// The extension discovered; BeforeClusterCreate, before the
		// creation's waits end; AfterControlPlaneInitialized called.
		[]string{"wait-extension"}, hookWaits, creationWaits, []string{"wait-hook-called"},
		// BeforeClusterUpgrade, BeforeControlPlaneUpgrade, the control
		// plane's Machines, AfterControlPlaneUpgrade, BeforeWorkersUpgrade,
		// the workers' Machines, AfterWorkersUpgrade; upstream's helper's
		// own checks (control plane, kube-proxy, MachineDeployment,
		// MachinePool); AfterClusterUpgrade; every Node Ready.
		hookWaits, hookWaits, []string{"wait-control-plane-upgrade"}, hookWaits, hookWaits,
		[]string{"wait-machine-deployment-upgrade"}, hookWaits,
		[]string{"wait-control-plane-upgrade", "wait-machine-upgrade", "wait-machine-deployment-upgrade", "wait-machine-pool-upgrade"},
		hookWaits, []string{"wait-nodes-ready"}, healthWaits),
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
			r.summary.Set("upgrade", fmt.Sprintf("%s -> %s", from, to))
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
				kubernetesVersion: from,
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

			r.step("upgrade the topology through its lifecycle hooks", func() {
				framework.UpgradeClusterTopologyAndWaitForUpgrade(ctx, framework.UpgradeClusterTopologyAndWaitForUpgradeInput{
					ClusterProxy:             r.in.BootstrapClusterProxy,
					Cluster:                  res.Cluster,
					ControlPlane:             res.ControlPlane,
					MachineDeployments:       res.MachineDeployments,
					MachinePools:             res.MachinePools,
					KubernetesUpgradeVersion: to,
					PreWaitForControlPlaneToBeUpgraded: func() {
						h.upgradeStepByStep(ctx, from, to)
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
			h.pass(ctx, "AfterClusterUpgrade", []string{to}, func(ctx context.Context) error {
				return h.nextUpgradeRefused(ctx, to)
			})
			r.summary.Set("node images after the upgrade", r.nodeImages(ctx, c))
			r.step("wait for every node to be Ready at the new version", func() {
				wl := r.in.BootstrapClusterProxy.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
				defer wl.Dispose(ctx)
				framework.WaitForNodesReady(ctx, framework.WaitForNodesReadyInput{
					Lister:            wl.GetClient(),
					KubernetesVersion: to,
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
					for _, k := range []string{
						hookKey("BeforeClusterCreate"),
						hookKey("BeforeClusterUpgrade", from, to),
						hookKey("BeforeControlPlaneUpgrade", from, to),
						hookKey("AfterControlPlaneUpgrade", to),
						hookKey("BeforeWorkersUpgrade", from, to),
						hookKey("AfterWorkersUpgrade", to),
						hookKey("AfterClusterUpgrade", to),
						hookKey("BeforeClusterDelete"),
					} {
						want[k] = hookPassed
					}
					h.expectAnswers(ctx, want)
				})
			}
		})
}

// upgradeStepByStep takes a one-minor topology upgrade through its hooks,
// as upstream's spec does once the version is patched: BeforeClusterUpgrade
// and BeforeControlPlaneUpgrade hold every version at from; then the
// control plane's Machines upgrade; AfterControlPlaneUpgrade holds the
// workers at from; BeforeWorkersUpgrade too; then the workers' Machines
// upgrade; AfterWorkersUpgrade holds off AfterClusterUpgrade.
func (h *lifecycleHooks) upgradeStepByStep(ctx context.Context, from, to string) {
	r := h.r
	h.pass(ctx, "BeforeClusterUpgrade", []string{from, to}, func(ctx context.Context) error {
		return errors.Join(h.at(ctx, from, from), h.notCalled(ctx, hookKey("BeforeControlPlaneUpgrade", from, to)))
	})
	h.pass(ctx, "BeforeControlPlaneUpgrade", []string{from, to}, func(ctx context.Context) error {
		return h.at(ctx, from, from)
	})
	r.step("wait for the control plane's Machines at the new version", func() {
		timeout, poll := r.durations("wait-control-plane-upgrade")
		Eventually(func() error {
			return errors.Join(h.controlPlaneAt(ctx, to), h.machinesAt(ctx, true, to))
		}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the control plane at %s", to)
	})
	h.pass(ctx, "AfterControlPlaneUpgrade", []string{to}, func(ctx context.Context) error {
		return errors.Join(h.at(ctx, to, from), h.notCalled(ctx, hookKey("BeforeWorkersUpgrade", from, to)))
	})
	h.pass(ctx, "BeforeWorkersUpgrade", []string{from, to}, func(ctx context.Context) error {
		return h.at(ctx, to, from)
	})
	r.step("wait for the workers' Machines at the new version", func() {
		timeout, poll := r.durations("wait-machine-deployment-upgrade")
		Eventually(func() error {
			return errors.Join(h.at(ctx, to, to), h.machinesAt(ctx, false, to))
		}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the workers at %s", to)
	})
	h.pass(ctx, "AfterWorkersUpgrade", []string{to}, func(ctx context.Context) error {
		return h.notCalled(ctx, hookKey("AfterClusterUpgrade", to))
	})
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
