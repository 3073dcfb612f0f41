package specs

import (
	"slices"

	"time"

	. "github.com/onsi/ginkgo/v2"
)

// specK8sConformance is the conformance spec's name (upstream's), and its
// facts.
var specK8sConformance = declare(specFacts{
	name: "k8s-conformance", label: LabelK8sInstall,
	variables:   []string{varKubernetesVersion, varKubetestConfiguration},
	conformance: varKubernetesVersion,
	// The cluster created with its test images, the suite's run, the
	// cluster still healthy.
	waits: slices.Concat(creationWaits, []string{"wait-conformance"}, healthWaits),
	files: []string{"k8s_conformance.go", "conformance.go", "kubetest.go"},
})

// K8SConformanceSpecInput is the input of K8SConformanceSpec.
type K8SConformanceSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of its waits at the
	// config's intervals, wait-conformance's included.
	Timeout time.Duration

	// Flavor is the cluster template flavor. If unset, the default
	// template.
	Flavor *string

	// ControlPlaneMachineCount is the number of control-plane machines. If
	// unset, 1.
	ControlPlaneMachineCount *int64

	// WorkerMachineCount is the number of worker machines, which the
	// conformance tests schedule on. If unset, 2: upstream's 5 do not fit
	// a 2-core machine, and the tests that spread pods need two.
	WorkerMachineCount *int64

	// Conformance says how the suite runs.
	Conformance ConformanceInput
}

// K8SConformanceSpec creates a cluster at KUBERNETES_VERSION with the
// conformance suite's e2e test images preloaded into its machines, runs
// Kubernetes' conformance suite of that version against it (the
// KUBETEST_CONFIGURATION file's tests), then checks the cluster is still
// Available with every Machine Ready. Upstream's K8SConformanceSpec.
//
// Spec name: "k8s-conformance". Variables: KUBERNETES_VERSION,
// KUBETEST_CONFIGURATION, KUBETEST_GINKGO_NODES (optional). Intervals:
// the creation's, and wait-conformance for the suite's run.
func K8SConformanceSpec(inputGetter func() K8SConformanceSpecInput) {
	It("passes Kubernetes' conformance tests on a new cluster", Label(LabelConformance, LabelK8sInstall, LabelSlow),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := begin(specCtx, specK8sConformance, in.CommonInput, in.Timeout)
			version := r.variable(varKubernetesVersion)
			workers := deref(in.WorkerMachineCount, 2)
			res := r.createCluster(ctx, createOptions{
				flavor:            deref(in.Flavor, ""),
				kubernetesVersion: version,
				controlPlaneCount: deref(in.ControlPlaneMachineCount, 1),
				workerCount:       workers,
				variables:         map[string]string{varDockerPreloadImages: r.testImages(version)},
			})
			r.runConformance(ctx, r.withKubetestConfiguration(in.Conformance), version, int(res.ExpectedWorkerNodes()))
			r.verifyClusterHealthy(ctx, r.in.BootstrapClusterProxy)
		})
}
