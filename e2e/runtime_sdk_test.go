//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's "When upgrading a workload cluster using ClusterClass with
// RuntimeSDK", on the topology flavor with Cluster API's test extension.
var _ = Describe("When upgrading a workload cluster using ClusterClass with the runtime SDK", Label(specs.LabelClusterClass), func() {
	specs.RuntimeSDKSpec(func() specs.RuntimeSDKSpecInput {
		return specs.RuntimeSDKSpecInput{CommonInput: commonInput()}
	})
})

// Upstream's "When performing chained upgrades for workload cluster using
// ClusterClass in a different NS with RuntimeSDK", on the topology flavor
// (the class in the cluster's namespace): from
// KUBERNETES_VERSION_CHAINED_UPGRADE_FROM to KUBERNETES_VERSION_UPGRADE_TO
// through KUBERNETES_VERSION_UPGRADE_FROM.
var _ = Describe("When performing a chained upgrade of a workload cluster using ClusterClass with the runtime SDK", Label(specs.LabelClusterClass), func() {
	specs.RuntimeSDKChainedUpgradeSpec(func() specs.RuntimeSDKChainedUpgradeSpecInput {
		return specs.RuntimeSDKChainedUpgradeSpecInput{RuntimeSDKSpecInput: specs.RuntimeSDKSpecInput{CommonInput: commonInput()}}
	})
})
