package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/controllerlogs"
)

// specSelfHosted is the self-hosted spec's name, and its facts.
var specSelfHosted = declare(specFacts{
	name: "self-hosted", label: LabelSelfHosted,
	variables: []string{varKubernetesVersion},
	waits: slices.Concat(creationWaits,
		// clusterctl init, every Machine with a Node, the moved Cluster
		// reconciled, the window without a rollout.
		[]string{"wait-controllers", "wait-worker-nodes", "wait-cluster", "check-no-rollout"},
		healthWaits),
	// The move back, a cleanup node of its own, adds its waits: every
	// Machine with a Node, the Cluster reconciled.
	cleanupWaits: []string{"wait-delete-cluster", "wait-worker-nodes", "wait-cluster"},
	files:        []string{"self_hosted.go"},
	cleanupFiles: []string{"self_hosted_cleanup.go"},
})

// SelfHostedSpecInput is the input of SelfHostedSpec.
type SelfHostedSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of the spec's waits
	// at the config's intervals (see Intervals below): each wait is bounded
	// by its interval already, so this is a backstop.
	Timeout time.Duration

	// Flavor is the cluster template flavor; its machines must be able to
	// run the provider's controllers (for CAPD: the host's Docker socket
	// mounted). If unset, "self-hosted" (cluster-template-self-hosted.yaml).
	Flavor *string

	// ControlPlaneMachineCount is the number of control-plane machines. If
	// unset, 1.
	ControlPlaneMachineCount *int64

	// WorkerMachineCount is the number of worker machines. If unset, 1.
	WorkerMachineCount *int64

	// ControlPlaneWaiters replace the waits for the control plane at
	// creation, as upstream's. If unset, the KubeadmControlPlane waits.
	ControlPlaneWaiters clusterctl.ControlPlaneWaiters

	// PostMachinesProvisioned is called once the cluster is created. If
	// unset, nothing is called.
	PostMachinesProvisioned func(managementClusterProxy framework.ClusterProxy, workloadClusterNamespace, workloadClusterName string)

	// PreClusterctlInit is called with the workload cluster before
	// clusterctl init runs there, e.g. to install what the suite's
	// clusterctl config tells clusterctl not to (cert-manager or a
	// substitute). If unset, nothing is called.
	PreClusterctlInit func(ctx context.Context, selfHostedClusterProxy framework.ClusterProxy)

	// PreCleanupSelfHostedCluster is called with the self-hosted cluster
	// before the cluster is moved back, as upstream's. If unset, nothing is
	// called.
	PreCleanupSelfHostedCluster func(selfHostedClusterProxy framework.ClusterProxy)

	// PreloadImages, when the e2e config has a docker provider, sets
	// DOCKER_PRELOAD_IMAGES to every image of the e2e config (plus those
	// already in that variable), so that CAPD copies the controller images
	// into the machines: the workload cluster can then run the providers
	// without pulling anything. If unset, true.
	PreloadImages *bool
}

