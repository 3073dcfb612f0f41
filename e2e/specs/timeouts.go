package specs

import (
	"fmt"
	"slices"
	"time"

	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/config/upstream"
	"github.com/capd-e2e/capd-e2e/framework/logs"
)

// A spec's timeouts are the sums of its waits. Ginkgo needs a SpecTimeout
// when the spec tree is built, before any config is read, so the specs
// bound themselves instead: each input's Timeout, if unset the sum of the
// spec's waits at the config's intervals (begin). Each wait is bounded by
// its own interval already, so the sum is reached only when something does
// not bound itself; it is the backstop, not a budget.
//
// specWaits lists every wait a spec makes, in the order it makes them, one
// entry per wait (a key waited on twice is listed twice). timeouts_test.go
// checks it against the code: every wait the code makes is listed.

// creationWaits are createCluster's: apply the template, infrastructure
// provisioned, control plane initialised, control plane ready, workers,
// MachinePools (a cluster that has some), then the Cluster Available and
// every Machine Ready.
var creationWaits = []string{
	"wait-cluster", "wait-cluster",
	"wait-control-plane", "wait-control-plane",
	"wait-worker-nodes", "wait-machine-pool-nodes",
	"wait-cluster", "wait-cluster",
}

// healthWaits are verifyClusterHealthy's, which specs call again at their
// end: the Cluster Available, every Machine Ready.
var healthWaits = []string{"wait-cluster", "wait-cluster"}

// upgradeWaits are the upgrade specs' (upgradeCluster): the creation; the
// control plane's Machines (a topology's: wait-control-plane-upgrade),
// kube-proxy, CoreDNS and etcd; the MachineDeployment and the MachinePool
// of the default flavors (one per MachineDeployment or MachinePool: set
// Timeout for a flavor with more); every Node Ready at the new version;
// the cluster healthy.
var upgradeWaits = slices.Concat(creationWaits,
	[]string{"wait-machine-upgrade", "wait-machine-upgrade", "wait-machine-upgrade", "wait-machine-upgrade",
		"wait-control-plane-upgrade", "wait-machine-deployment-upgrade", "wait-machine-pool-upgrade", "wait-nodes-ready"},
	healthWaits)

var specWaits = map[string][]string{
	"quick-start": slices.Concat(creationWaits,
		// With a cloud-controller-manager: every Node initialised; the
		// LoadBalancer check (beside the machine waits): CoreDNS, an
		// address, a backend Node, the answer, the load balancer gone,
		// the Service gone, the backend pod gone.
		[]string{"wait-nodes-ready",
			"wait-load-balancer", "wait-load-balancer", "wait-worker-nodes",
			"wait-load-balancer", "wait-load-balancer", "wait-load-balancer", "wait-load-balancer"}),
	"k8s-upgrade": upgradeWaits,
	"machine-pool": slices.Concat(creationWaits,
		// Each scaling step (3, 1, 0 by default: set Timeout for more).
		[]string{"wait-machine-pool-nodes", "wait-machine-pool-nodes", "wait-machine-pool-nodes"},
		healthWaits),
	specMDRollout: slices.Concat(
		// Creating its cluster; on an existing one, its health checked
		// first instead (fewer waits).
		creationWaits,
		// The new Machines with Nodes, the old MachineSets gone, the old
		// Nodes and containers gone; with a cloud-controller-manager,
		// every Node initialised.
		[]string{"wait-machine-rollout", "wait-machine-rollout", "wait-machine-rollout", "wait-nodes-ready"},
		healthWaits),
	"md-remediation":  remediationWaits,
	"kcp-remediation": remediationWaits,
	"k8s-upgrade-with-runtimesdk": slices.Concat(
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
	specClusterctlUpgrade: slices.Concat(
		// The management cluster's cert-manager substitute Available,
		// clusterctl init.
		[]string{"wait-controllers", "wait-controllers"}, creationWaits,
		// clusterctl upgrade, the CRDs migrated, the window without a
		// rollout, the MachineDeployment scaled to 2 and back to 1.
		[]string{"wait-controllers", "wait-crd-migration", "check-no-rollout", "wait-worker-nodes", "wait-worker-nodes"},
		healthWaits),
	// The cluster created with its test images, the suite's run, the
	// cluster still healthy.
	specK8sConformance: slices.Concat(creationWaits, []string{"wait-conformance"}, healthWaits),
	// The upgrade's waits (see specWaits["k8s-upgrade"]), the suite's
	// run, the cluster still healthy.
	specUpgradeConformance: slices.Concat(upgradeWaits, []string{"wait-conformance"}, healthWaits),
	"self-hosted": slices.Concat(creationWaits,
		// clusterctl init, every Machine with a Node, the moved Cluster
		// reconciled, the window without a rollout.
		[]string{"wait-controllers", "wait-worker-nodes", "wait-cluster", "check-no-rollout"},
		healthWaits),
}

// hookWaits are those of one blocking lifecycle hook (lifecycleHooks.pass):
// called and blocking, the window in which it must hold the Cluster, the
// Cluster gone on after it passed.
var hookWaits = []string{"wait-hook-called", "check-hook-blocks", "wait-hook-unblocked"}

// remediationWaits: the cloud-controller-manager's work on the broken
// Node, the Machine marked unhealthy, deleted, its Node deleted, its
// container gone, a new Machine with a Node, that Node Ready.
var remediationWaits = slices.Concat(creationWaits,
	slices.Repeat([]string{"wait-machine-remediation"}, 7),
	healthWaits)

// cleanupWaits are the waits of a spec's cleanup nodes; for the
// self-hosted spec the move back, a cleanup node of its own, adds its
// waits (every Machine with a Node, the Cluster reconciled).
var cleanupWaits = map[string][]string{
	"":            {"wait-delete-cluster"},
	"self-hosted": {"wait-delete-cluster", "wait-worker-nodes", "wait-cluster"},
	// BeforeClusterDelete, while the Cluster is deleted.
	"k8s-upgrade-with-runtimesdk": slices.Concat([]string{"wait-delete-cluster"}, hookWaits),
}

// cleanupAllowance is the part of a cleanup with no interval of its own:
// clusterctl describe, the resource dumps, the namespace's deletion and
// the leak check (seconds each, normally).
const cleanupAllowance = 5 * time.Minute

// defaultTimeout is the sum of spec's waits at e's intervals.
func defaultTimeout(e *clusterctl.E2EConfig, spec string) (time.Duration, error) {
	waits, ok := specWaits[spec]
	if !ok {
		return 0, fmt.Errorf("no waits listed for spec %q", spec)
	}
	return sumWaits(e, spec, waits)
}

// defaultCleanupTimeout bounds each of a spec's cleanup nodes: the log
// collection twice (the cluster's machines, then those that start while it
// is deleted; logs.DefaultTimeout each), the cleanup's waits and
// cleanupAllowance.
func defaultCleanupTimeout(e *clusterctl.E2EConfig, spec string) (time.Duration, error) {
	waits, ok := cleanupWaits[spec]
	if !ok {
		waits = cleanupWaits[""]
	}
	sum, err := sumWaits(e, spec, waits)
	return sum + 2*logs.DefaultTimeout + cleanupAllowance, err
}

func sumWaits(e *clusterctl.E2EConfig, spec string, keys []string) (time.Duration, error) {
	var sum time.Duration
	for _, k := range keys {
		timeout, _, err := upstream.Intervals(e, spec, k)
		if err != nil {
			return 0, err
		}
		sum += timeout
	}
	return sum, nil
}
