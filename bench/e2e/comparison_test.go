//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	capie2e "sigs.k8s.io/cluster-api/test/e2e"
	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
	capdlogs "github.com/capd-e2e/capd-e2e/framework/logs"
)

// Measurements of this harness against upstream's, on the same management
// cluster and config. They assert only that both sides did their job; the
// numbers go to the artifacts folder (comparison/) and the Ginkgo log.

var _ = Describe("Upstream's quick-start on the same management cluster", Label(labelComparison), func() {
	capie2e.QuickStartSpec(context.Background(), func() capie2e.QuickStartSpecInput {
		in := commonInput()
		return capie2e.QuickStartSpecInput{
			E2EConfig:             in.E2EConfig,
			ClusterctlConfigPath:  in.ClusterctlConfigPath,
			BootstrapClusterProxy: in.BootstrapClusterProxy,
			ArtifactFolder:        filepath.Join(in.ArtifactFolder, "comparison", "upstream-quick-start"),
			SkipCleanup:           in.SkipCleanup,
		}
	})
})

var _ = Describe("Log collection compared with upstream's DockerLogCollector", Label(labelComparison), func() {
	specs.QuickStartSpec(func() specs.QuickStartSpecInput {
		return specs.QuickStartSpecInput{
			CommonInput:              commonInput(),
			ControlPlaneMachineCount: ptr.To[int64](1),
			WorkerMachineCount:       ptr.To[int64](2),
			PostMachinesProvisioned: func(mgmt framework.ClusterProxy, namespace, name string) {
				compareLogCollectors(context.Background(), mgmt, namespace, name)
			},
		}
	})
})

// collectorRounds is how many times each collector runs; the report gives
// every time and the medians. The two alternate which goes first, so that
// neither always finds the other's page cache warm.
const collectorRounds = 5

func compareLogCollectors(ctx context.Context, mgmt framework.ClusterProxy, namespace, name string) {
	in := commonInput()
	dir := filepath.Join(in.ArtifactFolder, "comparison", "log-collectors", name)
	ours := &capdlogs.Collector{Runtime: in.Runtime}
	upstreamProxy := framework.NewClusterProxy("comparison", mgmt.GetKubeconfigPath(), mgmt.GetScheme(),
		framework.WithMachineLogCollector(framework.DockerLogCollector{}))
	defer upstreamProxy.Dispose(ctx)

	runOurs := func(out string) time.Duration {
		start := time.Now()
		Expect(ours.CollectCluster(ctx, name, out)).To(Succeed())
		return time.Since(start)
	}
	// As upstream's ClusterProxy does in its cleanup.
	runUpstream := func(out string) time.Duration {
		start := time.Now()
		upstreamProxy.CollectWorkloadClusterLogs(ctx, namespace, name, out)
		return time.Since(start)
	}
	var oursTimes, upTimes []time.Duration
	By(fmt.Sprintf("Collecting the machines' logs with our collector and upstream's DockerLogCollector, %d times each, alternating", collectorRounds))
	for i := range collectorRounds {
		o, u := filepath.Join(dir, fmt.Sprintf("ours-%d", i)), filepath.Join(dir, fmt.Sprintf("upstream-%d", i))
		if i%2 == 0 {
			oursTimes = append(oursTimes, runOurs(o))
			upTimes = append(upTimes, runUpstream(u))
		} else {
			upTimes = append(upTimes, runUpstream(u))
			oursTimes = append(oursTimes, runOurs(o))
		}
	}

	oursFiles, oursBytes := tree(filepath.Join(dir, "ours-0"))
	upFiles, upBytes := tree(filepath.Join(dir, "upstream-0"))
	oursMed, upMed := median(oursTimes), median(upTimes)
	report := fmt.Sprintf("collector  median  times  files  bytes (round 0)\nours       %6s  %s  %5d  %d\nupstream   %6s  %s  %5d  %d\nratio (upstream/ours, medians): %.2f\n\nfiles (ours):\n  %s\n\nfiles (upstream):\n  %s\n",
		oursMed.Round(time.Millisecond), roundAll(oursTimes), len(oursFiles), oursBytes,
		upMed.Round(time.Millisecond), roundAll(upTimes), len(upFiles), upBytes,
		float64(upMed)/float64(oursMed),
		strings.Join(oursFiles, "\n  "), strings.Join(upFiles, "\n  "))
	Expect(os.WriteFile(filepath.Join(dir, "comparison.txt"), []byte(report), 0o644)).To(Succeed())
	fmt.Fprintln(GinkgoWriter, report)
	Expect(oursFiles).ToNot(BeEmpty())
	Expect(upFiles).ToNot(BeEmpty())
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func roundAll(d []time.Duration) string {
	out := make([]string, len(d))
	for i, v := range d {
		out[i] = v.Round(time.Millisecond).String()
	}
	return strings.Join(out, ",")
}

// tree lists the files under dir, relative to it, and their total size.
func tree(dir string) ([]string, int64) {
	var files []string
	var size int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, rel)
		if info, err := d.Info(); err == nil {
			size += info.Size()
		}
		return nil
	})
	return files, size
}