// SelfHostedSpec turns a workload cluster into its own management cluster:
// it creates the cluster, runs clusterctl init on it, moves the cluster's
// Cluster API objects into it with clusterctl move, checks that the moved
// controllers reconcile it (the Cluster's observed generation catches up and
// it is no longer paused, no field is left owned by clusterctl) and that no
// Machine is rolled out for a window long enough to see one (config
// interval check-no-rollout), that the Cluster is Available and its Machines
// Ready; then, in its cleanup, it moves the objects back to the bootstrap
// cluster and deletes the cluster from there.
//
// The cluster runs without a cloud-controller-manager whatever
// CommonInput.CloudControllerManager says (its flavor leaves the kubelet's
// --cloud-provider unset, so CAPD initialises the Nodes): the manager's
// Deployment is not a Cluster API object, so clusterctl move would leave it
// behind.
//
// Spec name: "self-hosted". Intervals: those of the quick-start, plus
// wait-controllers and check-no-rollout (which has no upstream equivalent:
// upstream sleeps three minutes).
func SelfHostedSpec(inputGetter func() SelfHostedSpecInput) {
	It("moves a cluster into itself, keeps it reconciled without a rollout, and moves it back",
		Label(LabelSelfHosted, LabelClusterctl, LabelSlow),
		func(specCtx SpecContext) {
			in := inputGetter()
			in.CloudControllerManager = nil
			r, ctx := begin(specCtx, specSelfHosted, in.CommonInput, in.Timeout)
			vars := map[string]string{}
			if deref(in.PreloadImages, true) && in.E2EConfig.HasDockerProvider() {
				vars[varDockerPreloadImages] = preloadImages(in.E2EConfig)
			}
			res := r.createCluster(ctx, createOptions{
				flavor:                  deref(in.Flavor, "self-hosted"),
				kubernetesVersion:       r.variable(varKubernetesVersion),
				controlPlaneCount:       deref(in.ControlPlaneMachineCount, 1),
				workerCount:             deref(in.WorkerMachineCount, 1),
				variables:               vars,
				waiters:                 in.ControlPlaneWaiters,
				postMachinesProvisioned: in.PostMachinesProvisioned,
			})
			bootstrap := r.in.BootstrapClusterProxy
			s := &selfHostedRun{run: r, in: in}

			r.step("prepare the workload cluster as a management cluster", func() {
				s.proxy = bootstrap.GetWorkloadCluster(ctx, r.namespace, r.clusterName, framework.WithMachineLogCollector(r.collector))
				s.watches, s.cancelWatches = context.WithCancel(context.WithoutCancel(ctx))
				// Registered here, before the move, so that it runs after the
				// move-back cleanup below (cleanups run last-in, first-out).
				DeferCleanup(s.dispose)
				framework.CreateNamespaceAndWatchEvents(s.watches, framework.CreateNamespaceAndWatchEventsInput{
					Creator:   s.proxy.GetClient(),
					ClientSet: s.proxy.GetClientSet(),
					Name:      r.namespace,
					LogFolder: r.clusterDir(),
				})
				if in.PostNamespaceCreated != nil {
					in.PostNamespaceCreated(s.proxy, r.namespace)
				}
				if in.PreClusterctlInit != nil {
					in.PreClusterctlInit(ctx, s.proxy)
				}
			})

			r.step("clusterctl init on the workload cluster", func() {
				controllerlogs.InitAndWatch(s.watches, clusterctl.InitManagementClusterAndWatchControllerLogsInput{
					ClusterProxy:              s.proxy,
					ClusterctlConfigPath:      r.in.ClusterctlConfigPath,
					InfrastructureProviders:   r.in.E2EConfig.InfrastructureProviders(),
					IPAMProviders:             r.in.E2EConfig.IPAMProviders(),
					RuntimeExtensionProviders: r.in.E2EConfig.RuntimeExtensionProviders(),
					AddonProviders:            r.in.E2EConfig.AddonProviders(),
					LogFolder:                 r.clusterDir(),
				}, r.intervals("wait-controllers")...)
			})

			r.step("wait for every Machine to have a Node", func() {
				// clusterctl move refuses Machines still provisioning.
				framework.WaitForClusterMachineNodeRefs(ctx, framework.WaitForClusterMachineNodeRefsInput{
					GetLister: bootstrap.GetClient(), Cluster: res.Cluster,
				}, r.intervals("wait-worker-nodes")...)
			})
			before := s.rolloutState(ctx, bootstrap.GetClient())

			r.step("clusterctl move to the self-hosted cluster", func() {
				// Registered before the move: if the move fails half way,
				// the move back still tries to bring the objects home.
				DeferCleanup(s.moveBack, NodeTimeout(r.cleanupTimeout))
				clusterctl.Move(ctx, clusterctl.MoveInput{
					LogFolder:            r.bootstrapDir(),
					ClusterctlConfigPath: r.in.ClusterctlConfigPath,
					FromKubeconfigPath:   bootstrap.GetKubeconfigPath(),
					ToKubeconfigPath:     s.proxy.GetKubeconfigPath(),
					Namespace:            r.namespace,
				})
				r.mgmt = s.proxy
				s.moved = true
			})

			r.step("wait for the moved cluster to be reconciled", func() {
				wc := watchClient(s.proxy)
				key := client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}
				err := r.wait(wc, "wait-cluster", "the moved Cluster "+r.clusterName+" reconciled", &clusterv1.ClusterList{}).Until(ctx, func(ctx context.Context) (bool, string) {
					c := &clusterv1.Cluster{}
					if err := wc.Get(ctx, key, c); err != nil {
						return false, err.Error()
					}
					return movedClusterReconciled(c)
				})
				Expect(err).ToNot(HaveOccurred())
			})

			r.step("check that no Machine is rolled out", func() {
				// The moved controllers enqueue every object when their
				// caches sync, so a rollout caused by the move (a template or
				// spec hash that differs after the round trip) makes the
				// KubeadmControlPlane or MachineDeployment create a Machine
				// or MachineSet within a reconcile or two of the step above.
				// The window (self-hosted/check-no-rollout, two minutes by
				// default) covers several such reconciles on a loaded CI
				// machine, polling every few seconds so a Machine that
				// appears and goes is still seen. Upstream sleeps three
				// minutes and looks once.
				timeout, poll := r.durations("check-no-rollout")
				Consistently(ctx, func() rolloutState {
					return s.rolloutState(ctx, s.proxy.GetClient())
				}).WithTimeout(timeout).WithPolling(poll).Should(Equal(before), "Machines or MachineSets changed after the move")
			})

			r.verifyClusterHealthy(ctx, s.proxy)
		})
}

