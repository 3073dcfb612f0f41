//go:build e2e

package providere2e

import (
	"flag"
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// The suite: upstream's flags (-e2e.config, -e2e.artifacts-folder, ...),
// a kind management cluster named after config/e2e.yaml's
// managementClusterName, the provider's images loaded, cert-manager,
// clusterctl init with the provider, and teardown without leftovers.
var e2eSuite = suite.New(flag.CommandLine, suite.Options{
	DefaultConfig: "config/e2e.yaml",
	// What the specs need of the config, checked before setup creates
	// anything.
	Requirements: specs.Requirements,
})

func TestE2E(t *testing.T) { e2eSuite.Run(t, "my-provider-e2e") }

var _ = e2eSuite.RegisterSetupAndTeardown()

var _ = Describe("My provider", func() {
	// PR-Blocking is the suite's to give: a spec carries only the label of
	// what it is.
	Context("on every pull request", Label(specs.LabelPRBlocking), func() {
		specs.QuickStartSpec(func() specs.QuickStartSpecInput {
			return specs.QuickStartSpecInput{CommonInput: specs.CommonInputFrom(e2eSuite.Environment())}
		})
	})

	specs.MachineHealthCheckSpec(func() specs.MachineHealthCheckSpecInput {
		return specs.MachineHealthCheckSpecInput{CommonInput: specs.CommonInputFrom(e2eSuite.Environment()), Mode: specs.WorkerRemediation}
	})
})
