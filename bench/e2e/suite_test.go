//go:build e2e

// Package e2e measures the harness: its specs against upstream's on one
// management cluster, its log collector against upstream's, and quick-starts
// at once. It is a suite of its own, with its own labels ("comparison",
// "scale"), apart from capd-e2e's product suite (e2e/) and the specs'
// label vocabulary. `make bench-e2e` and `make bench-scale` run it
// (BenchmarkE2E, BenchmarkScale in bench/); the numbers go to
// docs/performance.md.
package e2e

import (
	"flag"
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// Labels of this suite's Describes.
const (
	// labelComparison marks the measurements of this harness against
	// upstream's (sigs.k8s.io/cluster-api/test) on the same cluster.
	labelComparison = "comparison"
	// labelScale marks the quick-starts run at once (GINKGO_NODES > 1).
	labelScale = "scale"
)

var e2eSuite = suite.New(flag.CommandLine, suite.Options{DefaultConfig: "../../config/e2e.yaml", Requirements: specs.Requirements})

func TestBench(t *testing.T) { e2eSuite.Run(t, "capd-e2e-bench") }

var _ = e2eSuite.RegisterSetupAndTeardown()

func commonInput() specs.CommonInput { return specs.CommonInputFrom(e2eSuite.Environment()) }

// Our quick-start on the same management cluster as upstream's, for the
// comparison's table.
var _ = Describe("Our quick-start", func() {
	specs.QuickStartSpec(func() specs.QuickStartSpecInput {
		return specs.QuickStartSpecInput{CommonInput: commonInput()}
	})
})
