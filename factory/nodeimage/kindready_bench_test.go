//go:build images

package nodeimage_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// EnvBenchNodeImages names the node images BenchmarkIntegrationKindNodeReady
// compares (space-separated); by default the node image of
// KUBERNETES_VERSION alone.
const EnvBenchNodeImages = "CAPD_E2E_BENCH_NODE_IMAGES"

// BenchmarkIntegrationKindNodeReady creates a one-node kind cluster, as the
// suite's management cluster is, from each node image in turn (rounds
// interleaved, so every image sees the same machine), and measures how long
// kind's create took and when the node was Ready, both from the start of
// the create: the suite's providers are scheduled only then. Each cluster is
// deleted, and checked for leftovers, before the next. It reports the median
// of each per image (`<image>-ready-s`, `<image>-create-s`), and logs each
// round.
//
// Run it with `make bench-kind` (BENCH_N rounds, default 5).
func BenchmarkIntegrationKindNodeReady(b *testing.B) {
	cfg, rt := imageTest(b)
	images := strings.Fields(os.Getenv(EnvBenchNodeImages))
	if len(images) == 0 {
		images = []string{defaultKubernetes(b, cfg).NodeImage}
	}
	for _, img := range images {
		requireImage(b, rt, img)
	}
	timeout, _, err := cfg.Intervals(specName, "wait-nodes-ready")
	if err != nil {
		b.Fatal(err)
	}
	created, ready := map[string][]float64{}, map[string][]float64{}
	for i := 0; i < b.N; i++ {
		for _, img := range images {
			c, r := kindReadyRound(b, rt, img, timeout)
			b.Logf("round %d, %s: created in %.2f s, node Ready at %.2f s", i+1, img, c, r)
			created[img], ready[img] = append(created[img], c), append(ready[img], r)
		}
	}
	for _, img := range images {
		b.ReportMetric(median(ready[img]), img+"-ready-s")
		b.ReportMetric(median(created[img]), img+"-create-s")
	}
}

// kindReadyRound creates and deletes one cluster from img; it returns the
// seconds kind's create took and the seconds until the node was Ready.
func kindReadyRound(b *testing.B, rt runtime.Runtime, img string, timeout time.Duration) (created, ready float64) {
	b.Helper()
	start := time.Now()
	kc := createKindCluster(b, rt, "capd-e2e-bench-", img, nil)
	defer kc.delete()
	ctx := context.Background()
	err := pollUntil(ctx, timeout, 100*time.Millisecond, func() (bool, string) {
		nodes, err := kc.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(nodes.Items) == 1 && nodeReady(nodes.Items[0]), "node not Ready"
	})
	if err != nil {
		b.Fatalf("cluster %q from %s: %v", kc.name, img, err)
	}
	return kc.created.Seconds(), time.Since(start).Seconds()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
