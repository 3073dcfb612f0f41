//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// The pull-request gate, as upstream's: the quick-start on a Cluster of a
// ClusterClass, with a MachineDeployment and a MachinePool.
var _ = Describe("When following the quick-start with ClusterClass", Label(specs.LabelPRBlocking, specs.LabelClusterClass), func() {
	specs.QuickStartSpec(func() specs.QuickStartSpecInput {
		return specs.QuickStartSpecInput{CommonInput: commonInput(), Flavor: ptr.To("topology")}
	})
})

var _ = Describe("When following the classic quick-start", func() {
	specs.QuickStartSpec(func() specs.QuickStartSpecInput {
		return specs.QuickStartSpecInput{CommonInput: commonInput()}
	})
})

// Upstream's quick-start topology-kcp-only: a Cluster of the ClusterClass
// with a control plane and no workers.
var _ = Describe("When following the quick-start with ClusterClass and a control plane only", Label(specs.LabelClusterClass), func() {
	specs.QuickStartSpec(func() specs.QuickStartSpecInput {
		return specs.QuickStartSpecInput{CommonInput: commonInput(), Flavor: ptr.To("topology-kcp-only"), WorkerMachineCount: ptr.To[int64](0)}
	})
})

// Upstream's quick-start ignition: every machine bootstrapped from an
// Ignition config; ours also checks that each was (specs.CheckIgnitionBootstrap).
var _ = Describe("When following the quick-start with Ignition", Label(specs.LabelIgnition), func() {
	specs.QuickStartSpec(func() specs.QuickStartSpecInput {
		in := commonInput()
		return specs.QuickStartSpecInput{
			CommonInput: in, Flavor: ptr.To("ignition"),
			PostMachinesProvisioned: specs.CheckIgnitionBootstrap(in.Runtime, "/opt/foo", "Howdy!"),
		}
	})
})

// Upstream's dual-stack quick-starts, IPv4 and IPv6 first, with its run of
// Kubernetes' [Feature:IPv6DualStack] e2e tests; ours also checks the
// cluster is dual-stack with real traffic (specs.CheckDualStack).
var _ = Describe("When following the quick-start with ClusterClass, dual-stack, IPv4 first", Label(specs.LabelClusterClass, specs.LabelIPv6), func() {
	specs.DualStackSpec(func() specs.DualStackSpecInput {
		return specs.DualStackSpecInput{
			CommonInput: commonInput(), Flavor: "topology-dualstack-ipv4-primary", Primary: corev1.IPv4Protocol,
		}
	})
})

var _ = Describe("When following the quick-start with ClusterClass, dual-stack, IPv6 first", Label(specs.LabelClusterClass, specs.LabelIPv6), func() {
	specs.DualStackSpec(func() specs.DualStackSpecInput {
		return specs.DualStackSpecInput{
			CommonInput: commonInput(), Flavor: "topology-dualstack-ipv6-primary", Primary: corev1.IPv6Protocol,
		}
	})
})

// Upstream's IPv6 quick-start (its ipv6 flavor); ours also checks the
// cluster is IPv6-only with real traffic (specs.CheckIPv6Only). Selecting
// it makes the suite's management cluster dual-stack.
var _ = Describe("When following the quick-start, IPv6-only", Label(specs.LabelIPv6), func() {
	specs.IPv6Spec(func() specs.IPv6SpecInput {
		return specs.IPv6SpecInput{CommonInput: commonInput()}
	})
})
