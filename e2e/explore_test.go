//go:build e2e

package e2e

import (
	"os"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// Explore mode (`make up`, `capd-e2e up`): the quick-start's cluster, kept
// running with the management cluster for a person to explore. The spec
// exists only when CAPD_E2E_KEEP names the environment to keep, so that no
// other selection of specs (an empty label filter included) leaves
// clusters behind. EXPLORE_FLAVOR (default "topology"),
// EXPLORE_CONTROL_PLANE_MACHINE_COUNT and EXPLORE_WORKER_MACHINE_COUNT
// (default 1) shape the cluster; DOCKER_CLOUD_PROVIDER turns the
// cloud-controller-manager off ("").
var _ = Describe("Explore: a management cluster and a workload cluster, kept running", Label(specs.LabelExplore), func() {
	if os.Getenv(suite.EnvKeep) == "" {
		return
	}
	specs.QuickStartSpec(func() specs.QuickStartSpecInput {
		in := specs.QuickStartSpecInput{CommonInput: commonInput(), Flavor: ptr.To("topology")}
		Expect(in.SkipCleanup).To(BeTrue(), "explore mode keeps its clusters: run it with SKIP_RESOURCE_CLEANUP=true (make up does)")
		if f, ok := os.LookupEnv("EXPLORE_FLAVOR"); ok {
			in.Flavor = ptr.To(f) // "" is the default template
		}
		in.ControlPlaneMachineCount = count("EXPLORE_CONTROL_PLANE_MACHINE_COUNT")
		in.WorkerMachineCount = count("EXPLORE_WORKER_MACHINE_COUNT")
		return in
	})
})

func count(name string) *int64 {
	v := os.Getenv(name)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	Expect(err).ToNot(HaveOccurred(), "%s=%q: want a number", name, v)
	Expect(n).To(BeNumerically(">=", 0), "%s=%q: want 0 or more", name, v)
	return &n
}