// movedClusterReconciled reports whether the controllers that the Cluster
// was moved to have taken it over, and if not, what is still missing.
func movedClusterReconciled(c *clusterv1.Cluster) (bool, string) {
	if ptr.Deref(c.Spec.Paused, false) {
		return false, "Cluster is still paused"
	}
	// Unpausing bumped the generation: the moved controllers have
	// reconciled the Cluster once they caught up.
	if c.Status.ObservedGeneration != c.Generation {
		return false, fmt.Sprintf("the moved controllers have not reconciled the Cluster yet (observed generation %d of %d)", c.Status.ObservedGeneration, c.Generation)
	}
	if meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1.PausedCondition) {
		return false, "Cluster reports Paused"
	}
	for _, f := range c.GetManagedFields() {
		if f.Manager == "clusterctl" {
			return false, "clusterctl still owns fields of the moved Cluster"
		}
	}
	return true, ""
}

// selfHostedRun is the state of one self-hosted spec run.
type selfHostedRun struct {
	*run
	in    SelfHostedSpecInput
	proxy framework.ClusterProxy
	// watches carries the self-hosted cluster's event watch and controller
	// log streams, which outlive the It; dispose cancels them.
	watches       context.Context
	cancelWatches context.CancelFunc
	moved         bool
}

// rolloutState names a cluster's Machines and MachineSets. Names survive a
// move (UIDs do not), and a rollout always makes new ones.
type rolloutState struct {
	Machines    []string
	MachineSets []string
}

func (s *selfHostedRun) rolloutState(ctx context.Context, c client.Client) rolloutState {
	opts := []client.ListOption{client.InNamespace(s.namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: s.clusterName}}
	var st rolloutState
	machines := &clusterv1.MachineList{}
	Expect(c.List(ctx, machines, opts...)).To(Succeed())
	for _, m := range machines.Items {
		st.Machines = append(st.Machines, m.Name)
	}
	sets := &clusterv1.MachineSetList{}
	Expect(c.List(ctx, sets, opts...)).To(Succeed())
	for _, m := range sets.Items {
		st.MachineSets = append(st.MachineSets, m.Name)
	}
	slices.Sort(st.Machines)
	slices.Sort(st.MachineSets)
	return st
}

// preloadImages is DOCKER_PRELOAD_IMAGES extended with every image of the
// e2e config, as a YAML flow list.
func preloadImages(c *clusterctl.E2EConfig) string {
	names := make([]string, 0, len(c.Images))
	for _, i := range c.Images {
		names = append(names, i.Name)
	}
	return preloadWith(c.GetVariableOrEmpty(varDockerPreloadImages), names...)
}

// preloadWith is preload, a value of DOCKER_PRELOAD_IMAGES (a YAML flow
// list), extended with images.
func preloadWith(preload string, images ...string) string {
	var list []string
	if pre := strings.Trim(strings.TrimSpace(preload), "[]"); strings.TrimSpace(pre) != "" {
		for _, i := range strings.Split(pre, ",") {
			list = append(list, strings.TrimSpace(i))
		}
	}
	for _, i := range images {
		list = append(list, fmt.Sprintf("%q", i))
	}
	return "[" + strings.Join(list, ",") + "]"
}
