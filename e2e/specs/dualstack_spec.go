package specs

import (
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// varKubetestDualStackConfiguration is the file of e2e.test flags of the
// dual-stack spec's run of Kubernetes' [Feature:IPv6DualStack] tests
// (upstream's quick-start reads ./data/kubetest/dualstack.yaml, a path
// fixed in its code; here it is a variable, data/kubetest/dualstack.yaml
// in config/e2e.yaml).
const varKubetestDualStackConfiguration = config.VarKubetestDualStackConfiguration

// specDualStack is the dual-stack spec's name, and its facts.
var specDualStack = declare(specFacts{
	name: "dual-stack", label: LabelDualStack,
	variables:   []string{varKubernetesVersion, varKubetestDualStackConfiguration},
	conformance: varKubernetesVersion,
	// The quick-start's cluster, with its dual-stack check (bounded by
	// dualStackCheckTimeout, not an interval); the e2e tests; the
	// cluster still healthy.
	waits: slices.Concat(quickStartWaits, []string{"wait-conformance"}, healthWaits),
	files: []string{"dualstack_spec.go", "quick_start.go", "cloud_provider.go", "conformance.go"},
})

// DualStackSpecInput is the input of DualStackSpec.
type DualStackSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of its waits at the
	// config's intervals, wait-conformance's included.
	Timeout time.Duration

	// Flavor is a dual-stack cluster template flavor whose first Service
	// and Pod ranges are of family Primary: capd-e2e's and upstream's
	// topology-dualstack-ipv4-primary and -ipv6-primary. Required.
	Flavor string

	// Primary is the family of the flavor's first ranges. If unset, IPv4.
	Primary corev1.IPFamily

	// ControlPlaneMachineCount and WorkerMachineCount are the machines of
	// the flavor's control plane and MachineDeployment. If unset, 1 each
	// (upstream's quick-start's; the ClusterClass's flavors add a
	// MachinePool's worker).
	ControlPlaneMachineCount *int64
	WorkerMachineCount       *int64

	// Conformance says how the e2e tests run. Its ConfigurationPath, if
	// unset, is the variable KUBETEST_DUALSTACK_CONFIGURATION (upstream's
	// dualstack.yaml: the [Feature:IPv6DualStack] tests but SCTP's).
	Conformance ConformanceInput
}

// DualStackSpec is upstream's dual-stack quick-start: it creates a
// dual-stack cluster from Flavor with the quick-start's checks (with a
// CloudControllerManager: every Node initialised, a Service of type
// LoadBalancer answering), checks that the cluster is dual-stack with
// real traffic in both families (CheckDualStack), then runs Kubernetes'
// [Feature:IPv6DualStack] e2e tests of KUBERNETES_VERSION against it, as
// upstream's quick-start does with kubetest: here the conformance image
// of that version, in a container of the engine, the machines pulling
// the e2e test images from a mirror of the engine's images (not preloaded
// as for conformance: these tests use agnhost alone; docs/ipv6.md).
// Then it checks the cluster is still Available with every Machine Ready,
// and deletes it.
//
// Spec name: "dual-stack" (upstream's run as "quick-start"). Variables:
// KUBERNETES_VERSION, KUBETEST_DUALSTACK_CONFIGURATION,
// KUBETEST_GINKGO_NODES (optional). Intervals: the quick-start's, and
// wait-conformance for the e2e tests.
func DualStackSpec(inputGetter func() DualStackSpecInput) {
	It("creates a dual-stack workload cluster that passes Kubernetes' dual-stack e2e tests, and deletes it without leftovers",
		Label(LabelQuickStart, LabelIPv6, LabelDualStack),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := begin(specCtx, specDualStack, in.CommonInput, in.Timeout)
			r.step("check the dual-stack input", func() {
				Expect(in.Flavor).ToNot(BeEmpty(), "%s: Flavor is required (a dual-stack flavor, e.g. topology-dualstack-ipv4-primary)", r.spec)
				if in.Primary == "" {
					in.Primary = corev1.IPv4Protocol
				}
				Expect(in.Primary).To(BeElementOf(corev1.IPv4Protocol, corev1.IPv6Protocol), "%s: Primary", r.spec)
				if in.Conformance.ConfigurationPath == "" {
					in.Conformance.ConfigurationPath = r.variable(varKubetestDualStackConfiguration)
				}
			})
			version := r.variable(varKubernetesVersion)
			res := r.createQuickStartCluster(ctx, createOptions{
				flavor:                  in.Flavor,
				kubernetesVersion:       version,
				controlPlaneCount:       deref(in.ControlPlaneMachineCount, 1),
				workerCount:             deref(in.WorkerMachineCount, 1),
				postMachinesProvisioned: CheckDualStack(r.in.Runtime, in.Primary),
			})
			r.runConformance(ctx, in.Conformance, version, int(res.ExpectedWorkerNodes()))
			r.verifyClusterHealthy(ctx, r.in.BootstrapClusterProxy)
		})
}
