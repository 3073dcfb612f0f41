//go:build images

package nodeimage_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/cluster"

	"github.com/capd-e2e/capd-e2e/framework/leak"
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
		version, err := cfg.Variable("KUBERNETES_VERSION")
		if err != nil {
			b.Fatal(err)
		}
		k, err := cfg.Build.KubernetesVersion(version)
		if err != nil {
			b.Fatal(err)
		}
		images = []string{k.NodeImage}
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
	name := "capd-e2e-bench-" + runtime.NewRunID()
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	provider := cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(testLogger{b}))
	defer func() {
		if err := provider.Delete(name, kubeconfig); err != nil {
			b.Errorf("delete cluster %q: %v", name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rep, err := leak.Check(ctx, rt, leak.Selector{Cluster: name})
		if err == nil {
			err = rep.Err()
		}
		if err != nil {
			b.Error(err)
		}
	}()
	start := time.Now()
	err := provider.Create(name, cluster.CreateWithNodeImage(img), cluster.CreateWithKubeconfigPath(kubeconfig),
		cluster.CreateWithDisplayUsage(false), cluster.CreateWithDisplaySalutation(false))
	if err != nil {
		b.Fatalf("create cluster %q from %s: %v", name, img, err)
	}
	created = time.Since(start).Seconds()
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	err = pollUntil(ctx, timeout, 100*time.Millisecond, func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(nodes.Items) == 1 && nodeReady(nodes.Items[0]), "node not Ready"
	})
	if err != nil {
		b.Fatalf("cluster %q from %s: %v", name, img, err)
	}
	return created, time.Since(start).Seconds()
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
