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
// Each spec lists its waits in its declaration (specFacts.waits, in the
// spec's file), built of the shared lists below. timeouts_test.go checks
// them against the code: every wait the code makes is listed.

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
// control plane's rollout followed from a watch (watchControlPlaneRollout);
// the control plane's Machines (a topology's: wait-control-plane-upgrade),
// kube-proxy, CoreDNS and etcd; the MachineDeployment and the MachinePool
// of the default flavors (one per MachineDeployment or MachinePool: set
// Timeout for a flavor with more); every Node Ready at the new version;
// the cluster healthy.
var upgradeWaits = slices.Concat(creationWaits,
	[]string{"wait-machine-upgrade", "wait-machine-upgrade", "wait-machine-upgrade", "wait-machine-upgrade", "wait-machine-upgrade",
		"wait-control-plane-upgrade", "wait-machine-deployment-upgrade", "wait-machine-pool-upgrade", "wait-nodes-ready"},
	healthWaits)

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

// cleanupAllowance is the part of a cleanup with no interval of its own:
// clusterctl describe, the resource dumps, the namespace's deletion and
// the leak check (seconds each, normally).
const cleanupAllowance = 5 * time.Minute

// defaultTimeout is the sum of spec's waits at e's intervals.
func defaultTimeout(e *clusterctl.E2EConfig, spec string) (time.Duration, error) {
	f, ok := declared[spec]
	if !ok {
		return 0, fmt.Errorf("spec %q is not declared (declare, facts.go)", spec)
	}
	return sumWaits(e, spec, f.waits)
}

// defaultCleanupTimeout bounds each of a spec's cleanup nodes: the log
// collection twice (the cluster's machines, then those that start while it
// is deleted; logs.DefaultTimeout each), the cleanup's waits and
// cleanupAllowance.
func defaultCleanupTimeout(e *clusterctl.E2EConfig, spec string) (time.Duration, error) {
	f, ok := declared[spec]
	if !ok {
		return 0, fmt.Errorf("spec %q is not declared (declare, facts.go)", spec)
	}
	sum, err := sumWaits(e, spec, f.cleanupWaitsOf())
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
