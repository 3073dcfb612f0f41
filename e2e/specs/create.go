package specs

import (
	"context"
	"fmt"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

// createOptions says how to create a spec's cluster.
type createOptions struct {
	flavor                  string
	kubernetesVersion       string
	controlPlaneCount       int64
	workerCount             int64
	variables               map[string]string
	waiters                 clusterctl.ControlPlaneWaiters
	postMachinesProvisioned func(managementClusterProxy framework.ClusterProxy, namespace, clusterName string)
	// controlPlaneInitialized, if set, is called once the control plane is
	// initialized, before the spec waits for it to be ready.
	controlPlaneInitialized func()
	// applied, if set, is called once the template is applied, before the
	// spec waits for the cluster's infrastructure.
	applied func()
	// skipOwnership leaves out the check of owner references and
	// finalizers after the creation: for objects made by providers of
	// another release than upstream's assertions describe. The cleanup
	// still checks them before the deletion.
	skipOwnership bool
}

// createCluster renders the template with clusterctl, applies it and waits
// for the cluster, phase by phase (each timed in the summary): the
// infrastructure, the control plane initialised, then ready, the worker
// machines; then it checks the Cluster is Available and every Machine
// Ready. It is upstream's ApplyClusterTemplateAndWait split into phases.
func (r *run) createCluster(ctx context.Context, o createOptions) *clusterctl.ApplyClusterTemplateAndWaitResult {
	proxy := r.in.BootstrapClusterProxy
	yaml := r.generateTemplate(ctx, o)

	res := &clusterctl.ApplyClusterTemplateAndWaitResult{}
	applyIn := clusterctl.ApplyCustomClusterTemplateAndWaitInput{
		ClusterProxy:       proxy,
		CustomTemplateYAML: yaml,
		ClusterName:        r.clusterName,
		Namespace:          r.namespace,
		Flavor:             o.flavor,
		// For the ControlPlaneWaiters, which replace the control plane's
		// waits below: not waits of their own.
		WaitForClusterIntervals:      r.intervals("wait-cluster"),       // replaces a wait
		WaitForControlPlaneIntervals: r.intervals("wait-control-plane"), // replaces a wait
		WaitForMachineDeployments:    r.intervals("wait-worker-nodes"),  // replaces a wait
		ControlPlaneWaiters:          o.waiters,
	}
	r.trackCluster(ctx)
	r.step("apply cluster template", func() {
		// Retried so that a webhook that is briefly unavailable does not
		// fail the spec; a template that cannot be created is caught by
		// data/templates_test.go long before.
		timeout, poll := r.durations("wait-cluster")
		Expect(proxy.Create(ctx, yaml, framework.CreateWithPolling(timeout, poll))).To(Succeed(), "apply the cluster template")
	})
	if r.in.CloudControllerManager != nil {
		r.installCloudControllerManager(ctx)
	}
	if o.applied != nil {
		o.applied()
	}
	wc := watchClient(proxy)
	r.step("wait for cluster infrastructure", func() {
		res.Cluster = r.waitForClusterProvisioned(ctx, wc)
	})
	r.step("wait for control plane initialized", func() {
		if o.waiters.WaitForControlPlaneInitialized != nil {
			o.waiters.WaitForControlPlaneInitialized(ctx, applyIn, (*clusterctl.ApplyCustomClusterTemplateAndWaitResult)(res))
			return
		}
		res.ControlPlane = r.waitForControlPlaneInitialized(ctx, wc)
	})
	if o.controlPlaneInitialized != nil {
		o.controlPlaneInitialized()
	}
	r.step("wait for control plane ready", func() {
		if o.waiters.WaitForControlPlaneMachinesReady != nil {
			o.waiters.WaitForControlPlaneMachinesReady(ctx, applyIn, (*clusterctl.ApplyCustomClusterTemplateAndWaitResult)(res))
			return
		}
		r.waitForControlPlaneReady(ctx, wc)
	})
	r.step("wait for worker machines", func() {
		res.MachineDeployments = r.waitForWorkers(ctx, wc, res.Cluster)
	})
	if n := r.machinePools(ctx, wc, res.Cluster); n > 0 {
		r.step("wait for machine pool nodes", func() {
			res.MachinePools = r.waitForMachinePools(ctx, wc, n)
		})
	}
	if o.postMachinesProvisioned != nil {
		r.step("post machines provisioned hook", func() {
			o.postMachinesProvisioned(proxy, r.namespace, r.clusterName)
		})
	}
	r.verifyClusterHealthy(ctx, proxy)
	r.topology = res.Cluster.Spec.Topology.IsDefined()
	r.summary.Set("machines", fmt.Sprintf("%d control plane, %d workers", res.ExpectedTotalNodes()-res.ExpectedWorkerNodes(), res.ExpectedWorkerNodes()))
	r.summary.Set("node images", r.nodeImages(ctx, proxy.GetClient()))
	if !o.skipOwnership {
		r.step("check owner references and finalizers", func() {
			r.checkOwnership(ctx, proxy, r.topology)
		})
	}
	r.created = true
	return res
}

// trackCluster records the spec's cluster with the input's Tracker, if
// any, before any of its objects exist.
func (r *run) trackCluster(ctx context.Context) {
	if r.in.Tracker != nil {
		r.step("track cluster", func() {
			Expect(r.in.Tracker.Track(ctx, r.clusterName)).To(Succeed())
		})
	}
}

// generateTemplate renders the cluster template of o's flavor with
// clusterctl, with the input's and o's variables, and records the flavor,
// version and machines asked for in the summary.
func (r *run) generateTemplate(ctx context.Context, o createOptions) []byte {
	infra := clusterctl.DefaultInfrastructureProvider
	if r.in.InfrastructureProvider != nil {
		infra = *r.in.InfrastructureProvider
	}
	vars := map[string]string{}
	for k, v := range r.in.ClusterctlVariables {
		vars[k] = v
	}
	for k, v := range o.variables {
		vars[k] = v
	}
	r.summary.Set("flavor", flavorName(o.flavor))
	r.summary.Set("kubernetes version", o.kubernetesVersion)
	r.summary.Set("machines", fmt.Sprintf("%d control plane, %d workers requested", o.controlPlaneCount, o.workerCount))

	var yaml []byte
	r.step("generate cluster template", func() {
		yaml = clusterctl.ConfigCluster(ctx, clusterctl.ConfigClusterInput{
			LogFolder:                r.bootstrapDir(),
			ClusterctlConfigPath:     r.in.ClusterctlConfigPath,
			KubeconfigPath:           r.in.BootstrapClusterProxy.GetKubeconfigPath(),
			InfrastructureProvider:   infra,
			Flavor:                   o.flavor,
			Namespace:                r.namespace,
			ClusterName:              r.clusterName,
			KubernetesVersion:        o.kubernetesVersion,
			ControlPlaneMachineCount: &o.controlPlaneCount,
			WorkerMachineCount:       &o.workerCount,
			ClusterctlVariables:      vars,
		})
	})
	return yaml
}

// machinePools returns how many MachinePools the cluster has: its
// topology's, or those of the template, which exist once it is applied.
func (r *run) machinePools(ctx context.Context, c client.Reader, cluster *clusterv1.Cluster) int {
	if cluster != nil && cluster.Spec.Topology.IsDefined() {
		return len(cluster.Spec.Topology.Workers.MachinePools)
	}
	list := &clusterv1.MachinePoolList{}
	Expect(c.List(ctx, list, client.InNamespace(r.namespace), r.clusterLabels())).To(Succeed())
	return len(list.Items)
}

// verifyClusterHealthy checks the Cluster's Available condition and every
// Machine's Ready condition, as seen through proxy (see
// waitForClusterHealthy).
func (r *run) verifyClusterHealthy(ctx context.Context, proxy framework.ClusterProxy) {
	r.step("verify cluster available and machines ready", func() {
		r.waitForClusterHealthy(ctx, watchClient(proxy))
	})
}

func flavorName(f string) string {
	if f == "" {
		return "(default)"
	}
	return f
}

// templateIfExists returns name when an infrastructure template of the
// same group and kind as ref exists under that name in the spec's
// namespace, and nil otherwise.
func (r *run) templateIfExists(ctx context.Context, ref clusterv1.ContractVersionedObjectReference, name string) *string {
	c := r.mgmt.GetClient()
	mapping, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	Expect(err).ToNot(HaveOccurred(), "map %s.%s to a version", ref.Kind, ref.APIGroup)
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	err = c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).ToNot(HaveOccurred(), "get %s %s/%s", ref.Kind, r.namespace, name)
	return &name
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
