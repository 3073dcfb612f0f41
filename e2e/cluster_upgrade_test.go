//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	"k8s.io/utils/ptr"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

var _ = Describe("When upgrading a cluster's Kubernetes version", func() {
	specs.ClusterUpgradeSpec(func() specs.ClusterUpgradeSpecInput {
		return specs.ClusterUpgradeSpecInput{CommonInput: commonInput()}
	})
})

// Through spec.topology.version: one MachineDeployment machine and one
// MachinePool instance besides the control plane, which keeps the rolling
// upgrade within what a 2-core machine runs at once.
var _ = Describe("When upgrading a ClusterClass cluster's Kubernetes version", Label(specs.LabelClusterClass), func() {
	specs.ClusterUpgradeSpec(func() specs.ClusterUpgradeSpecInput {
		return specs.ClusterUpgradeSpecInput{CommonInput: commonInput(), Flavor: ptr.To("topology"), WorkerMachineCount: ptr.To[int64](1)}
	})
})

// The upgrade, then Kubernetes' conformance suite at the new version: on a
// ClusterClass cluster, as upstream's conformance upgrade job, and on one
// without. Serial, as every conformance spec of this suite: with
// GINKGO_NODES=2 it runs after the other specs, alone, as a 2-core
// machine needs (docs/reliability.md).
var _ = Describe("When upgrading a ClusterClass cluster and testing Kubernetes conformance", Serial, Label(specs.LabelClusterClass), func() {
	specs.ClusterUpgradeConformanceSpec(func() specs.ClusterUpgradeConformanceSpecInput {
		return specs.ClusterUpgradeConformanceSpecInput{ClusterUpgradeSpecInput: specs.ClusterUpgradeSpecInput{
			CommonInput: commonInput(), Flavor: ptr.To("topology"), WorkerMachineCount: ptr.To[int64](1)}}
	})
})

var _ = Describe("When upgrading a cluster and testing Kubernetes conformance", Serial, func() {
	specs.ClusterUpgradeConformanceSpec(func() specs.ClusterUpgradeConformanceSpecInput {
		return specs.ClusterUpgradeConformanceSpecInput{ClusterUpgradeSpecInput: specs.ClusterUpgradeSpecInput{CommonInput: commonInput()}}
	})
})

// Upstream's HA upgrades: three control-plane machines, rolled out one at a
// time with a pre-drain hook the spec releases only while the cluster is
// healthy (kcp-pre-drain), or by deleting a Machine before creating its
// replacement (kcp-scale-in).
var _ = Describe("When upgrading a ClusterClass cluster with a HA control plane", Label(specs.LabelClusterClass), func() {
	specs.ClusterUpgradeSpec(func() specs.ClusterUpgradeSpecInput {
		return specs.ClusterUpgradeSpecInput{CommonInput: commonInput(), Flavor: ptr.To("kcp-pre-drain"),
			ControlPlaneMachineCount: ptr.To[int64](3), WorkerMachineCount: ptr.To[int64](1),
			ControlPlanePreDrainHook: "pre-drain.delete.hook.machine.cluster.x-k8s.io/kcp-ready-check"}
	})
})

var _ = Describe("When upgrading a ClusterClass cluster with a HA control plane by scaling in", Label(specs.LabelClusterClass), func() {
	specs.ClusterUpgradeSpec(func() specs.ClusterUpgradeSpecInput {
		return specs.ClusterUpgradeSpecInput{CommonInput: commonInput(), Flavor: ptr.To("kcp-scale-in"),
			ControlPlaneMachineCount: ptr.To[int64](3), WorkerMachineCount: ptr.To[int64](1)}
	})
})
