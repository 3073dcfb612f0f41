//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strconv"

	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// scaleClusters is how many quick-starts the scale Describe holds:
// SCALE_CLUSTERS, default 3. BenchmarkScale (bench/) raises it to find where
// this machine runs out.
func scaleClusters() int {
	v := os.Getenv("SCALE_CLUSTERS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 50 {
		// The spec tree is being built: there is no spec to fail yet, and
		// Ginkgo reports a panic here as the suite's failure, with this text.
		panic(fmt.Sprintf("SCALE_CLUSTERS=%q: want a whole number from 1 to 50 (how many quick-starts the scale specs run)", v))
	}
	return n
}

// Quick-starts, each in its own namespace and cluster (three unless
// SCALE_CLUSTERS says otherwise): with GINKGO_NODES at the same number they
// run at once, one per Ginkgo process, on the one management cluster.
// BenchmarkScale (make bench-scale) runs one, then three at once,
// and compares their wall times.
var _ = Describe("Quick-starts at once", Label(labelScale), func() {
	n := scaleClusters()
	for i := 1; i <= n; i++ {
		Context(fmt.Sprintf("cluster %d of %d", i, n), func() {
			specs.QuickStartSpec(func() specs.QuickStartSpecInput {
				return specs.QuickStartSpecInput{CommonInput: commonInput()}
			})
		})
	}
})
