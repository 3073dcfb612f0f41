//go:build e2e

package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Three quick-starts, each in its own namespace and cluster: with
// GINKGO_NODES=3 they run at once, one per Ginkgo process, on the one
// management cluster. scripts/bench-scale.sh (make bench-scale) runs one,
// then three at once, and compares their wall times. Labels "comparison"
// (a measurement: out of the default filter) and "scale".
var _ = Describe("Quick-starts at once", Label(specs.LabelComparison, specs.LabelScale), func() {
	for i := 1; i <= 3; i++ {
		Context(fmt.Sprintf("cluster %d of 3", i), func() {
			specs.QuickStartSpec(func() specs.QuickStartSpecInput {
				return specs.QuickStartSpecInput{CommonInput: commonInput()}
			})
		})
	}
})
