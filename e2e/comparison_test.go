//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

var _ = Describe("Upstream's quick-start on the same management cluster", Label(specs.LabelComparison), func() {
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

var _ = Describe("Log collection compared with upstream's DockerLogCollector", Label(specs.LabelComparison), func() {
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

func compareLogCollectors(ctx context.Context, mgmt framework.ClusterProxy, namespace, name string) {
	in := commonInput()
	dir := filepath.Join(in.ArtifactFolder, "comparison", "log-collectors", name)

	By("Collecting the 3 machines' logs with our collector")
	start := time.Now()
	ours := &capdlogs.Collector{Runtime: in.Runtime}
	Expect(ours.CollectCluster(ctx, name, filepath.Join(dir, "ours"))).To(Succeed())
	oursTime := time.Since(start)

	By("Collecting the same machines' logs with upstream's DockerLogCollector, as its ClusterProxy does")
	upstreamProxy := framework.NewClusterProxy("comparison", mgmt.GetKubeconfigPath(), mgmt.GetScheme(),
		framework.WithMachineLogCollector(framework.DockerLogCollector{}))
	defer upstreamProxy.Dispose(ctx)
	start = time.Now()
	upstreamProxy.CollectWorkloadClusterLogs(ctx, namespace, name, filepath.Join(dir, "upstream"))
	upstreamTime := time.Since(start)

	oursFiles, oursBytes := tree(filepath.Join(dir, "ours"))
	upFiles, upBytes := tree(filepath.Join(dir, "upstream"))
	report := fmt.Sprintf("collector  wall_time  files  bytes\nours       %9s  %5d  %d\nupstream   %9s  %5d  %d\n\nfiles (ours):\n  %s\n\nfiles (upstream):\n  %s\n",
		oursTime.Round(time.Millisecond), len(oursFiles), oursBytes, upstreamTime.Round(time.Millisecond), len(upFiles), upBytes,
		strings.Join(oursFiles, "\n  "), strings.Join(upFiles, "\n  "))
	Expect(os.WriteFile(filepath.Join(dir, "comparison.txt"), []byte(report), 0o644)).To(Succeed())
	fmt.Fprintln(GinkgoWriter, report)
	Expect(oursFiles).ToNot(BeEmpty())
	Expect(upFiles).ToNot(BeEmpty())
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
